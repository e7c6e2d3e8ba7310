"""The OTLP bodies recorded from the real peer packages (tests/fixtures/dialects/, re-recorded by
`make peers-record`), replayed as sent through the real collector process: exactly one `llm_calls`
row per model call with model, tokens and the redacted question and answer (or, in the tool scenario,
the tool call asked for); none for agent, step, task or tool spans; no planted secret anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collector.views import open_scoped
from tests.collector.lake_search import find_secrets
from verdict.redact import redact_text
from verdict.tenancy import TenantId, validate_tenant_id
from verdict_daemon.service.material import final_answer

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dialects"
SENDERS = sorted(p.name for p in FIXTURES.iterdir() if (p / "manifest.json").exists())


def _token(sender: str) -> str:
    return f"token-for-{sender}-0123456789"


def _tenant(sender: str) -> TenantId:
    return validate_tenant_id(sender.replace(".", "-"))


@pytest.fixture(scope="module")
def replayed(tmp_path_factory, request):
    """Every sender into its own tenant (one token each) of one real collector; logs after spans."""
    from tests.collector.conftest import Collector, post_recording

    tmp = tmp_path_factory.mktemp("peers")
    tokens = tmp / "tokens.yaml"
    tokens.write_text("".join(f'"{_token(s)}": {_tenant(s)}\n' for s in SENDERS))
    collector = Collector(tmp / "data", ("--tokens", str(tokens)))
    collector.start()
    request.addfinalizer(collector.process.kill)  # a no-op once it exited
    manifests = {}
    for sender in SENDERS:
        manifest = manifests[sender] = json.loads((FIXTURES / sender / "manifest.json").read_text())
        for name in manifest["arrival_order"]:
            post_recording(collector.http_port, FIXTURES / sender / name, _token(sender))
    stats = collector.stats()
    assert collector.stop() == 0
    return collector, manifests, stats


def test_every_sender_has_its_recording():
    """Each sender tests/peers/harness.py runs (record-only families included) is replayed here."""
    from tests.peers.harness import SENDERS as RECORDED

    assert sorted(s.name for s in RECORDED) == SENDERS, SENDERS


@pytest.mark.parametrize("sender", SENDERS)
def test_recorded_sender_gives_one_row_per_call(replayed, sender):
    collector, manifests, _ = replayed
    manifest = manifests[sender]
    con = open_scoped(collector.data_dir, _tenant(sender))
    rows = con.execute("SELECT request_model, input_tokens, output_tokens, provider, operation, input_messages, "
                       "output_messages FROM llm_calls ORDER BY start_time").fetchall()
    expected = manifest["expected_llm_calls"]
    assert len(rows) == len(expected), (sender, rows)
    for (model, tokens_in, tokens_out, provider, operation, inputs, outputs), call in zip(rows, expected, strict=True):
        assert (model, tokens_in, tokens_out) == (call["request_model"], call["input_tokens"], call["output_tokens"])
        # one operation name per kind of call: a Gemini call is generate_content
        assert operation == call.get("operation", "generate_content" if provider == "gcp.gemini" else "chat"), \
            (sender, operation)
        assert provider == call.get("provider", provider), (sender, provider)
        assert provider in ("openai", "anthropic", "together", "gcp.gemini", "aws.bedrock", "mistral_ai", "ollama", None), \
            (sender, provider)
        roles = {m["role"] for column in (inputs, outputs) for m in json.loads(column)}
        assert roles <= {"system", "user", "assistant", "tool"}, (sender, roles)  # the GenAI semconv roles
        texts_in = [p.get("content") or "" for m in json.loads(inputs) for p in m["parts"]]
        parts_out = [p for m in json.loads(outputs) for p in m["parts"]]
        # The question as the user's text; an agent framework may wrap it ("New task:\n…", smolagents).
        assert any(redact_text(call["question"]) in text for text in texts_in), (sender, texts_in)
        if "tool_call" in call:  # a call that asks for the scenario's tool, or answers through `final_answer`
            assert [p.get("name") for p in parts_out if p["type"] == "tool_call"] == [call["tool_call"]], parts_out
        if "answer" in call:
            answers = [p.get("content") for p in parts_out] + [final_answer(p) for p in parts_out]
            assert redact_text(call["answer"]) in answers, (sender, parts_out)


def test_no_planted_secret_anywhere(replayed):
    collector, manifests, stats = replayed
    secrets = sorted({s for m in manifests.values() for s in m["planted_secrets"]})
    assert find_secrets(collector.data_dir, secrets, "".join(collector.log)) == []
    assert stats["unrecognised_scopes"] == {}  # every span of every sender was recognised by some dialect


@pytest.mark.parametrize("sender", SENDERS)
def test_the_judge_reads_the_question_and_the_answer(replayed, sender):
    """What the sampler hands the judge (verdict_daemon.service.material.graded_texts): the question from a
    `user` message, the answer from an `assistant` message, the system prompt at most once, for every call of every
    recorded sender."""
    from tests.peers.harness import _peer
    from verdict_daemon.service.material import graded_texts

    collector, manifests, _ = replayed
    con = open_scoped(collector.data_dir, _tenant(sender))
    rows = con.execute("SELECT input_messages, output_messages, system_instructions FROM llm_calls "
                       "ORDER BY start_time").fetchall()
    for (inputs, outputs, system), call in zip(rows, manifests[sender]["expected_llm_calls"], strict=True):
        query, response, context = graded_texts(inputs, outputs, system)
        assert query and redact_text(call["question"]) in query, (sender, query)
        # the scenario's system prompt, sent in two places by some senders, is read once
        assert context.splitlines().count(_peer.SYSTEM) <= 1, (sender, context)
        if "answer" in call:  # a tool-call row has no answer text to grade
            assert response and redact_text(call["answer"]) in response, (sender, response)



@pytest.mark.parametrize("sender", [s for s in SENDERS if "strands" in s or "openllmetry" in s])
def test_a_dialect_is_named_by_a_marker_only_its_sender_sends(replayed, sender):
    """Strands sends `gen_ai.usage.total_tokens` as OpenLLMetry's current versions do: its spans are the GenAI
    semconv (or OpenInference's, rewritten), never `openllmetry`; every span OpenLLMetry's packages send with
    it (scope `opentelemetry.instrumentation.*`, whatever the library) stays `openllmetry`."""
    collector, _, _ = replayed
    con = open_scoped(collector.data_dir, _tenant(sender))
    rows = con.execute("SELECT DISTINCT scope_name, dialect, "
                       "json_extract(attributes, '$.\"gen_ai.usage.total_tokens\"') IS NOT NULL FROM spans").fetchall()
    if "strands" in sender:
        expected = "openinference" if sender == "strands-openinference" else "otel_genai"
        assert {d for scope, d, _ in rows if scope == "strands.telemetry.tracer"} == {expected}, rows
    else:
        assert "openllmetry" in {d for _, d, _ in rows}, rows
    assert all(d == "openllmetry" for scope, d, total in rows
               if total and scope.startswith("opentelemetry.instrumentation.")), rows
