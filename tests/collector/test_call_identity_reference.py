"""`llm_calls` gives exactly the rows of a plain reference implementation of the call identity rule
(docs/collector.md, *llm_calls*), on random small span sets built to collide: repeated and constant response
ids, overlapping and far-apart calls (starts up to 110 s apart, calls up to 80 s long), model names that
normalise alike, several instrumentations, services and operations.

The view prunes and reorders the work for speed (`collector/views.py` `_contested`); the reference below
compares every pair of rows, as the rule is written. Spans are written as lake segments with the collector's
own schema and writer, and read back through the real views. The same calls are also laid out as a dense lake
(every call overlapping every other, up to 25 of them) and as a sparse one (starts minutes apart), with the spans
of no instrumentation optionally in a segment of the old layout (no `dialect` / `scope_name` columns). The view
prunes keys first or sweeps first as the footers suggest (the collector's writer leaves no hint: keys first); every
lake is read both ways, and compacted lakes as `verdict sql` opens them.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import duckdb
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from collector import call_input, compaction, lake
from collector.lake_union import LakeUnion
from collector.schema import arrow_schema
from collector.views import (
    INFERENCE_OPERATIONS,
    PROVIDER_SDK_SCOPES,
    open_scoped,
    rule_facts,
    view_statements,
)
from verdict.tenancy import TenantId

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)
INSTRUMENTATIONS = (("verdict", "verdict.tracing"), ("openllmetry", "opentelemetry.instrumentation.openai.v1"),
                    ("openinference", "openinference.instrumentation.langchain"), ("anthropic", "anthropic"),
                    (None, None))


def messages(role_texts: list[tuple[str, str | None]]) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text} if text else {"type": "uri"}]}
                       for role, text in role_texts])


_INPUTS = st.one_of(
    st.sampled_from([None, "not json", "{}"]),
    st.lists(st.tuples(st.sampled_from(["user", "user", "system", "assistant"]),
                       st.sampled_from(["q1", "q2", "q1 again", None])), max_size=3).map(messages),
    st.sampled_from(["q1", "q2"]).map(lambda text: messages([("system", "be brief"), ("user", text)])))

# One call as the provider saw it, described by one to three instrumentations: each span names the model its
# own way, may lack the id or the content, starts a little earlier or later; calls collide on everything.
_DESCRIPTION = st.fixed_dictionaries({
    "instrumentation": st.sampled_from(INSTRUMENTATIONS),
    "model": st.sampled_from(["{}", "{}", "{}-2024-07-18", "openai/{}", "{}-20250414", "other"]),
    "response_id": st.booleans(), "input_messages": st.sampled_from([True, True, False]),
    "output_messages": st.booleans(),
    "tokens": st.sampled_from([None, (41, 17), (41, 9)]),
    "operation": st.sampled_from(["chat"] * 5 + ["text_completion", "execute_task", "embeddings"]),
    "shift": st.sampled_from([0, 0, -1, 1, 45]),  # seconds
    "trace": st.integers(1, 3),
})
_CALL = st.fixed_dictionaries({
    "service_name": st.sampled_from(["support-bot", "support-bot", "checkout", None]),
    "model": st.sampled_from(["gpt-4o-mini", "GPT-4.1", None]),
    "response_id": st.sampled_from([None, "chatcmpl-1", "chatcmpl-2", "const"]),
    "input_messages": _INPUTS,
    "start": st.sampled_from([0, 1, 3, 35, 70, 110]),  # seconds: twins may start more than 60 s apart
    "duration": st.sampled_from([0, 1, 2, 40, 80]),
    "described_by": st.lists(_DESCRIPTION, min_size=1, max_size=3),
})


def _model(row: dict) -> str | None:
    named = row["request_model"] or row["response_model"]
    return None if named is None else re.sub(r"^[a-z0-9_.-]+/|-(\d{4}-\d{2}-\d{2}|\d{8})$", "", named.lower())


def _fingerprint(row: dict) -> str | None:
    try:
        parsed = json.loads(row["input_messages"] or "null")
    except json.JSONDecodeError:
        return None
    texts = [part["content"] for message in (parsed if isinstance(parsed, list) else [])
             if isinstance(message, dict) and message.get("role") == "user"
             for part in message.get("parts") or [] if isinstance(part, dict) and part.get("content") is not None]
    return "\x1f".join(texts) or None


def _rank(row: dict) -> int:
    return (8 * (row["input_messages"] is not None and row["output_messages"] is not None)
            + 4 * (row["input_tokens"] is not None and row["output_tokens"] is not None)
            + 2 * any((row["scope_name"] or "").startswith(scope) for scope in PROVIDER_SDK_SCOPES)
            + (row["dialect"] == "verdict"))


def _groups(rows: list[dict], key, agree) -> dict[str, str]:
    """call_row -> its group's label (lowest call_row), for groups of rows with one service, model and key,
    linked by overlapping [start, end] transitively, each instrumentation at most once, and `agree`."""
    found: dict[str, str] = {}
    keyed = [r for r in rows if key(r) is not None and r["model"] is not None]
    seen: set[str] = set()
    for row in keyed:
        if row["call_row"] in seen:
            continue
        group, todo = [row], [row]  # the connected component of the overlap graph among same-key rows
        seen.add(row["call_row"])
        while todo:
            current = todo.pop()
            for other in keyed:
                if other["call_row"] not in seen and (other["service"], other["model"], key(other)) == (
                        current["service"], current["model"], key(current)) and (
                        other["start_time"] <= current["end_time"] and current["start_time"] <= other["end_time"]):
                    seen.add(other["call_row"])
                    group.append(other)
                    todo.append(other)
        instrumentations = [(r["dialect"], r["scope_name"]) for r in group]
        if len(group) > 1 and len(set(instrumentations)) == len(group) and agree(group):
            label = min(r["call_row"] for r in group)
            found.update((r["call_row"], label) for r in group)
    return found


def reference(spans: list[dict]) -> set[tuple[str, str]]:
    """The (trace_id, span_id) of each llm_calls row, by the rule as docs/collector.md states it."""
    rows = [dict(s, service=s["service_name"] or "", call_row=f"{s['trace_id']}:{s['span_id']}", model=_model(s),
                 fingerprint=_fingerprint(s)) for s in spans if s["operation"] in INFERENCE_OPERATIONS]
    kept = {(r["trace_id"], r["span_id"]) for r in rows}
    if len({s["dialect"] for s in spans}) < 2 and len({s["scope_name"] for s in spans}) < 2:
        return kept  # one instrumentation describes a call once: the rule does not run

    def distinct(group, field):
        return len({r[field] for r in group if r[field] is not None})

    by_id = _groups(rows, lambda r: r["response_id"], lambda g: distinct(g, "fingerprint") <= 1)
    by_input = _groups(rows, lambda r: r["fingerprint"], lambda g: distinct(g, "response_id") <= 1)
    for r in rows:
        r["id_call"], r["input_call"] = by_id.get(r["call_row"], r["call_row"]), by_input.get(r["call_row"], r["call_row"])
    for r in rows:  # two hops: id -> input -> id
        r["via_input"] = min(o["id_call"] for o in rows if o["input_call"] == r["input_call"])
    calls: dict[str, list[dict]] = {}
    for r in rows:
        calls.setdefault(min(o["via_input"] for o in rows if o["id_call"] == r["id_call"]), []).append(r)
    for members in calls.values():
        best = min(members, key=lambda r: (-_rank(r), r["start_time"], r["span_id"]))
        kept -= {(r["trace_id"], r["span_id"]) for r in members if r is not best}
    return kept


def _spans(calls: list[dict]) -> list[dict]:
    spans: list[dict] = []
    for call in calls:
        for seen in call["described_by"]:
            dialect, scope = seen["instrumentation"]
            start = T0 + timedelta(seconds=call["start"] + seen["shift"])
            end = T0 + timedelta(seconds=call["start"] + call["duration"])
            tokens = seen["tokens"] or (None, None)
            model = None if call["model"] is None else seen["model"].format(call["model"])
            spans.append({
                "trace_id": f"{seen['trace']:032x}", "span_id": f"{len(spans) + 1:016x}", "name": "call",
                "kind": "CLIENT", "start_time": start, "end_time": max(start, end),
                "service_name": call["service_name"], "scope_name": scope, "dialect": dialect,
                "operation": seen["operation"], "request_model": model if len(spans) % 2 else None,
                "response_model": model, "response_id": call["response_id"] if seen["response_id"] else None,
                "input_messages": call["input_messages"] if seen["input_messages"] else None,
                "output_messages": messages([("assistant", "a1")]) if seen["output_messages"] else None,
                "input_tokens": tokens[0], "output_tokens": tokens[1], "received_at": start})
    return spans


def _described(instrumentation: int, shift: int) -> dict:
    return {"instrumentation": INSTRUMENTATIONS[instrumentation], "model": "{}", "response_id": True,
            "input_messages": True, "output_messages": True, "tokens": (41, 17), "operation": "chat", "shift": shift,
            "trace": 1 + instrumentation}


# One 80 s call whose two spans start 45 s apart, across a minute: no 60 s slot holds both starts.
_FAR_APART = {"service_name": "support-bot", "model": "gpt-4o-mini", "response_id": "chatcmpl-1",
              "input_messages": messages([("user", "q1")]), "start": 110, "duration": 80,
              "described_by": [_described(0, 0), _described(1, 45)]}


def _llm_calls(data, keys_first: bool | None = None) -> list:
    """llm_calls' (trace_id, span_id) rows through the real views: as `verdict sql` opens them, or pruned `keys_first`
    (True) or sweep first (False)."""
    if keys_first is None:
        con = open_scoped(data, TenantId("ref"))
    else:
        con = duckdb.connect()
        for statement in view_statements(data, TenantId("ref"), keys_first=keys_first):
            con.execute(statement)
    try:
        return con.execute("SELECT trace_id, span_id FROM llm_calls").fetchall()
    finally:
        con.close()


def _write(data, spans: list[dict], old_layout: bool = False) -> None:
    """`spans` as fresh segments with the collector's writer. With `old_layout`, the spans of no instrumentation are
    written as a segment without the `dialect` and `scope_name` columns."""
    import pyarrow as pa

    schema = arrow_schema("spans")
    lake.prepare(data)
    old = [s for s in spans if old_layout and s["dialect"] is None and s["scope_name"] is None]
    for segment, layout in ((old, pa.schema([f for f in schema if f.name not in ("dialect", "scope_name")])),
                            ([s for s in spans if s not in old], schema)):
        if segment:
            lake.write_segment(data, "ref", "2026-12-01", pa.Table.from_pylist(
                [{name: s.get(name) for name in layout.names} for s in segment], schema=layout))


def _shown_and_expected(data, spans: list[dict], old_layout: bool = False) -> tuple[list[list], set]:
    """llm_calls' rows read through the real views (keys first, sweep first; `_write`'s lake), and the reference's."""
    _write(data, spans, old_layout)
    return [_llm_calls(data, keys_first) for keys_first in (True, False)], reference(spans)


@example(calls=[_FAR_APART])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(_CALL, min_size=1, max_size=8))
def test_llm_calls_equals_the_reference_rule(tmp_path_factory, calls):
    ways, expected = _shown_and_expected(tmp_path_factory.mktemp("reference"), _spans(calls))
    for shown in ways:
        assert len(shown) == len(set(shown))
        assert set(shown) == expected


# (start scale, seconds added to every duration): dense, every call overlaps all others (one model's calls overlap
# all day); sparse, calls start 5 to 550 minutes apart unless drawn at the same start.
_LAYOUTS = {"dense": (0.05, 120), "sparse": (300, 0)}


# One call described by Verdict's SDK and by a span of an old-layout segment (no instrumentation columns): two
# instrumentations, though each file's footer statistics name at most one.
@example(layout="sparse", old_layout=True,
         calls=[dict(_FAR_APART, described_by=[_described(0, 0), _described(len(INSTRUMENTATIONS) - 1, 1)])])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=st.sampled_from(sorted(_LAYOUTS)), old_layout=st.booleans(),
       calls=st.lists(_CALL, min_size=1, max_size=25))
def test_dense_and_sparse_lakes_equal_the_reference_rule(tmp_path_factory, layout, old_layout, calls):
    scale, longer = _LAYOUTS[layout]
    laid_out = [dict(c, start=c["start"] * scale, duration=c["duration"] + longer) for c in calls]
    ways, expected = _shown_and_expected(tmp_path_factory.mktemp("layout"), _spans(laid_out), old_layout)
    for shown in ways:
        assert len(shown) == len(set(shown))
        assert set(shown) == expected


def _compacted_lake(data, questions: int) -> list[dict]:
    """600 calls (sparse, each described by two instrumentations, every tenth twinned) asking `questions` distinct
    questions, written as fresh segments and compacted as the collector compacts (DuckDB's writer)."""
    calls = [{"service_name": "support-bot", "model": "gpt-4o-mini", "response_id": None,
              "input_messages": messages([("user", f"q{i % questions}")]), "start": 400 * i, "duration": 5,
              "described_by": [_described(i % 2, 0)] + ([_described(1 - i % 2, 1)] if i % 10 == 0 else [])}
             for i in range(600)]
    spans = _spans(calls)
    _write(data, spans[:len(spans) // 2])
    _write(data, spans[len(spans) // 2:])
    assert compaction.compact_partition(data, lake.partition_dir(data, "ref", "2026-12-01", "spans"), min_segments=1)
    return spans


def test_repeated_prompts_are_swept_first_and_give_the_reference_rows(tmp_path):
    """Compacted segments whose prompts repeat (dictionary-encoded input_messages) choose the sweep first, unique prompts
    keys first; the rows are the reference's either way."""
    for questions, repeated in ((3, True), (10_000, False)):
        data = tmp_path / str(questions)
        spans = _compacted_lake(data, questions)
        source = LakeUnion.of(data)
        con = source.connect()
        try:
            facts = rule_facts(source, con, TenantId("ref"), None)
        finally:
            con.close()
        assert (facts.instrumentations, facts.repeated_prompts) == (2, repeated)
        shown = _llm_calls(data)
        assert len(shown) == len(set(shown)) and set(shown) == reference(spans)


def _write_events(data, spans: list[dict]) -> None:
    """Each span's input messages as one GenAI log event emitted in it (the `with_events` path)."""
    import pyarrow as pa

    records = [{"record_id": f"r{s['span_id']}", "trace_id": s["trace_id"], "span_id": s["span_id"],
                "time": s["start_time"], "sequence": 0, "input_messages": s["input_messages"],
                "received_at": s["start_time"]} for s in spans if s["input_messages"] is not None]
    if records:
        schema = arrow_schema("logs")
        lake.write_segment(data, "ref", "2026-12-01", pa.Table.from_pylist(
            [{name: r.get(name) for name in schema.names} for r in records], schema=schema), table_name="logs")


def _compact(data) -> None:
    assert compaction.compact_partition(data, lake.partition_dir(data, "ref", "2026-12-01", "spans"), min_segments=1)


def _stored_fingerprints(data) -> int:
    """Non-NULL input fingerprints stored in the lake's compacted span segments."""
    files = [str(p) for p in lake.partition_dir(data, "ref", "2026-12-01", "spans").glob("c-*.parquet")]
    if not files:
        return 0
    with duckdb.connect() as con:
        assert con.execute(call_input.disagreeing(files)).fetchone() == (0,)
        (stored,) = con.execute(  # type: ignore[misc]  # an aggregate: one row
            f"SELECT count({call_input.FINGERPRINT_COLUMN}) FROM read_parquet(?, union_by_name = true)", [files]).fetchone()
        return stored


# compacted: every span in compacted segments (the stored fingerprint read); mixed: each call's first description
# compacted, the others in fresh segments (a call's two rows meet with one fingerprint stored, one computed).
# events: the first description's messages come as a log event (none stored: computed from the event when read).
@example(layout="mixed", events=True, calls=[dict(_FAR_APART, response_id=None)])
@example(layout="mixed", events=False, calls=[dict(_FAR_APART, response_id=None)])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=st.sampled_from(["compacted", "mixed"]), events=st.booleans(), calls=st.lists(_CALL, min_size=1, max_size=8))
def test_compacted_and_mixed_lakes_equal_the_reference_rule(tmp_path_factory, layout, events, calls):
    data = tmp_path_factory.mktemp(layout)
    lake.prepare(data)
    spans: list[dict] = []
    first: list[dict] = []  # as written: each call's first description, and the others
    rest: list[dict] = []
    for call in calls:
        for k, span in enumerate(_spans([call])):
            span["span_id"] = f"{len(spans) + 1:016x}"
            spans.append(span)
            if k == 0 and events:
                _write_events(data, [span])
                span = dict(span, input_messages=None)
            (rest if k else first).append(span)
    if layout == "compacted":
        _write(data, first + rest)
        _compact(data)
    else:
        _write(data, first)
        _compact(data)
        if rest:
            _write(data, rest)
    compacted = first + rest if layout == "compacted" else first
    assert _stored_fingerprints(data) == sum(_fingerprint(w) is not None for w in compacted)
    expected = reference(spans)
    for shown in (_llm_calls(data, True), _llm_calls(data, False), _llm_calls(data)):
        assert len(shown) == len(set(shown))
        assert set(shown) == expected


def test_a_pair_with_an_end_before_its_start_is_pruned_as_the_sweep_joins_it(tmp_path):
    """The collector refuses a span that ends before it starts, but the pruning must not rely on it: most pairs are
    decided by an aggregate (the later start no later than the earlier end), which for such a span disagrees with the
    islands' sweep. A span of one instrumentation starting at 5 s and 'ending' at 3 s follows one starting at 4 s
    and ending at 10 s: the sweep joins them (5 s is before 10 s) and the rule keeps one row; an aggregate would have
    left both out of the comparison."""
    call = dict(_FAR_APART, start=4, duration=6, described_by=[_described(0, 0), _described(1, 1)])
    spans = _spans([call])
    spans[1]["end_time"] = T0 + timedelta(seconds=3)
    _write(tmp_path, spans)
    for keys_first in (True, False):
        assert _llm_calls(tmp_path, keys_first) == [(spans[0]["trace_id"], spans[0]["span_id"])], keys_first


def test_three_instrumentations_overlapping_in_a_chain_are_one_call(tmp_path):
    """Three spans of one call, each overlapping the next but the first not the last (0-10 s, 5-20 s, 15-25 s):
    the islands join them transitively. Only a key's two rows are decided by an aggregate; three rows that do not
    all overlap at once must still go through the sweep, or the pruning leaves all three out of the comparison."""
    call = dict(_FAR_APART, start=0, duration=10, described_by=[_described(0, 0), _described(1, 5), _described(2, 15)])
    spans = _spans([call])
    for span, end in zip(spans, (10, 20, 25), strict=True):
        span["end_time"] = T0 + timedelta(seconds=end)
    _write(tmp_path, spans)
    expected = reference(spans)
    assert len(expected) == 1
    for keys_first in (True, False):
        assert set(_llm_calls(tmp_path, keys_first)) == expected, keys_first
