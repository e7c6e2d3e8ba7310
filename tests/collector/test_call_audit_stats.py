"""/stats `llm_calls_audit` (issue 25, item 5): the real collector process, fed by the real OTel SDK, counts
today's rows merged as duplicates per identity rule and the spans left out as non-inference per operation,
after a compaction pass (here every 0.5 s)."""

from __future__ import annotations

import json
import time

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from verdict.tenancy import LOCAL_TENANT

MODEL = "gpt-4o-mini"


def _messages(text: str) -> str:
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}])


def _send(base_url: str) -> None:
    """One service, two instrumentations (a wrapper and the client library), GenAI semconv spans: a call both
    saw with its response id, a call both saw without one (the same input), a call only one saw, and steps."""
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{base_url}/v1/traces")))
    wrapper, client = provider.get_tracer("acme.llm.wrapper"), provider.get_tracer("acme.llm.client")

    def chat(tracer, question: str, response_id: str | None) -> None:
        with tracer.start_as_current_span(f"chat {MODEL}") as span:
            span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                 "gen_ai.request.model": MODEL, "gen_ai.input.messages": _messages(question)})
            if response_id:
                span.set_attribute("gen_ai.response.id", response_id)

    for question, response_id in (("where is order 1?", "chatcmpl-1"), ("where is order 2?", None)):
        with wrapper.start_as_current_span(f"chat {MODEL}") as outer:  # the client's span inside the wrapper's
            outer.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                  "gen_ai.request.model": MODEL, "gen_ai.input.messages": _messages(question)})
            if response_id:
                outer.set_attribute("gen_ai.response.id", response_id)
            chat(client, question, response_id)
    chat(client, "where is order 3?", "chatcmpl-3")
    for operation in ("execute_task", "execute_task", "invoke_agent", "embeddings"):
        with wrapper.start_as_current_span(operation) as span:
            span.set_attributes({"gen_ai.operation.name": operation, "gen_ai.provider.name": "openai"})
    provider.shutdown()


def test_stats_count_duplicates_per_rule_and_non_inference_per_operation(collector_factory):
    collector = collector_factory("--compact-interval-s", "0.5")
    _send(collector.url)
    expected = {"duplicates": {"response_id": 1, "input": 1},
                "not_inference": {"execute_task": 2, "invoke_agent": 1, "embeddings": 1}}
    deadline = time.monotonic() + 60
    audit = None
    while time.monotonic() < deadline:  # the next compaction pass audits what landed
        audit = collector.stats()["llm_calls_audit"]
        if audit and audit["tenants"].get(LOCAL_TENANT) == expected:
            break
        time.sleep(0.2)
    assert audit is not None and audit["tenants"].get(LOCAL_TENANT) == expected, audit
    assert audit["date"] == time.strftime("%Y-%m-%d", time.gmtime()) and audit["tenants_not_audited"] == 0
    assert collector.stop() == 0
