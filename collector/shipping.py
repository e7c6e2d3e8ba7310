"""The outbox: every finished segment goes to the object store, exactly once as seen by readers.

The queue is the lake itself. A segment is *finished* when it will never change: a compacted span
segment (`c-…`) of spans or logs: fresh segments are sealed into one by compaction first, so each row is in
one object this collector ships and the shipper never deletes in the store (with several collectors on one
lake, the lake compactor merges their objects: collector.lake_compactor). A
finished segment without a record under <data>/outbox/ is unshipped. Shipping one:

  1. PUT it at `<lake-url>/<same relative path>` (atomic: the object is whole or absent);
  2. HEAD it: size and ETag (the MD5 we computed) must match, else retry;
  3. write the record `outbox/<relative path>.json` durably;
  4. once the record is `delete_after_s` old: retire the local segment (collector.retire: hidden from local
     readers, deleted after the grace period); once it is gone, delete the record.

A crash before 3 re-uploads the same bytes under the same key (idempotent); a crash inside 4 leaves a
record without its segment, which the next pass removes. Readers take each relative path once,
whether it is local, remote or both (collector.lake_source), so nothing is counted twice meanwhile.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from collector import compaction, lake, lake_manifest, retire
from collector.compaction import COMPACTED_PREFIX, _crash_point
from collector.objectstore import ObjectLake
from collector.stats import Stats

log = logging.getLogger("verdict.collector")

POLL_S = 2.0  # finished segments are also announced by compaction (wake()); this catches log segments
MAX_BACKOFF_S = 300.0


def outbox_dir(data_dir: Path) -> Path:
    return data_dir / "outbox"


@dataclass(frozen=True)
class Backlog:
    segments: int  # local segments not shipped yet (fresh span segments included: they are shipped once sealed)
    oldest_age_s: float | None


def _finished(table: str, name: str) -> bool:
    return name.startswith(COMPACTED_PREFIX)  # spans and logs alike: fresh segments are sealed by compaction


class Shipper:
    def __init__(self, data_dir: Path, store: ObjectLake, delete_after_s: float, stats: Stats):
        self._data_dir = data_dir
        self._store = store
        self._delete_after_s = delete_after_s
        self._stats = stats
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._failure: str | None = None
        self._manifests: set[str] = set()  # tenants whose manifest is known to exist

    def _record(self, segment: Path) -> Path:
        return outbox_dir(self._data_dir) / f"{segment.relative_to(self._data_dir)}.json"

    def _local_segments(self) -> list[tuple[str, Path]]:
        """Segments readers may still list: retired ones (replaced, expired, shipped) are on their way out."""
        retired = retire.read(self._data_dir)
        return [(table, seg) for table in lake.TABLES for _t, _d, part in lake.partitions(self._data_dir, table)
                for seg in lake.segments(part) if not retired.hides(seg.relative_to(self._data_dir).as_posix())]

    def backlog(self) -> Backlog:
        unshipped = [seg for _table, seg in self._local_segments() if not self._record(seg).exists()]
        if not unshipped:
            return Backlog(0, None)
        oldest = min(lake.segment_written_ms(seg.name) for seg in unshipped)
        return Backlog(len(unshipped), round(max(0.0, time.time() - oldest / 1000), 1))

    def failure(self) -> str | None:
        """Why the last pass failed (for /healthz), or None."""
        return self._failure

    def ship_once(self) -> int:
        """Upload every finished, unshipped segment (oldest first); delete shipped ones that are due. Returns
        the number uploaded. Raises on the first failure (the caller retries with backoff)."""
        # A compacted segment whose journal is still open may be rolled back by recovery: not finished yet.
        journals = compaction.journal_dir(self._data_dir)
        merging = {json.loads(j.read_bytes())["output"] for j in journals.glob("*.json")} if journals.exists() else set()
        pending = sorted(((seg for table, seg in self._local_segments()
                           if _finished(table, seg.name) and seg.name not in merging
                           and not self._record(seg).exists())),
                         key=lambda seg: lake.segment_written_ms(seg.name))
        shipped = 0
        for segment in pending:
            if self._stopping:
                break
            if self._ship(segment):
                shipped += 1
        self._delete_due()
        return shipped

    def _ship(self, segment: Path) -> bool:
        relative = str(segment.relative_to(self._data_dir))
        table, tenant_dir = segment.relative_to(self._data_dir).parts[:2]
        if table == "spans" and tenant_dir not in self._manifests:  # before the tenant's first object: readers
            lake_manifest.ensure(self._store, "spans", tenant_dir.removeprefix("tenant="))  # then dedupe writers
            self._manifests.add(tenant_dir)
        try:
            uploaded = self._store.upload(segment, relative)
        except FileNotFoundError:
            if segment.exists():  # the store's 404 (no such bucket) is a FileNotFoundError too
                raise
            return False  # removed meanwhile by retention: nothing left to ship
        _crash_point("ship-uploaded")
        record = self._record(segment)
        lake.ensure_dir(record.parent)
        lake.write_durably(record, json.dumps({"key": uploaded.key, "size": uploaded.size, "etag": uploaded.etag,
                                           "shipped_at": time.time()}).encode())
        _crash_point("ship-recorded")
        self._stats.add(segments_shipped=1, bytes_shipped=uploaded.size)
        return True

    def _delete_due(self) -> None:
        root = outbox_dir(self._data_dir)
        now = time.time()
        retired = retire.read(self._data_dir)
        due = []
        for record in sorted(root.rglob("*.json")) if root.exists() else []:
            relative = str(record.relative_to(root))[: -len(".json")]
            segment = self._data_dir / relative
            if segment.exists():
                if not retired.hides(relative) and (
                        now - json.loads(record.read_bytes())["shipped_at"] >= self._delete_after_s):
                    due.append(segment)
                continue
            record.unlink()  # its segment is gone (purged after it was retired, or expired by retention)
            lake.fsync_dir(record.parent)
        retire.retire(self._data_dir, due)
        self._stats.add(segments_deleted_after_ship=len(due))
        if due:
            _crash_point("ship-deleted")

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="shipper", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        backoff = 0.0
        while not self._stopping:
            try:
                self.ship_once()
            except Exception as exc:  # the store is down, credentials expired: keep the outbox, retry later
                backoff = min(max(2 * backoff, 1.0), MAX_BACKOFF_S)
                if self._failure is None:
                    log.error("shipping to %s failed, retrying with backoff up to %d s: %s: %s", self._store.url,
                              MAX_BACKOFF_S, type(exc).__name__, exc)
                self._failure = f"shipping to the object store is failing: {type(exc).__name__}: {exc}"
                self._stats.add(ship_errors=1)
            else:
                if self._failure is not None:
                    log.info("shipping recovered")
                self._failure, backoff = None, 0.0
            self._wake.wait(backoff or POLL_S)
            self._wake.clear()

    def stop(self) -> None:
        """Stop after the current upload; what is left is shipped by the next start (the outbox is durable)."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
