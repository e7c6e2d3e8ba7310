"""Background upkeep inside the collector: compaction (periodic, or early after many new segments), retention,
the deletion of what they (and shipping) retired once its grace period is over (collector.retire), and the call
audit /stats shows (collector.call_audit), after a compaction pass at most once per compaction interval."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from collector import call_audit, compaction, retention, retire
from collector.config import CollectorConfig
from collector.stats import Stats

log = logging.getLogger("verdict.collector")

MAX_BACKOFF_S = 300  # longest wait before retrying failed upkeep (e.g. a full disk)
AUDIT_EVERY_S = 300.0  # how often the call audit runs when compaction is not periodic (--compact-interval-s 0)
# At most this often whatever the compaction interval: the audit evaluates the identity rule, and with a short
# interval (tests use 0.3 s) it starved compaction itself under load.
AUDIT_MIN_S = 10.0


class Maintenance:
    def __init__(self, config: CollectorConfig, on_compacted: Callable[[], None] = lambda: None):
        self._config = config
        self._on_compacted = on_compacted  # e.g. Shipper.wake: compacted segments are ready to ship
        # Shipping ships compacted segments only: fresh ones are sealed once they wait ship_seal_after_s.
        self._seal_after_s = config.ship_seal_after_s if config.lake_url else None
        self._stopping = False
        self._wake = threading.Event()  # stop, or enough new segments to compact now
        self._lock = threading.Lock()
        self._new_segments = 0  # written since the last compaction run
        self._thread: threading.Thread | None = None
        self._retry_at = 0.0  # monotonic time before which a failed run is not retried

    def segments_written(self, count: int) -> None:
        """Called by the segment writer after each write."""
        with self._lock:
            self._new_segments += count
            due = self._enough_new_segments()
        if due:
            self._wake.set()

    def _enough_new_segments(self) -> bool:  # call with self._lock held
        threshold = self._config.compact_after_segments
        return threshold > 0 and self._new_segments >= threshold

    def recover(self) -> None:
        compaction.recover(self._config.data_dir)

    def run_once(self, stats: Stats | None = None) -> None:
        expired = retention.expire(self._config.data_dir, self._config.retention_days)
        merged = compaction.compact_all(self._config.data_dir, self._config.compact_min_segments, self._seal_after_s)
        retire.purge(self._config.data_dir, self._config.delete_grace_s)
        if stats is not None:
            stats.add(compactions=merged, partitions_expired=len(expired))

    def start(self, stats: Stats) -> None:
        self._thread = threading.Thread(target=self._loop, args=(stats,), name="maintenance", daemon=True)
        self._thread.start()

    def _loop(self, stats: Stats) -> None:
        compact_every = self._config.compact_interval_s
        if self._seal_after_s is not None:  # sealing is due at most this late
            compact_every = min(compact_every or self._seal_after_s, self._seal_after_s / 2)
        retain_every = self._config.maintenance_interval_s
        next_compact = time.monotonic() + compact_every if compact_every > 0 else float("inf")
        next_retain = time.monotonic()
        next_audit = 0.0  # the first compaction pass audits
        failing: str | None = None  # logged once when upkeep starts failing, once when it recovers
        backoff = 0.0
        while True:
            # After a failure nothing runs before the backoff is over, even when woken by new segments.
            resume = max(min(next_compact, next_retain), self._retry_at)
            self._wake.wait(max(0.05, resume - time.monotonic()))
            self._wake.clear()
            if self._stopping:
                return
            now = time.monotonic()
            if now < self._retry_at:
                continue
            try:
                if now >= next_retain:
                    stats.add(partitions_expired=len(
                        retention.expire(self._config.data_dir, self._config.retention_days)))
                    next_retain = now + retain_every
                audit = False
                with self._lock:
                    due = now >= next_compact or self._enough_new_segments()
                    if due:
                        self._new_segments = 0
                if due:
                    stats.add(compactions=compaction.compact_all(
                        self._config.data_dir, self._config.compact_min_segments, self._seal_after_s))
                    self._on_compacted()
                    next_compact = now + compact_every if compact_every > 0 else float("inf")
                    audit = now >= next_audit
                retire.purge(self._config.data_dir, self._config.delete_grace_s)
            except Exception as exc:  # upkeep must never take ingestion down; it retries with backoff
                backoff = min(max(2 * backoff, 1.0), MAX_BACKOFF_S)
                self._retry_at = time.monotonic() + backoff
                if failing is None:
                    log.error("maintenance failed, retrying with backoff up to %d s: %s: %s", MAX_BACKOFF_S,
                              type(exc).__name__, exc)
                failing = f"{type(exc).__name__}: {exc}"
            else:
                if failing is not None:
                    log.info("maintenance recovered")
                failing, backoff = None, 0.0
                if audit:  # after upkeep's outcome is settled (and logged): the audit handles its own failures
                    self._audit(stats)
                    next_audit = now + (max(self._config.compact_interval_s, AUDIT_MIN_S) if self._config.compact_interval_s
                                        else AUDIT_EVERY_S)

    def _audit(self, stats: Stats) -> None:
        """The call audit for /stats; a failure (an unreadable segment, the memory cap) is logged, never stops
        upkeep: /stats keeps the previous audit, whose `as_of` says how old it is."""
        import duckdb

        from collector.lake_reads import LakeChanged

        try:
            stats.set_call_audit(call_audit.audit_recent(self._config.data_dir))
        except (duckdb.Error, OSError, LakeChanged) as exc:
            log.warning("call audit for /stats failed: %s: %s", type(exc).__name__, str(exc).splitlines()[0][:300])

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
