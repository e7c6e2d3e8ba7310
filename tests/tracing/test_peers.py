"""The SDK next to another instrumentation on the same TracerProvider (issue 14, item 6).

The peer here is real: the `anthropic` SDK's own OpenTelemetry spans (anthropic>=1.14), with
Verdict's patches off, against the fake Anthropic server. The other peers (OpenLLMetry,
OpenInference, openai-v2, Pydantic AI, Vercel AI) run in their side venvs: tests/peers/.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

import verdict.tracing as vt
from tests.tracing.conftest import start, stop
from verdict_demo.fake_llm import Reply

NATIVE_SCOPE = "com.anthropic.sdk.python"
EMAIL = "jane.roe.peer@example.com"
CARD = "4111 1111 1111 1111"
KW = {"model": "claude-3-5-haiku-latest", "max_tokens": 64,
      "messages": [{"role": "user", "content": f"Card {CARD}, mail {EMAIL}: why charged twice?"}]}


@pytest.fixture
def peer(monkeypatch, fake_anthropic):
    """The anthropic SDK's native spans on, content recorded (as a user debugging would)."""
    monkeypatch.delenv("ANTHROPIC_OPEN_TELEMETRY", raising=False)
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")
    fake_anthropic.enqueue(Reply(f"Refund noted; receipt to {EMAIL}.", usage=(12, 6)))
    return fake_anthropic


def _native(spans):
    return [s for s in spans if s.instrumentation_scope.name == NATIVE_SCOPE]


def test_intent_and_workload_stamped_on_other_instrumentations_spans(peer, traced):
    vt.uninstrument()  # Verdict's own span would replace the SDK's; here the SDK is the peer
    client = peer.client()
    other = trace.get_tracer("app.handlers")
    with vt.intent_context("billing.v1"), vt.workload_context("support"):
        client.messages.create(**KW)
        with other.start_as_current_span("handle") as own:
            pass
        with other.start_as_current_span("keeps", attributes={"verdict.intent_key": "search.v1"}):
            pass
    peer.enqueue(Reply("ok"))
    client.messages.create(**KW)  # outside: nothing stamped
    spans = traced.all_spans()
    inside, outside = _native(spans)
    assert inside.attributes["verdict.intent_key"] == "billing.v1"
    assert inside.attributes["verdict.workload"] == "support"
    assert "verdict.intent_key" not in outside.attributes and "verdict.workload" not in outside.attributes
    by_name = {s.name: s for s in spans}
    assert by_name["handle"].attributes["verdict.intent_key"] == "billing.v1"
    assert isinstance(own, ReadableSpan) and own.attributes is not None
    assert own.attributes["verdict.intent_key"] == "billing.v1"
    assert by_name["keeps"].attributes["verdict.intent_key"] == "search.v1"  # a span's own key wins


def test_peer_genai_spans_are_exported_redacted_only_when_asked(peer, traced):
    vt.uninstrument()
    peer.client().messages.create(**KW)
    raw = _native(traced.all_spans())
    assert raw and EMAIL in json.dumps(dict(raw[0].attributes))  # the peer records content raw
    assert _native(traced.spans()) == []  # default: Verdict's exporter never carries a peer's span


def test_export_peer_spans_sends_them_redacted_and_skips_non_genai_spans(peer):
    traced = start(export_peer_spans=True)
    try:
        vt.uninstrument()
        with vt.intent_context("billing.v1"):
            peer.client().messages.create(**KW)
            with trace.get_tracer("app.handlers").start_as_current_span("handle"):
                pass
        exported = traced.spans()
        [span] = _native(exported)
        assert [s.name for s in exported if s.instrumentation_scope is not None and s.instrumentation_scope.name == "app.handlers"] == []
        attributes = dict(span.attributes)
        text = json.dumps(attributes) + json.dumps([dict(e.attributes or {}) for e in span.events])
        for secret in (EMAIL, CARD, CARD.replace(" ", "")):
            assert secret not in text
        assert "<EMAIL>" in text and "<CARD>" in text  # redacted, not dropped
        assert attributes["verdict.intent_key"] == "billing.v1"
        assert attributes["gen_ai.usage.input_tokens"] == 12  # numbers pass as they are
        assert attributes["gen_ai.request.model"] == KW["model"]
    finally:
        stop()


def test_export_peer_spans_must_be_a_bool():
    with pytest.raises(ValueError, match="export_peer_spans"):
        vt.init(exporter=None, export_peer_spans="yes")  # type: ignore[arg-type]  # the wrong type is the point
