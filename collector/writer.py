"""Group commit: decoded spans from many requests become one durable segment per partition.

Requests wait (bounded) in memory; a single writer thread takes everything waiting once the
oldest request has waited `batch_delay`, or `max_batch_spans` are queued, or every request that
was already being decoded when the oldest one was queued has been queued too (the delay buys
batching only while more spans are on their way — the idea of PostgreSQL's
commit_delay/commit_siblings; later arrivals do not hold the batch, so a steady stream does not
turn the delay into a constant wait), writes one segment per (tenant, date), and only after
every segment is fsync'd and renamed resolves the requests' futures. A failed write fails every
request in that batch (the client retries; duplicates are removed by readers and compaction),
so nothing is acknowledged that is not on disk.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from collector import lake
from collector.stats import Stats

log = logging.getLogger("verdict.collector")


class Overloaded(Exception):
    """Refused for now: 429 (queue full) or 503 (disk low, shutting down, write failed)."""

    def __init__(self, status: int, message: str, retry_after_s: int = 1):
        super().__init__(status, message, retry_after_s)
        self.status = status
        self.message = message
        self.retry_after_s = retry_after_s


@dataclass
class _Pending:
    batches: list  # [(table, tenant, date, pyarrow.RecordBatch)]; table: "spans" or "logs"
    spans: int
    nbytes: int
    future: Future = field(default_factory=Future)
    enqueued: float = field(default_factory=time.monotonic)
    horizon: int = 0  # requests that had started decoding when this one was queued: tickets below it


@dataclass(frozen=True)
class WriterLimits:
    batch_delay_s: float
    max_batch_spans: int
    queue_max_bytes: int
    min_free_disk_bytes: int
    test_write_delay_s: float = 0.0


class SegmentWriter:
    def __init__(
        self, data_dir: Path, limits: WriterLimits, stats: Stats, on_segments: Callable[[int], None] = lambda n: None
    ):
        self._data_dir = data_dir
        self._limits = limits
        self._stats = stats
        self._on_segments = on_segments  # e.g. Maintenance.segments_written
        self._cond = threading.Condition()
        self._pending: list[_Pending] = []
        self._queued_spans = 0
        self._held_bytes = 0  # waiting + being written
        self._next_ticket = 0
        self._decoding: set[int] = set()  # tickets of requests being decoded: their spans will join a batch
        self._closing = False
        self._free_bytes = (0.0, 0)  # (checked at, free bytes)
        self._write_failure: str | None = None  # why the last segment write failed; None once one succeeds
        self._thread = threading.Thread(target=self._run, name="segment-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # --- admission -----------------------------------------------------------------------
    def check_admission(self, extra_bytes: int = 0) -> None:
        """Raise Overloaded when a request must be refused now (cheap; called before decoding)."""
        if self._closing:
            raise Overloaded(503, "collector is shutting down", 5)
        if self._held_bytes + extra_bytes > self._limits.queue_max_bytes and self._held_bytes > 0:
            self._stats.add(refused_overload=1)
            raise Overloaded(429, "ingest queue is full; retry later", 1)
        if self._disk_free() < self._limits.min_free_disk_bytes:
            self._stats.add(refused_disk=1)
            raise Overloaded(503, "free disk space is below the configured floor", 30)

    def _disk_free(self) -> int:
        checked_at, free = self._free_bytes
        now = time.monotonic()
        if now - checked_at > 1.0:
            free = shutil.disk_usage(self._data_dir).free
            self._free_bytes = (now, free)
        return free

    @contextlib.contextmanager
    def arriving(self) -> Iterator[None]:
        """Wrap decoding + submit() of one request: a batch holds for those open when its oldest request was queued."""
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._decoding.add(ticket)
        try:
            yield
        finally:
            with self._cond:
                self._decoding.discard(ticket)
                self._cond.notify()

    def submit(self, batches: list, spans: int) -> Future:
        """Queue decoded spans; the future resolves once they are durable."""
        nbytes = sum(b.nbytes for *_, b in batches)
        pending = _Pending(batches, spans, nbytes)
        if spans == 0:
            pending.future.set_result(None)
            return pending.future
        with self._cond:
            self.check_admission(nbytes)
            pending.horizon = self._next_ticket
            self._pending.append(pending)
            self._queued_spans += spans
            self._held_bytes += nbytes
            self._cond.notify()
        return pending.future

    def write_failure(self) -> str | None:
        """Why the last segment write failed (for /healthz), or None when it succeeded."""
        return self._write_failure

    def queue_depth(self) -> tuple[int, int]:
        return self._queued_spans, self._held_bytes

    # --- writing -------------------------------------------------------------------------
    def _take_batch(self) -> list[_Pending] | None:
        with self._cond:
            while not self._pending:
                if self._closing:
                    return None
                self._cond.wait()
            # The delay bounds how long the oldest waiting request waits, not the writer's nap.
            deadline = self._pending[0].enqueued + self._limits.batch_delay_s
            horizon = self._pending[0].horizon
            while (
                not self._closing
                and self._queued_spans < self._limits.max_batch_spans
                and any(ticket < horizon for ticket in self._decoding)
            ):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            taken, self._pending = self._pending, []
            self._queued_spans = 0
            return taken

    def _run(self) -> None:
        while (taken := self._take_batch()) is not None:
            try:
                self._write(taken)
            except Exception as exc:  # disk full, I/O error: refuse, never acknowledge
                log.error("segment write failed, %d request(s) refused: %s", len(taken), exc)
                self._write_failure = f"segment writes are failing: {type(exc).__name__}: {exc}"
                self._stats.add(write_errors=1)
                error = Overloaded(503, f"could not write to disk: {type(exc).__name__}", 5)
                for p in taken:
                    p.future.set_exception(error)
            else:
                self._write_failure = None
                for p in taken:
                    p.future.set_result(None)
            finally:
                with self._cond:
                    self._held_bytes -= sum(p.nbytes for p in taken)

    def _write(self, taken: list[_Pending]) -> None:
        import pyarrow as pa

        by_partition: dict[tuple[str, str, str], list] = {}
        for p in taken:
            for kind, tenant, date, batch in p.batches:
                by_partition.setdefault((kind, tenant, date), []).append(batch)
        if self._limits.test_write_delay_s:
            time.sleep(self._limits.test_write_delay_s)
        started = time.monotonic()
        rows = {"spans": 0, "logs": 0}
        for (kind, tenant, date), batches in by_partition.items():
            table = pa.Table.from_batches(batches)
            lake.write_segment(self._data_dir, tenant, date, table, table_name=kind)
            rows[kind] += table.num_rows
        self._stats.add(spans_written=rows["spans"], logs_written=rows["logs"], segments_written=len(by_partition),
                        requests_acked=len(taken))
        self._stats.observe_write(time.monotonic() - started)
        self._on_segments(len(by_partition))

    def close(self, timeout: float = 60.0) -> None:
        """Stop admitting, write everything already queued, then stop."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join(timeout)
