"""Overload: with the disk writer artificially slowed (test-only env var), requests get 429 + Retry-After,
memory stays bounded, and the OTLP exporter's retries eventually land every span."""

from __future__ import annotations

import http.client
import random
import threading
import time

import psutil
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from collector.loadgen import export_request
from tests.collector.conftest import read_spans

SLOW_WRITER = {"VERDICT_COLLECTOR_TEST_WRITE_DELAY_MS": "700"}
QUEUE_BYTES = 1_000_000


def test_full_queue_answers_429_with_retry_after_and_stays_bounded(collector_factory):
    collector = collector_factory("--queue-max-bytes", str(QUEUE_BYTES), env=SLOW_WRITER)
    statuses: list[tuple[int, str | None]] = []
    peak = {"queue_bytes": 0, "inflight_bytes": 0, "rss": 0}
    body = export_request(random.Random(1), 400, time.time_ns()).SerializeToString()

    def client():
        for _ in range(6):
            conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=60)
            conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            statuses.append((response.status, response.getheader("Retry-After")))

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    server = psutil.Process(collector.proc.pid)
    while any(t.is_alive() for t in threads):
        stats = collector.stats()
        peak["queue_bytes"] = max(peak["queue_bytes"], stats["queue_bytes"])
        peak["inflight_bytes"] = max(peak["inflight_bytes"], stats["inflight_bytes"])
        peak["rss"] = max(peak["rss"], server.memory_info().rss)
        time.sleep(0.05)
    refused = [s for s in statuses if s[0] == 429]
    assert refused, f"no 429 among {statuses}"
    assert all(retry_after and int(retry_after) >= 1 for _, retry_after in refused)
    assert {s for s, _ in statuses} <= {200, 429}
    # one request may be admitted past the limit; never more than that on top of it
    assert peak["queue_bytes"] <= QUEUE_BYTES + 2 * len(body)
    assert 0 < peak["inflight_bytes"] <= QUEUE_BYTES  # bodies being received or decoded have a budget too
    assert peak["rss"] < 400 * 2**20
    assert collector.stats()["refused_overload"] == len(refused)


def test_exporter_retries_land_every_span(collector_factory):
    collector = collector_factory("--queue-max-bytes", "200000", env=SLOW_WRITER)
    provider = TracerProvider()
    exporters = []
    for _ in range(3):  # three apps exporting at once: the queue must overflow
        exporter = OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces", timeout=60)
        exporters.append(exporter)
        provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=200, schedule_delay_millis=50))
    tracer = provider.get_tracer("overload")
    sent = set()
    for i in range(800):
        with tracer.start_as_current_span(f"s{i}") as span:
            span.set_attribute("gen_ai.input.messages", "x" * 200)
            sent.add(format(span.get_span_context().span_id, "016x"))
    provider.force_flush(120_000)
    provider.shutdown()
    stats = collector.stats()
    assert stats["refused_overload"] > 0, "the test did not overload the collector"
    stored = {r["span_id"] for r in read_spans(collector.data_dir)}
    assert sent <= stored


def test_grpc_full_queue_is_resource_exhausted_with_retry_info(collector_factory):
    import grpc
    from google.rpc.error_details_pb2 import RetryInfo
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    collector = collector_factory("--queue-max-bytes", str(QUEUE_BYTES), env=SLOW_WRITER)
    request = export_request(random.Random(2), 400, time.time_ns())
    outcomes: list = []

    def client():
        with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            for _ in range(4):
                try:
                    stub.Export(request, timeout=60)
                    outcomes.append("ok")
                except grpc.RpcError as exc:
                    outcomes.append((exc.code(), {m.key: m.value for m in exc.trailing_metadata() or ()}.get("google.rpc.retryinfo-bin")))

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    refused = [o for o in outcomes if o != "ok"]
    assert refused and "ok" in outcomes
    assert all(code == grpc.StatusCode.RESOURCE_EXHAUSTED for code, _ in refused)
    assert all(RetryInfo.FromString(info).retry_delay.seconds >= 1 for _, info in refused)


def test_disk_below_floor_is_503_and_unhealthy(collector_factory):
    collector = collector_factory("--min-free-disk-bytes", str(2**62))  # more than any disk has
    conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
    conn.request("POST", "/v1/traces", body=export_request(random.Random(3), 2, time.time_ns()).SerializeToString(),
                 headers={"Content-Type": "application/x-protobuf"})
    response = conn.getresponse()
    assert response.status == 503 and int(response.getheader("Retry-After", "")) >= 1
    assert b"free disk space is below" in response.read()
    conn.request("GET", "/healthz")
    health = conn.getresponse()
    assert health.status == 503 and b"degraded" in health.read()
    import grpc
    from google.rpc.error_details_pb2 import RetryInfo
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        try:
            trace_service_pb2_grpc.TraceServiceStub(channel).Export(
                export_request(random.Random(4), 2, time.time_ns()), timeout=30)
            raise AssertionError("gRPC export accepted below the disk floor")
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.UNAVAILABLE
            info = {m.key: m.value for m in exc.trailing_metadata()}["google.rpc.retryinfo-bin"]
            assert RetryInfo.FromString(info).retry_delay.seconds >= 1
    assert read_spans(collector.data_dir) == []
