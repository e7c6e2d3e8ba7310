"""Refusals with precise statuses: oversize, gzip bombs, content types, slow clients, auth, tenants, other signals."""

from __future__ import annotations

import gzip
import http.client
import random
import socket
import time

import grpc
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from collector.auth import hash_token
from collector.loadgen import export_request, span_ids
from tests.collector.conftest import read_spans

PB = "application/x-protobuf"


def post(collector, body: bytes, headers: dict) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
    conn.request("POST", "/v1/traces", body=body, headers=headers)
    response = conn.getresponse()
    return response.status, dict(response.getheaders()), response.read()


def _request(n=3, tenant=None, seed=1):
    return export_request(random.Random(seed), n, time.time_ns(), tenant=tenant)


@pytest.fixture
def small_limits(collector_factory):
    return collector_factory("--max-body-bytes", "65536", "--read-timeout-s", "1")


def test_oversize_body_is_413(small_limits):
    status, _, body = post(small_limits, b"\0" * 70_000, {"Content-Type": PB})
    assert status == 413
    assert "exceeds the limit of 65536 bytes" in Status.FromString(body).message


def test_gzip_bomb_is_capped_413(small_limits):
    bomb = gzip.compress(b"\0" * (50 * 1024 * 1024))  # 50 MiB of zeros in ~50 KiB
    assert len(bomb) < 65536
    status, _, body = post(small_limits, bomb, {"Content-Type": PB, "Content-Encoding": "gzip"})
    assert status == 413
    assert "decompressed body exceeds" in Status.FromString(body).message
    assert post(small_limits, _request().SerializeToString(), {"Content-Type": PB})[0] == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/grpc", ""])
def test_wrong_content_type_is_415(small_limits, content_type):
    status, _, body = post(small_limits, _request().SerializeToString(), {"Content-Type": content_type})
    assert status == 415
    assert b"unsupported content type" in body


def test_malformed_bodies_are_400_with_reason(small_limits):
    status, _, body = post(small_limits, b"\xff\xff\xff", {"Content-Type": PB})
    assert status == 400 and "malformed protobuf" in Status.FromString(body).message
    status, _, body = post(small_limits, b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
                           {"Content-Type": "application/json"})
    assert status == 400 and b"traceId is not valid hex" in body
    status, _, body = post(small_limits, b"not json", {"Content-Type": "application/json"})
    assert status == 400 and b"malformed JSON" in body


def test_invalid_spans_rejected_individually(small_limits):
    request = _request(3)
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[1].trace_id = b"\0" * 16
    spans[2].end_time_unix_nano = spans[2].start_time_unix_nano - 1
    status, _, body = post(small_limits, request.SerializeToString(), {"Content-Type": PB})
    assert status == 200
    partial = trace_service_pb2.ExportTraceServiceResponse.FromString(body).partial_success
    assert partial.rejected_spans == 2
    assert "trace_id must be 16 non-zero bytes" in partial.error_message
    assert "end_time is before start_time" in partial.error_message
    assert [r["span_id"] for r in read_spans(small_limits.data_dir)] == [spans[0].span_id.hex()]


def test_slow_client_is_cut_off(small_limits):
    body = _request().SerializeToString()
    with socket.create_connection(("127.0.0.1", small_limits.http_port), timeout=10) as sock:
        sock.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PB}\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
        started = time.monotonic()
        reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 408")
    assert time.monotonic() - started < 8
    assert post(small_limits, body, {"Content-Type": PB})[0] == 200  # the server is free again


def test_slow_headers_are_cut_off(small_limits):
    """A client dribbling headers (each byte would reset uvicorn's own keep-alive timer) is disconnected."""
    with socket.create_connection(("127.0.0.1", small_limits.http_port), timeout=10) as sock:
        started = time.monotonic()
        closed = False
        for byte in b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40:
            try:
                sock.sendall(bytes([byte]))
                time.sleep(0.1)
            except OSError:
                closed = True
                break
        if not closed:
            closed = sock.recv(4096) == b""
    assert closed and time.monotonic() - started < 4.5  # --read-timeout-s 1, not the 4 s the dribble takes
    with socket.create_connection(("127.0.0.1", small_limits.http_port), timeout=10) as idle:
        assert idle.recv(1) == b""  # a connection that never sends a request is closed too


def test_metrics_are_not_found_and_logs_are_accepted(small_limits):
    conn = http.client.HTTPConnection("127.0.0.1", small_limits.http_port, timeout=10)
    conn.request("POST", "/v1/metrics", body=b"", headers={"Content-Type": PB})
    response = conn.getresponse()
    assert response.status == 404 and b"only /v1/traces and /v1/logs" in response.read()
    with grpc.insecure_channel(f"127.0.0.1:{small_limits.grpc_port}") as channel:
        stub = logs_service_pb2_grpc.LogsServiceStub(channel)
        assert stub.Export(logs_service_pb2.ExportLogsServiceRequest(), timeout=10) == \
            logs_service_pb2.ExportLogsServiceResponse()


def test_health_and_stats(small_limits):
    conn = http.client.HTTPConnection("127.0.0.1", small_limits.http_port, timeout=10)
    conn.request("GET", "/healthz")
    assert conn.getresponse().status == 200
    post(small_limits, _request(4).SerializeToString(), {"Content-Type": PB})
    bad = _request(2, seed=7)
    bad.resource_spans[0].scope_spans[0].spans[0].span_id = b"\0" * 8
    post(small_limits, bad.SerializeToString(), {"Content-Type": PB})
    stats = small_limits.stats()
    assert (stats["spans_received"], stats["spans_written"], stats["spans_rejected"]) == (5, 5, 1)
    assert stats["requests"] == 2 and stats["requests_acked"] == 2 and stats["segment_count"] == 2
    assert (stats["queue_spans"], stats["queue_bytes"], stats["inflight_bytes"]) == (0, 0, 0)  # all written


TOKEN_A = "token-for-acme-0123456789"
TOKEN_B = "token-for-globex-0123456789"


@pytest.fixture
def authed(collector_factory, tmp_path):
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f'"{hash_token(TOKEN_A)}": acme\n"{TOKEN_B}": globex\n')
    return collector_factory("--tokens", str(tokens))


def test_missing_or_bad_token_is_401(authed):
    body = _request().SerializeToString()
    assert post(authed, body, {"Content-Type": PB})[0] == 401
    assert post(authed, body, {"Content-Type": PB, "Authorization": "Bearer wrong-token-000000000"})[0] == 401
    assert post(authed, body, {"Content-Type": PB, "Authorization": f"Basic {TOKEN_A}"})[0] == 401
    with grpc.insecure_channel(f"127.0.0.1:{authed.grpc_port}") as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.Export(_request(), timeout=10, metadata=(("authorization", "Bearer nope-nope-nope-nope"),))
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert read_spans(authed.data_dir) == []


def test_token_maps_to_tenant_and_foreign_claims_are_rejected(authed):
    own = _request(2, tenant="acme", seed=2)
    status, _, _ = post(authed, own.SerializeToString(), {"Content-Type": PB, "Authorization": f"Bearer {TOKEN_A}"})
    assert status == 200
    foreign = _request(3, tenant="globex", seed=3)
    status, _, body = post(authed, foreign.SerializeToString(),
                           {"Content-Type": PB, "Authorization": f"Bearer {TOKEN_A}"})
    partial = trace_service_pb2.ExportTraceServiceResponse.FromString(body).partial_success
    assert status == 200 and partial.rejected_spans == 3 and "claims tenant 'globex'" in partial.error_message
    mixed = _request(2, tenant="acme", seed=5)  # the resource is fine, one span claims another tenant
    mixed.resource_spans[0].scope_spans[0].spans[0].attributes.add(key="verdict.tenant_id").value.string_value = "globex"
    status, _, body = post(authed, mixed.SerializeToString(), {"Content-Type": PB, "Authorization": f"Bearer {TOKEN_A}"})
    assert trace_service_pb2.ExportTraceServiceResponse.FromString(body).partial_success.rejected_spans == 1
    with grpc.insecure_channel(f"127.0.0.1:{authed.grpc_port}") as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        unclaimed = _request(2, seed=4)
        response = stub.Export(unclaimed, timeout=10, metadata=(("authorization", f"Bearer {TOKEN_B}"),))
        assert response.partial_success.rejected_spans == 0
        claiming_acme = _request(2, tenant="acme", seed=6)
        response = stub.Export(claiming_acme, timeout=10, metadata=(("authorization", f"Bearer {TOKEN_B}"),))
        assert response.partial_success.rejected_spans == 2 and "claims tenant 'acme'" in response.partial_success.error_message
    rows = read_spans(authed.data_dir)
    by_tenant: dict[str, set[str]] = {}
    for r in rows:
        by_tenant.setdefault(r["tenant"], set()).add(r["span_id"])
    assert by_tenant == {"acme": set(span_ids(own)) | set(span_ids(mixed)[1:]), "globex": set(span_ids(unclaimed))}


def test_tokenless_mode_ignores_claims_unless_allowed(collector_factory, tmp_path):
    plain = collector_factory(data_dir=tmp_path / "plain")
    post(plain, _request(2, tenant="acme").SerializeToString(), {"Content-Type": PB})
    assert {r["tenant"] for r in read_spans(plain.data_dir)} == {"__verdict_local__"}
    allowing = collector_factory("--allow-claimed-tenant", data_dir=tmp_path / "allow")
    post(allowing, _request(2, tenant="acme").SerializeToString(), {"Content-Type": PB})
    status, _, body = post(allowing, _request(1, tenant="Not Valid!", seed=9).SerializeToString(), {"Content-Type": PB})
    assert trace_service_pb2.ExportTraceServiceResponse.FromString(body).partial_success.rejected_spans == 1
    assert {r["tenant"] for r in read_spans(allowing.data_dir)} == {"acme"}


def test_grpc_malformed_is_invalid_argument(small_limits):
    with grpc.insecure_channel(f"127.0.0.1:{small_limits.grpc_port}") as channel:
        raw: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        with pytest.raises(grpc.RpcError) as info:
            raw(b"\xff\xff\xff", timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "malformed protobuf" in (info.value.details() or "")


def test_content_from_other_exporters_is_redacted_even_with_a_token(authed):
    """Only spans whose scope carries the SDK's redaction claim at this version skip re-redaction."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from collector.redaction import SDK_REDACTION_ATTRIBUTE, redaction_version

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=f"{authed.url}/v1/traces", headers={"Authorization": f"Bearer {TOKEN_A}"})))
    content = '[{"role": "user", "parts": [{"type": "text", "content": "mail dave@example.com"}]}]'
    scopes = {"plain-otel": None, "old-sdk": "0.0.1", "verdict-sdk": redaction_version()}
    for name, claim in scopes.items():
        tracer = provider.get_tracer("verdict.tracing", "0.1.0",
                                     attributes={SDK_REDACTION_ATTRIBUTE: claim} if claim else None)
        with tracer.start_as_current_span(name) as span:
            span.set_attribute("gen_ai.input.messages", content)
    provider.shutdown()
    stored = {r["name"]: r["input_messages"] for r in read_spans(authed.data_dir)}
    assert "dave@example.com" not in stored["plain-otel"] and "<EMAIL>" in stored["plain-otel"]
    assert "dave@example.com" not in stored["old-sdk"]
    assert stored["verdict-sdk"] == content  # already redacted by the SDK: stored as sent
