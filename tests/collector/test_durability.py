"""Acknowledged => durable: kill -9 under load, restart, every acknowledged span is there."""

from __future__ import annotations

import http.client
import random
import threading
import time

import pytest

from collector.loadgen import export_request, span_ids
from tests.collector.conftest import read_spans


class LoadGenerator:
    """Threads posting distinct requests; records the span ids of every 200 response."""

    def __init__(self, port: int, clients: int = 4, batch: int = 200):
        self.port, self.clients, self.batch = port, clients, batch
        self.acked: set[str] = set()
        self.sent = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def _client(self, seed: int) -> None:
        rng = random.Random(seed)
        while not self._stop.is_set():
            request = export_request(rng, self.batch, time.time_ns())
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                             headers={"Content-Type": "application/x-protobuf"})
                status = conn.getresponse().status
            except OSError:
                return  # the server died mid-request: not acknowledged
            with self._lock:
                self.sent += 1
                if status == 200:
                    self.acked.update(span_ids(request))

    def __enter__(self):
        self._threads = [threading.Thread(target=self._client, args=(i,)) for i in range(self.clients)]
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(30)


def test_kill9_under_load_loses_no_acknowledged_span(collector_factory):
    collector = collector_factory("--batch-delay-ms", "50")
    with LoadGenerator(collector.http_port) as load:
        deadline = time.monotonic() + 20
        while len(load.acked) < 3000 and time.monotonic() < deadline:
            time.sleep(0.05)
        collector.kill9()  # mid-stream: requests are being decoded and written right now
    assert len(load.acked) >= 3000, "load generator got too few acknowledgements to test anything"

    # What a crash mid-write leaves (whether or not kill -9 hit one): a half-written temp segment.
    leftover = collector.data_dir / "tmp" / "1-crashed.parquet.tmp"
    leftover.write_bytes(b"PAR1 half a segment")
    restarted = collector_factory(data_dir=collector.data_dir)
    stored = {r["span_id"] for r in read_spans(restarted.data_dir)}
    assert load.acked <= stored  # set containment: nothing acknowledged is missing
    assert not [p for p in (restarted.data_dir / "spans").rglob("*") if p.is_file() and not p.name.endswith(".parquet")]
    assert not list((restarted.data_dir / "tmp").iterdir())  # leftovers removed at start, and logged
    assert any("removed leftover temp file" in line and leftover.name in line for line in restarted.log)
    request = export_request(random.Random(99), 5, time.time_ns())
    conn = http.client.HTTPConnection("127.0.0.1", restarted.http_port, timeout=10)
    conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                 headers={"Content-Type": "application/x-protobuf"})
    assert conn.getresponse().status == 200
    assert set(span_ids(request)) <= {r["span_id"] for r in read_spans(restarted.data_dir)}


def _post(port: int, request, timeout: float = 30) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                 headers={"Content-Type": "application/x-protobuf"})
    response = conn.getresponse()
    response.read()
    return response.status


def _export_grpc(port: int, request) -> int:
    """200 when the gRPC call is acknowledged (OK), else the status code's number."""
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            trace_service_pb2_grpc.TraceServiceStub(channel).Export(request, timeout=30)
        except grpc.RpcError as exc:
            return exc.code().value[0]
    return 200


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_sigterm_drains_queued_requests(collector_factory, transport):
    # The (test-only) slow writer holds the first request's write while the second one queues.
    collector = collector_factory("--batch-delay-ms", "1500", env={"VERDICT_COLLECTOR_TEST_WRITE_DELAY_MS": "4000"})
    requests = [export_request(random.Random(5 + i), 50, time.time_ns()) for i in range(2)]
    statuses: list[int] = []
    send, port = (_post, collector.http_port) if transport == "http" else (_export_grpc, collector.grpc_port)
    senders = [threading.Thread(target=lambda r=r: statuses.append(send(port, r))) for r in requests]

    def wait_until(condition, what: str) -> None:
        deadline = time.monotonic() + 20
        while not condition(stats := collector.stats()):
            assert time.monotonic() < deadline, f"never {what}: {stats}"
            time.sleep(0.05)

    senders[0].start()
    # Taken by the writer: no longer queued, still held in memory while it is written (slowly).
    wait_until(lambda s: s["queue_spans"] == 0 and s["queue_bytes"] > 0, "writing the first request")
    senders[1].start()
    wait_until(lambda s: s["queue_spans"] == 50, "queued the second request")  # waits for the next group commit
    assert collector.stats()["spans_written"] == 0
    assert collector.stop() == 0
    for sender in senders:
        sender.join(30)
    assert statuses == [200, 200]
    stored = {r["span_id"] for r in read_spans(collector.data_dir)}
    assert set(span_ids(requests[0])) | set(span_ids(requests[1])) <= stored


def test_lone_request_does_not_wait_out_the_batch_delay(collector_factory):
    # Nothing else is being decoded, so there is nothing to wait for: the batch is written at
    # once. Were the 120 s delay a constant wait, the client would time out after 20 s.
    collector = collector_factory("--batch-delay-ms", "120000")
    request = export_request(random.Random(6), 50, time.time_ns())
    assert _post(collector.http_port, request, timeout=20) == 200
    assert set(span_ids(request)) <= {r["span_id"] for r in read_spans(collector.data_dir)}


def test_failed_write_refuses_every_request_of_the_batch(collector_factory):
    # The slow writer makes the requests that arrive during the first (failing) write share the next one.
    collector = collector_factory("--batch-delay-ms", "300", env={"VERDICT_COLLECTOR_TEST_WRITE_DELAY_MS": "500"})
    # The tenant's partition directory cannot be created (a file is in the way): every write fails.
    blocker = collector.data_dir / "spans" / "tenant=__verdict_local__"
    blocker.write_bytes(b"")
    requests = [export_request(random.Random(20 + i), 20, time.time_ns()) for i in range(6)]
    replies: list[tuple[int, str]] = []

    def send(request):
        conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
        conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                     headers={"Content-Type": "application/x-protobuf"})
        response = conn.getresponse()
        response.read()
        replies.append((response.status, response.getheader("Retry-After", "")))

    threads = [threading.Thread(target=send, args=(r,)) for r in requests]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(replies) == 6 and all(status == 503 and int(after) >= 1 for status, after in replies), replies
    stats = collector.stats()
    assert stats["write_errors"] >= 1 and stats["requests_acked"] == 0 and stats["spans_written"] == 0
    assert stats["write_errors"] < len(requests)  # requests were grouped: one failed write refused several
    assert not list((collector.data_dir / "tmp").iterdir())  # no half-written segment left behind

    blocker.unlink()  # the disk recovers: the exporter's retry lands
    send(requests[0])
    assert replies[-1][0] == 200
    assert set(span_ids(requests[0])) == {r["span_id"] for r in read_spans(collector.data_dir)}


def test_segment_is_fsynced_then_renamed_then_its_directory_fsynced(tmp_path, monkeypatch):
    """The order of the real syscalls (wrapped to record them, still executed) for one segment write."""
    import os

    import pyarrow as pa

    from collector import lake

    calls: list[tuple[str, str]] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd):
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def rename(src, dst):
        calls.append(("rename", str(dst)))
        real_rename(src, dst)

    lake.prepare(tmp_path)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    final = lake.write_segment(tmp_path, "acme", "2026-01-02", pa.table({"x": [1]}))
    tmp_name = str(tmp_path / "tmp" / f"{final.name}.tmp")
    step = calls.index(("fsync", tmp_name))
    assert calls[step + 1] == ("rename", str(final))
    assert ("fsync", str(final.parent)) in calls[step + 2:]
