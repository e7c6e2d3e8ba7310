"""Readers never fail, and never see a span twice or miss one, while the collector compacts under ingest.

The real collector process compacts every 0.3 s (a segment or two at a time) while requests land, and deletes
what it replaced after a short grace period (8 s, above the UI snapshot's lifetime); meanwhile `verdict sql` runs as a process, the same query
runs in-process in a loop, the daemon's sample step runs in a loop and the UI serves `/traces` (the app in
process, its snapshot included). Every read must succeed; every count must lie between the spans
acknowledged before the query started and those sent by its end, each span once.
"""

from __future__ import annotations

import http.client
import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from starlette.testclient import TestClient

from collector import lake
from collector.compaction import COMPACTED_PREFIX
from collector.loadgen import export_request, span_ids
from collector.sql import execute
from verdict.tenancy import LOCAL_TENANT, TenantId
from verdict_daemon.config import Sampling
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.state import StateStore
from verdict_ui.access import Access
from verdict_ui.app import Settings, create_app

COUNT = "SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans"
RUN_S = 20.0  # of concurrent ingest, compaction and reads (each reader does at least a few rounds)
GRACE_S = 8.0  # above the UI snapshot's lifetime; replaced segments are purged during the run


@dataclass
class Ledger:
    """Spans sent and acknowledged so far; what readers saw and what failed."""

    sent: int = 0
    acked: set = field(default_factory=set)  # span ids (random: unique)
    reads: dict = field(default_factory=dict)  # reader -> rounds done
    failures: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def check_count(self, reader: str, lower: int, counted: tuple[int, int]) -> None:
        total, distinct = counted
        with self.lock:
            upper = self.sent
        if not (total == distinct and lower <= total <= upper):
            self.failures.append(f"{reader}: {total} rows, {distinct} distinct; acknowledged before {lower}, "
                                 f"sent by the end {upper}")


def _ingest(port: int, ledger: Ledger, stop: threading.Event) -> None:
    rng = random.Random(28)
    while not stop.is_set():
        request = export_request(rng, 20, time.time_ns())
        ids = set(span_ids(request))
        with ledger.lock:
            ledger.sent += len(ids)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                     headers={"Content-Type": "application/x-protobuf"})
        if conn.getresponse().status == 200:
            with ledger.lock:
                ledger.acked |= ids
        conn.close()
        time.sleep(0.02)


def _loop(name: str, ledger: Ledger, stop: threading.Event, read: Callable[[int], None]) -> Callable[[], None]:
    def run() -> None:
        while not stop.is_set():
            with ledger.lock:
                lower = len(ledger.acked)
            try:
                read(lower)
            except Exception as exc:  # the failure under test: kept, and the loop goes on
                ledger.failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
            ledger.reads[name] = ledger.reads.get(name, 0) + 1
    return run


def _readers(data_dir: Path, state_dir: Path, ledger: Ledger) -> dict[str, Callable[[int], None]]:
    tenant = TenantId(LOCAL_TENANT)
    # a 2 s snapshot: a page read at its end may take seconds on a loaded machine, and must still end within GRACE_S
    ui = TestClient(create_app(Settings(data_dir, Access.create(tenant, None), ("testserver",), snapshot_ttl=2.0)),
                    raise_server_exceptions=False)
    store = StateStore(state_dir)

    def cli(lower: int) -> None:
        done = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "sql", COUNT, "--data-dir", str(data_dir),
                               "--format", "json"], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise AssertionError(f"exit {done.returncode}: {done.stderr.strip()}")
        (row,) = json.loads(done.stdout)
        ledger.check_count("verdict sql", lower, tuple(row.values()))

    def in_process(lower: int) -> None:
        _columns, (row,) = execute(data_dir, LOCAL_TENANT, COUNT)
        ledger.check_count("sql in process", lower, row)

    def sample_step(_lower: int) -> None:
        try:
            sample(store, data_dir, tenant, Sampling(per_cluster_per_window=1000), datetime.now(UTC))
        except DaemonError as exc:
            raise AssertionError(f"{exc.code}: {exc}") from None

    def traces_page(_lower: int) -> None:
        page = ui.get("/traces")
        if page.status_code != 200:
            raise AssertionError(f"/traces answered {page.status_code}: {page.text[-300:]}")

    return {"verdict sql": cli, "sql in process": in_process, "sample step": sample_step, "/traces": traces_page}


def test_readers_never_fail_and_see_each_span_once_while_compaction_runs(collector_factory, tmp_path):
    collector = collector_factory("--compact-interval-s", "0.3", "--compact-min-segments", "1",
                                  "--compact-after-segments", "2", "--delete-grace-s", str(GRACE_S))
    ledger, stop = Ledger(), threading.Event()
    ingest = threading.Thread(target=_ingest, args=(collector.http_port, ledger, stop))
    ingest.start()
    while not ledger.acked:  # the first segment: readers then have a lake to read
        time.sleep(0.05)
    readers = _readers(collector.data_dir, tmp_path / "state", ledger)
    threads = [threading.Thread(target=_loop(name, ledger, stop, read)) for name, read in readers.items()]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    while time.monotonic() - started < RUN_S or min(ledger.reads.get(n, 0) for n in readers) < 3:
        time.sleep(0.2)
    stop.set()
    for thread in [ingest, *threads]:
        thread.join(120)
    stats = collector.stats()
    assert stats["compactions"] >= 10, stats  # compaction really ran throughout
    fresh_on_disk = [p for _t, _d, d in lake.partitions(collector.data_dir) for p in lake.segments(d)
                     if not p.name.startswith(COMPACTED_PREFIX)]
    # replaced ones were deleted while the readers ran (how many depends on the machine's load: at least a few)
    assert stats["segments_written"] - len(fresh_on_disk) >= 10, stats
    assert ledger.failures == [], f"{len(ledger.failures)} failed reads of {ledger.reads}:\n" + "\n".join(
        ledger.failures[:20])
    # At rest, every acknowledged span once.
    _columns, (row,) = execute(collector.data_dir, LOCAL_TENANT, COUNT)
    assert row == (len(ledger.acked), len(ledger.acked))
    _columns, ids = execute(collector.data_dir, LOCAL_TENANT, "SELECT span_id FROM spans")
    assert {i for (i,) in ids} == ledger.acked
