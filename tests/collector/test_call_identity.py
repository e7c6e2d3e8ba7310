"""The call identity rule of `llm_calls` (docs/collector.md, *llm_calls*), on cases built to break it.

Spans are decoded and written exactly as the collector does (`land_request`: the real decoder, dialect
mappers, redaction and segment writer, in-process), read back through the real views. Each case holds spans
of at least two instrumentations, so the rule runs (a lake of one instrumentation never merges anything).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collector import lake
from collector.views import open_scoped, view_statements
from tests.collector import dialect_payloads as payloads
from tests.collector.conftest import land_request
from verdict.tenancy import TenantId, validate_tenant_id

T0 = payloads.T0
SECOND = 1_000_000_000
V2 = "opentelemetry.instrumentation.openai_v2"
OPENLLMETRY = "opentelemetry.instrumentation.openai.v1"


@dataclass(frozen=True)
class Call:
    """One model call as the provider saw it."""

    n: int
    start: int
    end: int
    response_id: str | None
    model: str = "gpt-4o-mini"
    service: str = "support-bot"
    tokens: tuple[int, int] = (41, 17)

    @property
    def question(self) -> str:
        return f"question number {self.n}: where is order {self.n}?"

    @property
    def answer(self) -> str:
        return f"answer number {self.n}"


def v2_span(call: Call, trace: int, span: int, content: bool = True) -> payloads.SpanSpec:
    """openai-v2: semconv attributes, the response id, the dated response model."""
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": call.model,
             "gen_ai.response.model": f"{call.model}-2024-07-18", "gen_ai.usage.input_tokens": call.tokens[0],
             "gen_ai.usage.output_tokens": call.tokens[1]}
    if call.response_id is not None:
        attrs["gen_ai.response.id"] = call.response_id
    if content:
        attrs["gen_ai.input.messages"] = json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": call.question}]}])
        attrs["gen_ai.output.messages"] = json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": call.answer}], "finish_reason": "stop"}])
    return payloads.SpanSpec(V2, f"chat {call.model}", attrs, trace=trace, span=span, start=call.start, end=call.end)


def openllmetry_span(call: Call, trace: int, span: int, *, with_id: bool = True, scope: str = OPENLLMETRY,
                     provider: str = "OpenAI", tokens: tuple[int, int] | None = None) -> payloads.SpanSpec:
    """OpenLLMetry 0.40: indexed prompts and completions, usage in the older names."""
    tokens_in, tokens_out = tokens or call.tokens
    attrs = {"llm.request.type": "chat", "gen_ai.system": provider, "gen_ai.request.model": call.model,
             "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": payloads.SYSTEM,
             "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": call.question,
             "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": call.answer,
             "gen_ai.usage.prompt_tokens": tokens_in, "gen_ai.usage.completion_tokens": tokens_out}
    if with_id and call.response_id is not None:
        attrs["gen_ai.response.id"] = call.response_id
    return payloads.SpanSpec(scope, f"{provider.lower()}.chat", attrs, trace=trace, span=span,
                             start=call.start + 1000, end=call.end - 1000)


def openinference_span(call: Call, trace: int, span: int) -> payloads.SpanSpec:
    """OpenInference (e.g. its LangChain instrumentation): no response id; the model as the response named it."""
    attrs = {"openinference.span.kind": "LLM", "llm.provider": "openai", "llm.model_name": f"{call.model}-2024-07-18",
             "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": call.question,
             "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": call.answer,
             "llm.token_count.prompt": call.tokens[0], "llm.token_count.completion": call.tokens[1]}
    return payloads.SpanSpec("openinference.instrumentation.langchain", "ChatOpenAI", attrs, trace=trace, span=span,
                             start=call.start - 2000, end=call.end + 2000)


def land(tmp_path, tenant: str, specs: list[payloads.SpanSpec], service: str = "support-bot") -> None:
    resource = {**payloads.RESOURCE, "service.name": service}
    lake.prepare(tmp_path)
    land_request(tmp_path, payloads.trace_request(*specs, resource=resource), tenant)


ALL_CALLS = "SELECT * FROM llm_calls ORDER BY start_time, span_id"


def rows_of(con, query: str) -> list[dict]:
    cur = con.execute(query)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def calls(tmp_path, tenant: str) -> list[dict]:
    con = open_scoped(tmp_path, TenantId(validate_tenant_id(tenant)))
    try:
        return rows_of(con, ALL_CALLS)
    finally:
        con.close()


def questions(rows: list[dict]) -> list[int]:
    """The call number each row answers (from its question), sorted."""
    found = []
    for row in rows:
        text = " ".join(p["content"] for m in json.loads(row["input_messages"]) for p in m["parts"])
        found.append(int(text.split("question number ", 1)[1].split(":", 1)[0]))
    return sorted(found)


def overlapping(count: int, ids, in_flight: int = 8) -> list[Call]:
    """`count` calls of 2 s each, a new one every 2/in_flight s: `in_flight` calls overlap at any time."""
    step = 2 * SECOND // in_flight
    return [Call(i, T0 + i * step, T0 + i * step + 2 * SECOND, ids(i)) for i in range(count)]


def test_ollama_style_ids_keep_every_call(tmp_path):
    """Ollama answers `chatcmpl-<0..998>`: 300 calls, each described by openai-v2 and OpenLLMetry (two traces),
    with ids that repeat, ten overlapping calls sharing one: 300 rows, one per call, tokens counted once."""
    rng = random.Random(25)
    ids = [f"chatcmpl-{rng.randrange(999)}" for _ in range(300)]
    ids[:10] = ["chatcmpl-7"] * 10
    batch = overlapping(300, ids.__getitem__)
    land(tmp_path, "ollama", [s for c in batch for s in (v2_span(c, 2 * c.n + 1, 2 * c.n + 1),
                                                         openllmetry_span(c, 2 * c.n + 2, 2 * c.n + 2))])
    rows = calls(tmp_path, "ollama")
    assert questions(rows) == list(range(300))
    assert sum(r["input_tokens"] for r in rows) == 300 * 41


def test_a_constant_id_from_one_instrumentation_never_merges(tmp_path):
    """A mock that answers one id: 50 calls, overlapping, half without content; an unrelated instrumentation
    elsewhere in the lake switches the rule on."""
    batch = overlapping(50, lambda i: "chatcmpl-mock")
    specs = [v2_span(c, c.n + 1, c.n + 1, content=c.n % 2 == 0) for c in batch]
    other = Call(99, T0, T0 + SECOND, "msg_other", model="claude-sonnet-4")
    land(tmp_path, "constant", [*specs, openllmetry_span(other, 999, 999, provider="Anthropic")])
    rows = calls(tmp_path, "constant")
    assert len(rows) == 51
    assert sorted(r["span_id"] for r in rows if r["response_id"] == "chatcmpl-mock") == sorted(
        f"{c.n + 1:016x}" for c in batch)


def test_two_instrumentations_in_two_traces_without_a_shared_id_are_one_call(tmp_path):
    """OpenInference's LangChain span (no response id) and openai-v2's (with one), in separate traces, for two
    calls in flight together: two rows, openai-v2's (it names the id; both are complete)."""
    first, second = overlapping(2, lambda i: f"chatcmpl-{i}", in_flight=2)
    land(tmp_path, "twotraces", [openinference_span(first, 1, 1), v2_span(first, 2, 2),
                                 openinference_span(second, 3, 3), v2_span(second, 4, 4)])
    rows = calls(tmp_path, "twotraces")
    assert questions(rows) == [0, 1]
    assert sum(r["input_tokens"] for r in rows) == 2 * 41


def test_a_provider_sdk_span_wins_over_a_wrapper_without_a_shared_id(tmp_path):
    """The Mistral SDK's own span and OpenLLMetry's mistralai span, two traces, no response id: one row, the
    provider's (its usage is what the provider reported)."""
    call = Call(1, T0, T0 + SECOND, None, model="mistral-small-latest", tokens=(30, 9))
    own = v2_span(call, 1, 1)
    own = replace(own, scope="mistralai", attrs={**own.attrs, "gen_ai.system": "mistral_ai"})
    land(tmp_path, "mistral", [own, openllmetry_span(call, 2, 2, scope="opentelemetry.instrumentation.mistralai",
                                                     provider="MistralAI", tokens=(30, 10))])
    (row,) = calls(tmp_path, "mistral")
    assert (row["span_id"], row["output_tokens"], row["provider"]) == (f"{1:016x}", 9, "mistral_ai")


def test_the_same_id_from_two_services_is_two_calls(tmp_path):
    one = Call(1, T0, T0 + SECOND, "chatcmpl-shared")
    land(tmp_path, "services", [v2_span(one, 1, 1)], service="checkout")
    land(tmp_path, "services", [openllmetry_span(replace(one, n=2), 2, 2)], service="support-bot")
    rows = calls(tmp_path, "services")
    assert sorted(r["service_name"] for r in rows) == ["checkout", "support-bot"]


def test_the_same_id_at_times_that_do_not_overlap_is_two_calls(tmp_path):
    early = Call(1, T0, T0 + SECOND, "chatcmpl-again")
    late = Call(1, T0 + 5 * SECOND, T0 + 6 * SECOND, "chatcmpl-again")  # same question, same id, later
    land(tmp_path, "apart", [v2_span(early, 1, 1), openllmetry_span(late, 2, 2)])
    assert len(calls(tmp_path, "apart")) == 2


def pruned_calls(tmp_path, tenant: str, keys_first: bool, query: str = ALL_CALLS) -> list[dict]:
    """`query` over the views with the rule pruning keys first or sweeping by model first (else the footers choose)."""
    with duckdb.connect() as con:
        for statement in view_statements(tmp_path, TenantId(tenant), keys_first=keys_first):
            con.execute(statement)
        return rows_of(con, query)


def test_an_ids_two_rows_apart_in_time_among_busy_traffic_are_two_calls(tmp_path):
    """The same id and question from two instrumentations seconds apart, each overlapping another instrumentation's
    call, so sweeping by model contests both: still two calls (`views._PAIRS` decides an id's two rows only when they
    overlap)."""
    early, late = Call(1, T0, T0 + SECOND, "chatcmpl-again"), Call(1, T0 + 5 * SECOND, T0 + 6 * SECOND, "chatcmpl-again")
    beside_early, beside_late = Call(2, T0, T0 + SECOND, "chatcmpl-2"), Call(3, T0 + 5 * SECOND, T0 + 6 * SECOND, "chatcmpl-3")
    land(tmp_path, "busy", [v2_span(early, 1, 1), openllmetry_span(beside_early, 2, 2), openllmetry_span(late, 3, 3),
                            v2_span(beside_late, 4, 4)])
    for keys_first in (True, False):
        assert questions(pruned_calls(tmp_path, "busy", keys_first)) == [1, 1, 2, 3], keys_first


def test_one_id_answering_two_questions_in_flight_together_is_two_calls(tmp_path):
    """A mock answers one id to two questions at once; the first call is described by openai-v2 and OpenInference
    (no id), the second by OpenLLMetry and OpenInference. The id's two rows disagree on the input, so they are two
    calls, each one by its input (`views._PAIRS` takes an id's two rows only when their inputs agree)."""
    first, second = Call(1, T0, T0 + SECOND, "chatcmpl-mock"), Call(2, T0, T0 + SECOND, "chatcmpl-mock")
    land(tmp_path, "mock", [v2_span(first, 1, 1), openinference_span(first, 2, 2), openllmetry_span(second, 3, 3),
                            openinference_span(second, 4, 4)])
    for keys_first in (True, False):
        assert questions(pruned_calls(tmp_path, "mock", keys_first)) == [1, 2], keys_first
        merged = pruned_calls(tmp_path, "mock", keys_first,
                              "SELECT span_id, rule, kept_span_id FROM llm_call_duplicates ORDER BY span_id")
        assert merged == [{"span_id": f"{lost:016x}", "rule": "input", "kept_span_id": f"{kept:016x}"}
                          for lost, kept in ((1, 2), (3, 4))], keys_first


def test_one_instrumentation_asking_one_question_twice_at_once_is_two_calls(tmp_path):
    """An app sends the same question twice at once through one instrumentation and a mock answers both with one id;
    another instrumentation's call overlaps them (sweeping by model then contests them): two calls (`views._PAIRS`
    takes an id's two rows only from two instrumentations)."""
    once, again = Call(1, T0, T0 + SECOND, "chatcmpl-mock"), Call(1, T0, T0 + SECOND, "chatcmpl-mock")
    land(tmp_path, "twice", [v2_span(once, 1, 1), v2_span(again, 2, 2),
                             openllmetry_span(Call(2, T0, T0 + SECOND, "chatcmpl-2"), 3, 3)])
    for keys_first in (True, False):
        assert questions(pruned_calls(tmp_path, "twice", keys_first)) == [1, 1, 2], keys_first


def test_three_instrumentations_describing_one_call_are_one_row(tmp_path):
    """openai-v2 and OpenLLMetry share the response id; OpenInference's span has none but the same question: the two
    rows sharing the id are not the whole call (`views._PAIRS` leaves them to the islands when a third row has their
    input)."""
    call = Call(1, T0, T0 + SECOND, "chatcmpl-three")
    land(tmp_path, "three", [v2_span(call, 1, 1), openllmetry_span(call, 2, 2), openinference_span(call, 3, 3)])
    for keys_first in (True, False):
        rows = pruned_calls(tmp_path, "three", keys_first)
        assert (questions(rows), rows[0]["input_tokens"]) == ([1], 41), keys_first


def test_anthropic_native_and_openllmetry_keep_the_providers_tokens(tmp_path):
    """Both spans complete, the same id; OpenLLMetry's starts first and says 10 output tokens, the SDK's 9."""
    call = Call(1, T0, T0 + SECOND, "msg_01AbC", model="claude-sonnet-4", tokens=(41, 9))
    native = v2_span(call, 1, 1)
    native = replace(native, scope="anthropic", start=T0 + 5000, attrs={
        **native.attrs, "gen_ai.system": "anthropic", "gen_ai.response.model": "claude-sonnet-4-20250514"})
    land(tmp_path, "anthropic", [native, openllmetry_span(call, 2, 2, provider="Anthropic", tokens=(41, 10))])
    (row,) = calls(tmp_path, "anthropic")
    assert (row["dialect"], row["output_tokens"]) == ("anthropic", 9)


# --- the property: every call once, whatever ids and timing, when each duplicate carries evidence -------------

_CALLS = st.lists(st.tuples(
    st.integers(0, 40),  # start, in tenths of a second
    st.integers(1, 30),  # duration, in tenths
    st.sampled_from(["gpt-4o-mini", "gpt-4.1", "claude-sonnet-4"]),
    st.one_of(st.none(), st.sampled_from(["chatcmpl-1", "chatcmpl-2", "const"])),  # ids repeat across calls
    st.sampled_from(["v2", "v2+openllmetry", "v2+openinference", "openllmetry+openinference", "all"]),
    st.sampled_from(["support-bot", "checkout"]),
), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(described=_CALLS)
def test_every_call_is_one_row(tmp_path_factory, described):
    """Unrelated calls share ids, models, services and overlap freely; each is described by one to three
    instrumentations in their own traces (the id-less one always with its content): one row per call."""
    data = tmp_path_factory.mktemp("property")
    specs: dict[str, list[payloads.SpanSpec]] = {}
    for n, (start, duration, model, response_id, who, service) in enumerate(described):
        call = Call(n, T0 + start * SECOND // 10, T0 + (start + duration) * SECOND // 10, response_id, model, service)
        made = {"v2": v2_span(call, 3 * n + 1, 3 * n + 1), "openllmetry": openllmetry_span(call, 3 * n + 2, 3 * n + 2),
                "openinference": openinference_span(call, 3 * n + 3, 3 * n + 3)}
        names = made if who == "all" else who.split("+")
        specs.setdefault(service, []).extend(made[name] for name in names)
    specs.setdefault("checkout", []).append(
        openllmetry_span(Call(99, T0, T0 + 1, None, model="other"), 999, 999))  # a second instrumentation
    for service, service_specs in specs.items():
        land(data, "prop", service_specs, service=service)
    rows = [r for r in calls(data, "prop") if r["request_model"] != "other"]
    assert questions(rows) == list(range(len(described)))
