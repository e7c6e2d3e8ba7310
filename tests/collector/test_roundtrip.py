"""The real OpenTelemetry SDK exports to the real collector over HTTP and gRPC; DuckDB reads back the same spans."""

from __future__ import annotations

import gzip
import json
import urllib.request

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from tests.collector.conftest import read_spans

MESSAGES_IN = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "refund order 42 to bob@example.com"}]}])
MESSAGES_OUT = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}])


def _exporter(transport: str, port: int):
    if transport == "http":
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", compression=Compression.Gzip)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
        OTLPSpanExporter as GrpcSpanExporter,
    )

    return GrpcSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True)


def _emit(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("verdict.tracing", "0.1.0")
    with tracer.start_as_current_span("workflow", kind=SpanKind.INTERNAL) as parent:
        parent.set_attribute("verdict.intent_key", "billing.refund")
        with tracer.start_as_current_span(
            "chat gpt-4o-mini", kind=SpanKind.CLIENT, links=[Link(parent.get_span_context(), {"why": "retry"})]
        ) as span:
            span.set_attributes({
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                "gen_ai.response.id": "chatcmpl-1",
                "gen_ai.response.finish_reasons": ("stop",),
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 7,
                "gen_ai.usage.cache_read.input_tokens": 64,
                "gen_ai.usage.cache_creation.input_tokens": 3,
                "gen_ai.usage.reasoning_tokens": 5,  # the older name is accepted too
                "gen_ai.input.messages": MESSAGES_IN,
                "gen_ai.output.messages": MESSAGES_OUT,
                "gen_ai.system_instructions": "be brief",
                "verdict.intent_key": "billing.refund",
                "verdict.workload": "canary",
                "error.type": "RateLimitError",
                "custom.float": 0.25,
                "custom.flag": True,
                "custom.list": (1, 2, 3),
            })
            span.add_event("retry", {"attempt": 2, "delay_s": 0.5})
            span.set_status(Status(StatusCode.ERROR, "rate limited"))


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_sdk_spans_land_unchanged(collector_factory, transport):
    collector = collector_factory()
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot", "deployment.environment": "test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    port = collector.http_port if transport == "http" else collector.grpc_port
    provider.add_span_processor(SimpleSpanProcessor(_exporter(transport, port)))
    _emit(provider)
    provider.shutdown()

    sent = {format(s.context.span_id, "016x"): s for s in memory.get_finished_spans()}
    rows = {r["span_id"]: r for r in read_spans(collector.data_dir)}
    assert set(rows) == set(sent)
    for span_id, span in sent.items():
        row = rows[span_id]
        assert row["tenant"] == "__verdict_local__"
        assert row["trace_id"] == format(span.context.trace_id, "032x")
        assert row["parent_span_id"] == (format(span.parent.span_id, "016x") if span.parent else None)
        assert row["name"] == span.name
        assert row["kind"] == span.kind.name
        assert row["service_name"] == "support-bot"
        assert row["scope_name"] == "verdict.tracing" and row["scope_version"] == "0.1.0"
        assert json.loads(row["resource_attributes"])["deployment.environment"] == "test"

    chat = rows[next(k for k, s in sent.items() if s.name.startswith("chat"))]
    span = sent[chat["span_id"]]
    assert span.start_time is not None and span.end_time is not None
    # nanosecond times survive (DuckDB TIMESTAMP_NS)
    import duckdb

    start_ns, end_ns = duckdb.execute(
        "SELECT epoch_ns(?::TIMESTAMP_NS), epoch_ns(?::TIMESTAMP_NS)", [chat["start_time"], chat["end_time"]]
    ).fetchall()[0]
    exact = duckdb.execute(
        f"SELECT epoch_ns(start_time), epoch_ns(end_time), duration_ns FROM read_parquet("
        f"'{collector.data_dir}/spans/*/*/*.parquet') WHERE span_id = ?", [chat["span_id"]]
    ).fetchone()
    assert exact == (span.start_time, span.end_time, span.end_time - span.start_time)
    assert abs(start_ns - span.start_time) < 1000 and abs(end_ns - span.end_time) < 1000
    assert chat["status_code"] == "ERROR" and chat["status_message"] == "rate limited"
    attrs = json.loads(chat["attributes"])
    assert attrs["custom.float"] == 0.25 and attrs["custom.flag"] is True and attrs["custom.list"] == [1, 2, 3]
    assert "gen_ai.input.messages" not in attrs  # message contents live in their own columns
    assert (chat["operation"], chat["provider"], chat["request_model"], chat["response_model"]) == (
        "chat", "openai", "gpt-4o-mini", "gpt-4o-mini-2024-07-18")
    assert chat["response_id"] == "chatcmpl-1" and chat["finish_reasons"] == ["stop"]
    assert (chat["input_tokens"], chat["output_tokens"], chat["cached_input_tokens"],
            chat["cache_creation_input_tokens"], chat["reasoning_tokens"]) == (120, 7, 64, 3, 5)
    assert (chat["intent_key"], chat["workload"], chat["error_type"]) == ("billing.refund", "canary", "RateLimitError")
    # server-side re-redaction of message content (the SDK here did not redact)
    assert "bob@example.com" not in chat["input_messages"]
    assert json.loads(chat["input_messages"])[0]["parts"][0]["content"].startswith("refund order 42 to ")
    assert json.loads(chat["output_messages"]) == json.loads(MESSAGES_OUT)
    assert chat["system_instructions"] == "be brief"
    events = json.loads(chat["events"])
    assert events == [{"name": "retry", "time_unix_nano": span.events[0].timestamp,
                       "attributes": {"attempt": 2, "delay_s": 0.5}}]
    links = json.loads(chat["links"])
    assert links[0]["span_id"] == chat["parent_span_id"] and links[0]["attributes"] == {"why": "retry"}


def test_otlp_json_with_hex_ids(collector_factory):
    collector = collector_factory()
    trace_id, span_id = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
    doc = {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-app"}}]},
        "scopeSpans": [{"scope": {"name": "manual"}, "spans": [{
            "traceId": trace_id, "spanId": span_id, "parentSpanId": "", "name": "chat x", "kind": 3,
            "startTimeUnixNano": "1700000000123456789", "endTimeUnixNano": "1700000001123456789",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
            ],
            "status": {"code": 2, "message": "boom"},
        }, {
            "traceId": trace_id, "spanId": "0000000000000001", "name": "backwards",
            "startTimeUnixNano": "1700000001000000000", "endTimeUnixNano": "1700000000000000000",
        }]}],
    }]}
    body = gzip.compress(json.dumps(doc).encode())
    request = urllib.request.Request(f"{collector.url}/v1/traces", data=body, headers={
        "Content-Type": "application/json", "Content-Encoding": "gzip"})
    response = urllib.request.urlopen(request, timeout=30)
    assert response.status == 200 and response.headers["Content-Type"].startswith("application/json")
    partial = json.loads(response.read())["partialSuccess"]  # the response in the request's encoding
    assert int(partial["rejectedSpans"]) == 1 and "end_time is before start_time" in partial["errorMessage"]
    (row,) = read_spans(collector.data_dir)
    assert (row["trace_id"], row["span_id"], row["parent_span_id"]) == (trace_id, span_id, None)
    assert (row["kind"], row["status_code"], row["input_tokens"]) == ("CLIENT", "ERROR", 12)
    assert str(row["date"]) == "2023-11-14"


def test_oversized_attribute_values_are_capped_with_marker(collector_factory):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    collector = collector_factory("--max-attribute-chars", "100")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces")))
    with provider.get_tracer("t").start_as_current_span("big") as span:
        span.set_attribute("blob", "a" * 5000)
        span.set_attribute("gen_ai.output.messages", "b" * 5000)
    provider.shutdown()
    (row,) = read_spans(collector.data_dir)
    assert json.loads(row["attributes"])["blob"] == "a" * 100 + "…[truncated by verdict collector: 5000 chars]"
    assert row["output_messages"].startswith("b" * 100 + "…[truncated")
