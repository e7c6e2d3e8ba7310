"""Issue 16, collector items 1-7: each test drives the real collector process over real sockets."""

from __future__ import annotations

import gzip
import random
import socket
import time
import zlib

import psutil
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector.loadgen import export_request, span_ids
from tests.collector.conftest import read_spans
from tests.collector.test_protocol_errors import PB, post


def _request(n: int, seed: int) -> ExportTraceServiceRequest:
    return export_request(random.Random(seed), n, time.time_ns())


def _stored_ids(collector) -> set[str]:
    return {r["span_id"] for r in read_spans(collector.data_dir)}


def _tree_rss(pid: int) -> int:
    server = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [server, *server.children(recursive=True)])


def _workers_rss(pid: int) -> int:
    return sum(p.memory_info().rss for p in psutil.Process(pid).children(recursive=True))


# 1 -------------------------------------------------------------------------------------------
def test_every_gzip_member_and_zlib_stream_is_stored_and_trailing_garbage_refused(collector_factory):
    collector = collector_factory()
    a, b = _request(3, 1), _request(2, 2)
    body = gzip.compress(a.SerializeToString()) + gzip.compress(b.SerializeToString())
    status, _, _ = post(collector, body, {"Content-Type": PB, "Content-Encoding": "gzip"})
    assert status == 200
    c, d = _request(2, 3), _request(4, 4)
    body = zlib.compress(c.SerializeToString()) + zlib.compress(d.SerializeToString())
    status, _, _ = post(collector, body, {"Content-Type": PB, "Content-Encoding": "deflate"})
    assert status == 200
    # Concatenated protobuf messages merge their repeated fields: every span of every member is stored.
    assert _stored_ids(collector) == {*span_ids(a), *span_ids(b), *span_ids(c), *span_ids(d)}

    junk = _request(2, 5)
    status, _, reply = post(collector, gzip.compress(junk.SerializeToString()) + b"not gzip",
                            {"Content-Type": PB, "Content-Encoding": "gzip"})
    assert status == 400 and "trailing data" in Status.FromString(reply).message
    assert not set(span_ids(junk)) & _stored_ids(collector)


# 2 -------------------------------------------------------------------------------------------
def test_clients_declaring_large_bodies_and_sending_nothing_do_not_starve_ingest(collector_factory):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    collector = collector_factory("--body-idle-timeout-s", "2")  # default budget: 8 x 16 MiB declared would fill it
    liars = []
    for _ in range(8):
        sock = socket.create_connection(("127.0.0.1", collector.http_port), timeout=30)
        sock.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PB}\r\n"
                     f"Content-Length: {16 * 1024 * 1024}\r\n\r\n".encode())
        liars.append(sock)
    time.sleep(0.5)
    assert collector.stats()["inflight_bytes"] == 0  # nothing received, nothing held
    request = _request(5, 6)
    status, _, _ = post(collector, request.SerializeToString(), {"Content-Type": PB})
    assert status == 200
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces")))
    with provider.get_tracer("starve").start_as_current_span("honest") as span:
        honest = format(span.get_span_context().span_id, "016x")
    provider.shutdown()
    assert {honest, *span_ids(request)} <= _stored_ids(collector)
    assert collector.stats()["refused_overload"] == 0
    for sock in liars:  # a stalled body is cut off after --body-idle-timeout-s, not the 30 s read timeout
        assert sock.recv(4096).startswith(b"HTTP/1.1 408")
        sock.close()


# 3 -------------------------------------------------------------------------------------------
def _minimal_spans(n: int) -> bytes:
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for i in range(1, n + 1):
        span = spans.add(trace_id=i.to_bytes(16, "big"), span_id=i.to_bytes(8, "big"), name="s")
        span.start_time_unix_nano, span.end_time_unix_nano = 1, 2
    return request.SerializeToString()


def test_too_many_spans_is_413_and_decoding_memory_stays_bounded(collector_factory):
    collector = collector_factory("--max-spans-per-request", "20000")
    status, _, reply = post(collector, _minimal_spans(20_001), {"Content-Type": PB})
    assert status == 413
    assert "request has 20001 spans; the limit is 20000" in Status.FromString(reply).message
    # 330,000 minimal spans fit in 16 MiB and took a worker to 1.7 GB; refused before flattening now.
    status, _, _ = post(collector, _minimal_spans(330_000), {"Content-Type": PB})
    assert status == 413
    for _ in range(3):
        assert post(collector, _minimal_spans(20_000), {"Content-Type": PB})[0] == 200
    assert _tree_rss(collector.proc.pid) < 600 * 2**20
    assert collector.stats()["spans_written"] == 60_000


# 4 -------------------------------------------------------------------------------------------
def test_overlong_intent_keys_are_refused_before_any_cache(collector_factory):
    collector = collector_factory()
    assert post(collector, _request(2, 7).SerializeToString(), {"Content-Type": PB})[0] == 200  # warm the worker
    before = _workers_rss(collector.proc.pid)
    rng = random.Random(8)
    for r in range(10):  # 600 unique keys of 262,144 characters: ~160 MB if they were cached
        request = _request(60, 100 + r)
        for span in request.resource_spans[0].scope_spans[0].spans:
            key = span.attributes.add(key="verdict.intent_key")
            key.value.string_value = "".join(rng.choices("abcdefghij", k=16)) * (262_144 // 16)
        assert post(collector, request.SerializeToString(), {"Content-Type": PB})[0] == 200
    growth = _workers_rss(collector.proc.pid) - before
    assert growth < 64 * 2**20, f"decode worker grew by {growth / 2**20:.0f} MB"
    errors = {r["intent_key_error"] for r in read_spans(collector.data_dir, "intent_key_error IS NOT NULL")}
    assert errors == {"intent key is 262144 characters long; the limit is 64"}


# 5 -------------------------------------------------------------------------------------------
def _raw(collector, data: bytes, *, chunk: int | None = None) -> bytes:
    with socket.create_connection(("127.0.0.1", collector.http_port), timeout=30) as sock:
        try:
            for i in range(0, len(data), chunk or len(data)):
                sock.sendall(data[i:i + (chunk or len(data))])
        except OSError:  # the server answered and closed while we were still sending
            pass
        return sock.recv(4096)


def test_oversized_or_too_many_headers_get_431(collector_factory):
    collector = collector_factory()
    start = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
    assert _raw(collector, start + b"X-Big: " + b"a" * 100_000 + b"\r\nContent-Length: 0\r\n\r\n").startswith(
        b"HTTP/1.1 431")
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(150))
    reply = _raw(collector, start + many + b"Content-Length: 0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 431") and b"more than 100 request header fields" in reply
    # A header that never ends, streamed in pieces: cut off once it passes the limit.
    reply = _raw(collector, start + b"X-Endless: " + b"a" * 300_000, chunk=4096)
    assert reply.startswith(b"HTTP/1.1 431") and b"request headers exceed 65536 bytes" in reply
    assert post(collector, _request(1, 9).SerializeToString(), {"Content-Type": PB})[0] == 200


# 6 -------------------------------------------------------------------------------------------
def _get(collector, path: str) -> tuple[int, bytes]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{collector.url}{path}", timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_failing_writes_degrade_health_and_failed_compaction_backs_off(collector_factory):
    collector = collector_factory("--compact-interval-s", "1", "--compact-min-segments", "2",
                                  "--min-free-disk-bytes", "0")
    for seed in (10, 11):
        assert post(collector, _request(2, seed).SerializeToString(), {"Content-Type": PB})[0] == 200
    server = psutil.Process(collector.proc.pid)
    # No file may grow beyond 64 bytes: every segment and journal write fails, as on a full disk.
    unlimited = server.rlimit(psutil.RLIMIT_FSIZE)
    server.rlimit(psutil.RLIMIT_FSIZE, (64, unlimited[1]))
    refused = _request(2, 12)
    assert post(collector, refused.SerializeToString(), {"Content-Type": PB})[0] == 503
    status, health = _get(collector, "/healthz")
    assert status == 503 and b"degraded" in health and b"segment writes are failing" in health
    time.sleep(4)  # compaction is due every second and fails every time
    failures = "".join(collector.log).count("maintenance failed")
    assert failures == 1, f"{failures} failure lines in 4 s"
    assert "Traceback" not in "".join(collector.log)

    server.rlimit(psutil.RLIMIT_FSIZE, unlimited)
    assert post(collector, refused.SerializeToString(), {"Content-Type": PB})[0] == 200
    assert _get(collector, "/healthz")[0] == 200
    deadline = time.monotonic() + 30
    while collector.stats()["compactions"] == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert collector.stats()["compactions"] >= 1 and "maintenance recovered" in "".join(collector.log)
    assert collector.stop() == 0
    assert list((collector.data_dir / "compaction").glob("*.tmp")) == []  # no half-written journal left
    assert set(span_ids(refused)) <= _stored_ids(collector)


def test_half_written_compaction_journal_is_removed_at_once(collector_factory):
    collector = collector_factory("--compact-interval-s", "1", "--compact-min-segments", "2",
                                  "--min-free-disk-bytes", "0")
    for seed in (13, 14):
        assert post(collector, _request(2, seed).SerializeToString(), {"Content-Type": PB})[0] == 200
    server = psutil.Process(collector.proc.pid)
    server.rlimit(psutil.RLIMIT_FSIZE, (64, server.rlimit(psutil.RLIMIT_FSIZE)[1]))
    deadline = time.monotonic() + 30
    while "maintenance failed" not in "".join(collector.log) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list((collector.data_dir / "compaction").glob("*.tmp")) == []
    assert collector.stop() == 0
    assert list((collector.data_dir / "compaction").glob("*.tmp")) == []


# 7 -------------------------------------------------------------------------------------------
def test_client_disconnect_mid_body_is_counted_without_a_traceback(collector_factory):
    collector = collector_factory()
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", collector.http_port), timeout=10) as sock:
            sock.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PB}\r\n"
                         f"Content-Length: 100000\r\n\r\n".encode() + b"\0" * 1000)
            time.sleep(0.2)
    deadline = time.monotonic() + 10
    while collector.stats()["client_disconnects"] < 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert collector.stats()["client_disconnects"] == 5
    assert post(collector, _request(1, 15).SerializeToString(), {"Content-Type": PB})[0] == 200
    log = "".join(collector.log)
    assert "Traceback" not in log and "ClientDisconnect" not in log and "ERROR" not in log


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_too_many_compressed_members_is_400(collector_factory, encoding):
    collector = collector_factory()
    compress = gzip.compress if encoding == "gzip" else zlib.compress
    body = compress(_request(1, 16).SerializeToString()) + compress(b"") * 64
    status, _, reply = post(collector, body, {"Content-Type": PB, "Content-Encoding": encoding})
    assert status == 400 and "more than 64 members" in Status.FromString(reply).message
    assert _stored_ids(collector) == set()
