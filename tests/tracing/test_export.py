"""The export path: the real OTLP/HTTP and OTLP/gRPC exporters to loopback receivers, and exporter failures."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

import verdict.tracing as vt
from tests.tracing.conftest import _global_provider, stop

MSG = [{"role": "user", "content": "mail me at jane.doe@example.com"}]


class Receiver:
    """A minimal OTLP/HTTP trace receiver on 127.0.0.1 that decodes what it gets."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], ExportTraceServiceRequest]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = self.rfile.read(int(self.headers["content-length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, request))
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list[tuple[Any, Any]]:
        return [(rs.resource, span) for _, req in self.requests for rs in req.resource_spans
                for ss in rs.scope_spans for span in ss.spans]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def _attr(span: Any, key: str) -> Any:
    for kv in span.attributes:
        if kv.key == key:
            value = kv.value
            return getattr(value, value.WhichOneof("value"))
    return None


def test_otlp_http_export_with_auth_and_redacted_content(fake_openai, receiver):
    _global_provider()
    vt.init(service_name="support-bot", endpoint=receiver.url, tenant_id="acme", api_key="vk_test_1")
    vt.instrument()
    try:
        with vt.intent_context("billing.v1"):
            fake_openai.client().chat.completions.create(model="gpt-4o-mini", messages=MSG)
        assert vt.flush()
    finally:
        stop()
    headers, _ = receiver.requests[0]
    assert headers["authorization"] == "Bearer vk_test_1"
    ((resource, span),) = receiver.spans()
    assert span.name == "chat gpt-4o-mini"
    assert _attr(span, "verdict.intent_key") == "billing.v1"
    assert _attr(span, "verdict.tenant_id") == "acme"
    inputs = json.loads(_attr(span, "gen_ai.input.messages"))
    text = inputs[0]["parts"][0]["content"]
    assert "jane.doe@example.com" not in text and text.startswith("mail me at <")
    # The session's provider was the app's: Verdict's spans still carry init()'s service and tenant.
    resource_attrs = {kv.key: kv.value.string_value for kv in resource.attributes}
    assert (resource_attrs["service.name"], resource_attrs["verdict.tenant_id"]) == ("support-bot", "acme")


class GrpcReceiver:
    """A minimal OTLP/gRPC TraceService on 127.0.0.1 (grpcio's server) that keeps what it gets."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        self.requests: list[tuple[dict[str, str], ExportTraceServiceRequest]] = []
        receiver = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):  # noqa: N802 - gRPC service API
                receiver.requests.append((dict(context.invocation_metadata()), request))
                return ExportTraceServiceResponse()

        self.server = grpc.server(ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
        self.url = f"http://127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    spans = Receiver.spans


def test_otlp_grpc_export_with_auth_and_redacted_content(fake_openai):
    receiver = GrpcReceiver()
    _global_provider()
    vt.init(service_name="grpc-bot", endpoint=receiver.url, protocol="grpc", tenant_id="acme", api_key="vk_grpc_1")
    vt.instrument()
    try:
        with vt.intent_context("billing.v1"):
            fake_openai.client().chat.completions.create(model="gpt-4o-mini", messages=MSG)
        assert vt.flush()
        assert vt.stats().spans_exported == 1
    finally:
        stop()
        receiver.server.stop(None)
    metadata, _ = receiver.requests[0]
    assert metadata["authorization"] == "Bearer vk_grpc_1"
    ((resource, span),) = receiver.spans()  # type: ignore[misc]  # GrpcReceiver borrows Receiver.spans: the same `requests`
    assert span.name == "chat gpt-4o-mini"
    assert _attr(span, "verdict.intent_key") == "billing.v1"
    assert _attr(span, "gen_ai.usage.output_tokens") == 2
    text = json.loads(_attr(span, "gen_ai.input.messages"))[0]["parts"][0]["content"]
    assert "jane.doe@example.com" not in text and text.startswith("mail me at <")
    resource_attrs = {kv.key: kv.value.string_value for kv in resource.attributes}
    assert (resource_attrs["service.name"], resource_attrs["verdict.tenant_id"]) == ("grpc-bot", "acme")


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dead_collector_does_not_change_the_call(fake_openai):
    client = fake_openai.client()
    baseline = client.chat.completions.create(model="m", messages=MSG).choices[0].message.content
    _global_provider()
    vt.init(endpoint=f"http://127.0.0.1:{_dead_port()}", export_timeout_seconds=0.5, schedule_delay_millis=50)
    vt.instrument()
    try:
        results = [client.chat.completions.create(model="m", messages=MSG).choices[0].message.content for _ in range(3)]
        assert results == [baseline] * 3
        vt.flush(timeout_seconds=2)
        s = vt.stats()
        assert s.export_failures >= 1
        assert s.spans_exported == 0
    finally:
        stop()


class _StuckExporter(SpanExporter):
    """An exporter that blocks until released: a collector that accepts connections but never answers."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.exported = 0
        self.threads: set[int] = set()

    def export(self, spans):
        self.threads.add(threading.get_ident())
        self.release.wait(10)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def test_memory_is_bounded_when_the_exporter_is_stuck(fake_openai):
    exporter = _StuckExporter()
    _global_provider()
    vt.init(exporter=exporter, max_queue_size=8, max_export_batch_size=2, schedule_delay_millis=10)
    vt.instrument()
    try:
        client = fake_openai.client()
        for _ in range(40):
            client.chat.completions.create(model="m", messages=MSG)
        s = vt.stats()
        assert s.spans_ended == 40
        assert s.spans_dropped >= 40 - 8 - 2  # queue (8) plus at most one batch in the stuck export
        assert s.errors["export_queue_full"] == s.spans_dropped
        assert exporter.threads and threading.get_ident() not in exporter.threads  # never the caller's thread
    finally:
        exporter.release.set()
        stop()


class _GatedExporter(SpanExporter):
    """Holds its first export until released (a slow collector), then keeps every span it gets."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.spans: list[Any] = []

    def export(self, spans):
        self.entered.set()
        self.release.wait(10)
        self.spans += spans
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def test_a_backlog_sheds_content_not_spans_and_says_so(fake_openai):
    # Queue 8, batches of 2: while the first export is held, six more calls queue up. The batch
    # popped with four still waiting (half the queue) goes out without content; the rest with it.
    exporter = _GatedExporter()
    _global_provider()
    vt.init(exporter=exporter, max_queue_size=8, max_export_batch_size=2, schedule_delay_millis=60_000)
    vt.instrument()
    try:
        client = fake_openai.client()
        for _ in range(2):
            client.chat.completions.create(model="m", messages=MSG)
        assert exporter.entered.wait(10)
        for _ in range(6):
            client.chat.completions.create(model="m", messages=MSG)
        exporter.release.set()
        assert vt.flush(timeout_seconds=10)
        s = vt.stats()
        assert (s.spans_ended, s.spans_exported, s.spans_dropped) == (8, 8, 0)
        assert s.content_omitted == {"export_backlog": 2}
        shed = [span for span in exporter.spans if span.attributes.get("verdict.content_omitted")]
        assert [span.attributes["verdict.content_omitted"] for span in shed] == ["export_backlog"] * 2
        assert all("gen_ai.input.messages" not in span.attributes for span in shed)
        assert all(span.attributes["gen_ai.request.model"] == "m" for span in shed)  # the call is still there
        kept = [span for span in exporter.spans if span not in shed]
        assert len(kept) == 6 and all("<EMAIL>" in span.attributes["gen_ai.input.messages"] for span in kept)
    finally:
        exporter.release.set()
        stop()
