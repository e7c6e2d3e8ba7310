"""A sender none of whose spans is in a recognised dialect is logged once, with its instrumentation scope names
(the real OTel SDK exporting to the real collector process); a sender with one recognised span is not."""

from __future__ import annotations

import http.client

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.collector import dialect_payloads as payloads

WARNING = "no span from"


def _export_unrecognised(base_url: str, scope: str, spans: int) -> None:
    """`spans` spans of an instrumentation no dialect knows, one request each (SimpleSpanProcessor)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{base_url}/v1/traces")))
    tracer = provider.get_tracer(scope)
    for i in range(spans):
        with tracer.start_as_current_span(f"acme.complete {i}") as span:
            span.set_attribute("acme.llm.model", "acme-large")  # a GenAI call in a spelling no dialect reads
    provider.shutdown()


def _post_as(port: int, user_agent: str, request) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                 headers={"Content-Type": "application/x-protobuf", "User-Agent": user_agent})
    response = conn.getresponse()
    assert response.status == 200, response.read()


def test_a_sender_with_only_unrecognised_spans_is_logged_once_with_its_scope(collector_factory):
    collector = collector_factory()
    _export_unrecognised(collector.url, "acme.llm.client", spans=3)
    # Another sender (its own user agent) whose first request is recognised, then unrecognised spans only.
    understood = payloads.CASES[0]
    for request in understood.traces:
        _post_as(collector.http_port, "understood-app/1.0", request)
    _post_as(collector.http_port, "understood-app/1.0", payloads.trace_request(
        payloads.SpanSpec("my.http.client", "GET /orders", {"http.request.method": "GET"}, trace=0x77, span=0x77)))
    stats = collector.stats()
    assert collector.stop() == 0

    assert stats["unrecognised_scopes"] == {"acme.llm.client": 3, "my.http.client": 1}, stats
    warnings = [line for line in collector.log if WARNING in line]
    assert len(warnings) == 1, warnings
    assert "'acme.llm.client' (1 spans)" in warnings[0] and "OTel-OTLP-Exporter-Python" in warnings[0], warnings
    assert "Asking for a new dialect" in warnings[0] and "understood-app" not in warnings[0]
