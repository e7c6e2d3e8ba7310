"""The lake compactor: one collector at a time (a lease object) merges what every collector shipped.

Each collector ships its own compacted segments (`c-…`, collector.shipping); two collectors can hold the same
span (an exporter retried on another collector after a timeout). The lease holder folds each tenant's
shipped objects, per date, in bounded steps, into merged objects (`m-…`) that hold each (trace_id, span_id)
once across the lake, and commits each step with one conditional PUT of the tenant's manifest
(collector.lake_manifest): at that instant readers take the merged rows and drop the inputs. Until then the
inputs are fresh to readers (deduplicated at read time), so a reader sees each span once at every moment.

A step: read the inputs and the date's merged rows in the inputs' time range (a copy keeps its original's
start time) through the store, write the new rows sorted by start time to tmp/, upload (verified), commit
{merged += output, absorbed += inputs}. Inputs are deleted `grace_s` after they were absorbed (a query that
listed the lake before the commit may still read them), expired dates' objects likewise; an `m-…` object no
manifest names after `grace_s` is a crashed compactor's output and is deleted. A crash at any point leaves
either the old manifest (the output is an orphan) or the new one (the inputs wait for deletion).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from collector import call_input, lake, lake_manifest
from collector.compaction import _crash_point, _file_list, _quote
from collector.lake_manifest import MERGED_PREFIX, SHIPPED_PREFIX, Lease, Manifest, ManifestConflict
from collector.objectstore import ObjectLake, ObjectMeta
from collector.stats import Stats

log = logging.getLogger("verdict.collector")

STEP_MAX_OBJECTS = 64
STEP_MAX_BYTES = 16 * 1024 * 1024  # as collector.compaction: a step's rows are held to deduplicate and sort them
ABSORBED_KEEP_S = 86400.0  # absorbed entries outlive their objects this long (a collector may re-ship one)
MAX_BACKOFF_S = 300.0


@dataclass(frozen=True)
class PassResult:
    merged_objects: int = 0  # inputs folded into merged objects
    outputs: int = 0
    deleted: int = 0
    conflicts: int = 0


class LakeCompactor:
    def __init__(self, data_dir: Path, remote: ObjectLake, interval_s: float, grace_s: float, retention_days: int,
                 stats: Stats, holder: str | None = None):
        self._data_dir = data_dir
        self._remote = remote
        self._interval_s = interval_s
        self._grace_s = grace_s
        self._retention_days = retention_days
        self._stats = stats
        self._holder = holder or uuid.uuid4().hex
        self._ttl_s = max(5.0, 3 * interval_s)  # renewed before every step: a dead holder is replaced this late
        self._lease: Lease | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the role ----------------------------------------------------------------------------------------------

    def _hold(self) -> bool:
        self._lease = lake_manifest.acquire_lease(self._remote, self._holder, self._ttl_s, self._lease)
        if self._lease is None:  # maybe ours expired while we slept: try as a newcomer
            self._lease = lake_manifest.acquire_lease(self._remote, self._holder, self._ttl_s)
        return self._lease is not None

    def run_once(self, now: float | None = None) -> PassResult | None:
        """One pass over every tenant if this process holds (or takes) the lease; None when another does."""
        if not self._hold():
            return None
        total = PassResult()
        for tenant_dir in self._remote.list_dirs("spans/"):
            if self._stopping.is_set() or not self._hold():
                break
            result = self._tenant(tenant_dir.removeprefix("tenant="), now or time.time())
            total = PassResult(*(a + b for a, b in zip(
                (total.merged_objects, total.outputs, total.deleted, total.conflicts),
                (result.merged_objects, result.outputs, result.deleted, result.conflicts), strict=True)))
        self._stats.add(lake_merged_objects=total.merged_objects, lake_deleted_objects=total.deleted)
        return total

    # -- one tenant --------------------------------------------------------------------------------------------

    def _tenant(self, tenant: str, now: float) -> PassResult:
        manifest = lake_manifest.read(self._remote, "spans", tenant)
        if manifest is None:
            return PassResult()  # no collector of this version shipped here yet: nothing to merge under
        listing = self._remote.list(f"spans/tenant={tenant}/")
        merged = outputs = conflicts = 0
        try:
            manifest = self._expire(tenant, manifest, listing, now)
            by_date: dict[str, list[str]] = {}
            for relative in sorted(listing, key=lambda r: lake.segment_written_ms(PurePosixPath(r).name)
                                   if r.endswith(lake.SEGMENT_SUFFIX) else 0):
                name = PurePosixPath(relative).name
                date = PurePosixPath(relative).parent.name.removeprefix("date=")
                if name.startswith(SHIPPED_PREFIX) and manifest.reader_name(relative) is not None:
                    by_date.setdefault(date, []).append(relative)
            for date, inputs in sorted(by_date.items()):
                for step in _steps(inputs, listing):
                    if self._stopping.is_set() or not self._hold():
                        return PassResult(merged, outputs, 0, conflicts)
                    manifest, wrote = self._merge(tenant, date, step, manifest, listing, now)
                    merged += len(step)
                    outputs += wrote
        except ManifestConflict as exc:  # another compactor (a lease that expired under us): next pass
            log.warning("lake compaction of tenant %s stopped: %s", tenant, exc)
            return PassResult(merged, outputs, 0, conflicts + 1)
        deleted = self._delete_due(tenant, manifest, listing, now)
        return PassResult(merged, outputs, deleted, conflicts)

    def _expire(self, tenant: str, manifest: Manifest, listing: dict[str, int], now: float) -> Manifest:
        if self._retention_days <= 0:
            return manifest
        cutoff = (dt.datetime.fromtimestamp(now, dt.UTC).date() - dt.timedelta(days=self._retention_days)).isoformat()
        dates = {PurePosixPath(r).parent.name.removeprefix("date=") for r in listing if "/date=" in r}
        due = {d: now for d in dates if _is_date(d) and d < cutoff and d not in manifest.expired}
        if not due:
            return manifest
        log.info("lake retention: tenant %s, dates %s expire", tenant, ", ".join(sorted(due)))
        return lake_manifest.commit(self._remote, "spans", tenant, replace(
            manifest, expired={**manifest.expired, **due}))

    def _merge(self, tenant: str, date: str, inputs: list[str], manifest: Manifest, listing: dict[str, int],
               now: float) -> tuple[Manifest, int]:
        """One committed step: `inputs` absorbed, their rows not merged yet in a new merged object (if any)."""
        partition = f"spans/tenant={tenant}/date={date}"
        output = f"{partition}/{lake.segment_name(MERGED_PREFIX)}"
        merged_here = [r for r in manifest.merged if r.startswith(partition + "/")]
        tmp = lake.tmp_dir(self._data_dir) / f"lake-{uuid.uuid4().hex}.parquet"
        lake.ensure_dir(tmp.parent)
        stamp = dt.datetime.fromtimestamp(now, dt.UTC)  # objects are immutable: any stable modified time serves
        known = {self._remote.object_url(r): ObjectMeta(listing.get(r, manifest.merged.get(r, 0)), stamp)
                 for r in [*inputs, *merged_here]}
        try:
            rows = self._write_new_rows(tmp, [self._remote.object_url(r) for r in inputs],
                                        [self._remote.object_url(r) for r in merged_here], known)
            wrote = 0
            merged = dict(manifest.merged)
            if rows:
                uploaded = self._remote.upload(tmp, output)
                _crash_point("lake-uploaded")
                merged[output] = uploaded.size
                wrote = 1
        finally:
            tmp.unlink(missing_ok=True)
        if not self._hold():  # lost the lease meanwhile: leave the output an orphan rather than race
            raise ManifestConflict("the compactor lease was lost")
        committed = lake_manifest.commit(self._remote, "spans", tenant, replace(
            manifest, merged=merged, absorbed={**manifest.absorbed, **dict.fromkeys(inputs, now)}))
        _crash_point("lake-committed")
        log.info("lake compaction: %d objects of %s folded into %s", len(inputs), partition,
                 output if wrote else "nothing new")
        return committed, wrote

    def _write_new_rows(self, target: Path, inputs: list[str], merged: list[str], known: dict[str, ObjectMeta]) -> int:
        """Write the inputs' rows that `merged` does not hold yet, each once, to `target`; returns how many."""
        import duckdb

        con = duckdb.connect(config={"threads": 1, "memory_limit": "256MB", "autoinstall_known_extensions": False,
                                     "autoload_known_extensions": False})
        try:
            con.register_filesystem(self._remote.read_filesystem(known))
            fresh = f"read_parquet({_file_list(inputs)}, union_by_name=true, hive_partitioning=false)"
            already = ""
            lo, hi = con.execute(f"SELECT min(start_time)::VARCHAR, max(start_time)::VARCHAR FROM {fresh}").fetchone()  # type: ignore[misc]  # an aggregate: one row
            if merged and lo is not None:
                already = (f"ANTI JOIN (SELECT trace_id, span_id FROM read_parquet({_file_list(merged)}, "
                           f"union_by_name=true, hive_partitioning=false) WHERE start_time BETWEEN TIMESTAMP_NS "
                           f"{_quote(lo)} AND TIMESTAMP_NS {_quote(hi)}) USING (trace_id, span_id) ")
            (rows,) = con.execute(  # type: ignore[misc]  # COPY answers one row: the count written
                # Every row of a file with the stored fingerprint holds it (collector.call_input.STORED): inputs
                # from collectors that compacted before it get it here.
                f"COPY (SELECT * FROM {call_input.filled(fresh)} {already}"
                "QUALIFY row_number() OVER (PARTITION BY trace_id, span_id ORDER BY received_at) = 1 "
                f"ORDER BY start_time) TO {_quote(str(target))} (FORMAT parquet, COMPRESSION zstd, "
                "ROW_GROUP_SIZE 131072)").fetchone()
        finally:
            con.close()
        return int(rows)

    def _delete_due(self, tenant: str, manifest: Manifest, listing: dict[str, int], now: float) -> int:
        """Delete what no reader may need any more; then drop the manifest entries of objects long gone."""
        due = [r for r in listing if _due(r, manifest, now, self._grace_s)]
        for relative in due:
            self._remote.delete(relative)
            _crash_point("lake-deleted")
        gone = set(due) | {r for r in manifest.absorbed if r not in listing}
        absorbed = {r: t for r, t in manifest.absorbed.items() if not (r in gone and now - t >= ABSORBED_KEEP_S)}
        merged = {r: s for r, s in manifest.merged.items() if r not in gone}
        if (absorbed, merged) != (manifest.absorbed, manifest.merged):
            with contextlib.suppress(ManifestConflict):  # else tidied by a later pass
                lake_manifest.commit(self._remote, "spans", tenant, replace(manifest, absorbed=absorbed, merged=merged))
        return len(due)

    # -- the thread --------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="lake-compactor", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        backoff = 0.0
        while not self._stopping.wait(backoff or self._interval_s):
            try:
                self.run_once()
            except Exception as exc:  # the store is down: the lake stays readable (inputs are fresh), retry later
                backoff = min(max(2 * backoff, 1.0), MAX_BACKOFF_S)
                log.error("lake compaction failed, retrying in %.0f s: %s: %s", backoff, type(exc).__name__, exc)
                self._stats.add(lake_compaction_errors=1)
            else:
                backoff = 0.0

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        if self._lease is not None:
            try:
                lake_manifest.release_lease(self._remote, self._lease)
            except Exception:  # the lease expires on its own
                log.warning("could not release the lake compactor lease")


def _is_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _due(relative: str, manifest: Manifest, now: float, grace_s: float) -> bool:
    path = PurePosixPath(relative)
    if path.name == lake_manifest.MANIFEST_NAME:
        return False
    date = path.parent.name.removeprefix("date=")
    if date in manifest.expired:
        return now - manifest.expired[date] >= grace_s
    if relative in manifest.absorbed:
        return now - manifest.absorbed[relative] >= grace_s
    if path.name.startswith(MERGED_PREFIX) and relative not in manifest.merged:  # an orphaned output
        return now - lake.segment_written_ms(path.name) / 1000 >= grace_s
    return False


def _steps(inputs: list[str], sizes: dict[str, int]) -> list[list[str]]:
    steps: list[list[str]] = []
    held = 0
    for relative in inputs:
        if not steps or len(steps[-1]) >= STEP_MAX_OBJECTS or held + sizes[relative] > STEP_MAX_BYTES:
            steps.append([])
            held = 0
        steps[-1].append(relative)
        held += sizes[relative]
    return steps
