"""Acknowledged => durable: kill -9 under load, restart, every acknowledged span is there."""

from __future__ import annotations

import http.client
import random
import threading
import time

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

    restarted = collector_factory(data_dir=collector.data_dir)
    stored = {r["span_id"] for r in read_spans(restarted.data_dir)}
    assert load.acked <= stored  # set containment: nothing acknowledged is missing
    assert not list((restarted.data_dir / "spans").rglob("*.tmp"))
    assert not list((restarted.data_dir / "tmp").iterdir())  # leftovers removed at start
    request = export_request(random.Random(99), 5, time.time_ns())
    conn = http.client.HTTPConnection("127.0.0.1", restarted.http_port, timeout=10)
    conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                 headers={"Content-Type": "application/x-protobuf"})
    assert conn.getresponse().status == 200
    assert set(span_ids(request)) <= {r["span_id"] for r in read_spans(restarted.data_dir)}


def test_sigterm_drains_queued_requests(collector_factory):
    collector = collector_factory("--batch-delay-ms", "1500")
    request = export_request(random.Random(5), 50, time.time_ns())
    result = {}

    def send():
        conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
        conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                     headers={"Content-Type": "application/x-protobuf"})
        result["status"] = conn.getresponse().status

    sender = threading.Thread(target=send)
    sender.start()
    time.sleep(0.5)  # the request is waiting for its group commit
    assert collector.stop() == 0
    sender.join(30)
    assert result["status"] == 200
    assert set(span_ids(request)) <= {r["span_id"] for r in read_spans(collector.data_dir)}
