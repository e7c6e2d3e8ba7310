"""Where readers find a lake's segments: a local data dir, an object store (`--lake-url`), or both.

With both, each relative path (`spans/tenant=T/date=D/<name>`) is read once: a segment the collector has
shipped but not yet deleted locally (collector.shipping) exists in both places with the same bytes, and
the remote copy is read (it is never deleted by the collector, the local one is). Where a tenant's span
prefix has a manifest (several collectors on one lake, collector.lake_manifest), it says which objects are
read and whether as compacted or fresh.

A source is one reader's snapshot: each listing (the store's prefix, a local partition) is taken once and
kept, so every view built from one source names one consistent set of files, and the views get those files
explicitly (never a glob, which DuckDB would expand again at every query). Local segments and partitions that
compaction, retention or shipping retired are left out (collector.retire: the retired records are read before
any partition is listed); what the snapshot names stays on disk for the grace period.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path, PurePosixPath

from collector import lake_manifest, retire
from collector.lake import SEGMENT_SUFFIX
from collector.objectstore import ObjectLake
from collector.shipping import outbox_dir
from verdict.tenancy import TenantId


def _reader_path(manifest: lake_manifest.Manifest | None, relative: str) -> str | None:
    """`relative` with the name the views match it by (None: readers skip it)."""
    if manifest is None:
        return relative
    name = manifest.reader_name(relative)
    return None if name is None else str(PurePosixPath(relative).with_name(name))


def _partitions(days: Sequence[date] | None) -> list[str]:
    return ["date=*"] if days is None else [f"date={day.isoformat()}" for day in days]


@dataclass(frozen=True)
class LakeSource:
    data_dir: Path | None
    remote: ObjectLake | None = None
    _listings: dict = field(default_factory=dict, compare=False, repr=False)  # (table, tenant) -> (manifest, names)
    _known: dict = field(default_factory=dict, compare=False, repr=False)  # object URL -> ObjectMeta, for readers
    _local: dict = field(default_factory=dict, compare=False, repr=False)  # local listings: see _local_files

    @classmethod
    def of(cls, lake: LakeSource | Path) -> LakeSource:
        return lake if isinstance(lake, LakeSource) else cls(Path(lake))

    def local_dir(self, table: str, tenant: TenantId) -> Path | None:
        if self.data_dir is None:
            return None
        return self.data_dir.resolve() / table / f"tenant={tenant}"

    def remote_prefix(self, table: str, tenant: TenantId) -> str:
        return f"{table}/tenant={tenant}/"

    def allowed_directories(self, table: str, tenant: TenantId) -> list[str]:
        """What a query may read of this tenant's `table`: its directory and its prefix in the store."""
        local = self.local_dir(table, tenant)
        return ([f"{local}/"] if local is not None else []) + (
            [self.remote.object_url(self.remote_prefix(table, tenant))] if self.remote is not None else [])

    def _remote(self, remote: ObjectLake, table: str, tenant: TenantId) -> dict[str, str | None]:
        """Relative path -> the name the views match it by, for every object of the tenant's `table` readers take
        (collector.lake_manifest: with many writers, merged objects are compacted and shipped ones fresh).
        Listed before the manifest is read, so an object the manifest drops is still listed, and one it
        adds (a merged object written after the listing) is taken from the manifest with its size."""
        key = (table, tenant)
        if key not in self._listings:
            listing = remote.listing(self.remote_prefix(table, tenant))
            self._known.update({remote.object_url(r): meta for r, meta in listing.items()})
            names = set(listing)
            manifest = lake_manifest.read(remote, table, tenant) if table == "spans" else None
            if manifest is not None:  # merged after the listing: readers ask its size and time of the store
                names |= set(manifest.merged)
            self._listings[key] = (manifest, {r: _reader_path(manifest, r) for r in sorted(names)})
        visible: dict[str, str | None] = self._listings[key][1]
        return visible

    def _local_files(self, table: str, tenant: TenantId, days: Sequence[date] | None) -> list[Path]:
        """The tenant's local segments of `table` in the partitions `days` (all when None), retired ones left
        out. The retired records are read first, then the partitions are listed, each once per source."""
        local_dir = self.local_dir(table, tenant)
        if self.data_dir is None or local_dir is None:
            return []
        root = self.data_dir.resolve()
        if "retired" not in self._local:
            self._local["retired"] = retire.read(root)
        retired: retire.Retired = self._local["retired"]
        if (table, tenant) not in self._local:
            self._local[(table, tenant)] = sorted(
                d.name for d in local_dir.glob("date=*") if d.is_dir() and not retired.hides(d.relative_to(root).as_posix()))
        wanted = {f"date={day.isoformat()}" for day in days} if days is not None else None
        files: list[Path] = []
        for name in self._local[(table, tenant)]:
            if wanted is not None and name not in wanted:
                continue
            if (table, tenant, name) not in self._local:
                self._local[(table, tenant, name)] = [
                    f for f in sorted((local_dir / name).glob(f"*{SEGMENT_SUFFIX}"))
                    if not retired.hides(f.relative_to(root).as_posix())]
            files += self._local[(table, tenant, name)]
        return files

    def files(self, table: str, tenant: TenantId, pattern: str, days: Sequence[date] | None) -> list[str]:
        """Every segment of the tenant's `table` whose name matches `pattern`, in the date partitions `days`
        (all when None), each relative path once."""
        store = self.remote
        if store is None:
            return [str(f) for f in self._local_files(table, tenant, days) if fnmatch.fnmatchcase(f.name, pattern)]
        wanted = [f"{self.remote_prefix(table, tenant)}{p}/{pattern}" for p in _partitions(days)]
        remote = self._remote(store, table, tenant)
        manifest = self._listings[(table, tenant)][0]
        candidates: dict[str, str | None] = {store.object_url(r): seen for r, seen in remote.items()}
        if self.data_dir is not None:  # local segments not shipped yet
            root = self.data_dir.resolve()
            for f in self._local_files(table, tenant, days):
                relative = f.relative_to(root).as_posix()
                if relative not in remote and not (outbox_dir(root) / f"{relative}.json").exists():
                    candidates[str(f)] = _reader_path(manifest, relative)
        return [path for path, seen in candidates.items()
                if seen is not None and any(fnmatch.fnmatchcase(seen, w) for w in wanted)]

    def vanished(self) -> bool:
        """Whether a segment this snapshot listed is gone now: purged after its grace (collector.retire, the lake
        compactor's `--lake-delete-grace-s`) while a read slower than the grace had yet to open it. Segments are
        immutable and only purges delete them, so a listed name that no longer exists means exactly that."""
        local = [f for key, files in self._local.items() if isinstance(key, tuple) and len(key) == 3 for f in files]
        if any(not f.exists() for f in local):
            return True
        if self.remote is None:
            return False
        for (table, tenant), (_manifest, names) in self._listings.items():
            now = self.remote.listing(self.remote_prefix(table, tenant))
            if any(seen is not None and relative not in now for relative, seen in names.items()):
                return True
        return False

    def fresh(self, known: dict) -> LakeSource:
        """The same lake with no listing taken yet (`known`: the object metadata map its listings fill)."""
        return LakeSource(self.data_dir, self.remote, _known=known)

    @cached_property
    def _filesystem(self):
        """One per source: the view plan and the query share its cache of fetched segments (None: local only)."""
        return None if self.remote is None else self.remote.read_filesystem(self._known)

    def connect(self, config: dict | None = None):
        """An in-memory DuckDB that can read this lake (the store's filesystem registered when remote)."""
        return reader(config, [] if self._filesystem is None else [self._filesystem])


def reader(config: dict | None, filesystems: list):
    """An in-memory DuckDB reading through `filesystems` that parses each segment's footer once: the views name the
    same files in many scans, each of which (and each view's bind, with union_by_name) would read the footers again
    (docs/collector.md). Segments never change once written (new names for new content), so a cached footer is
    never stale."""
    import duckdb

    con = duckdb.connect(":memory:", config=config or {})
    con.execute("SET parquet_metadata_cache = true")  # after connecting: the setting needs the parquet extension
    for filesystem in filesystems:
        con.register_filesystem(filesystem)
    return con
