"""Where readers find a lake's segments: a local data dir, an object store (`--lake-url`), or both.

With both, each relative path (`spans/tenant=T/date=D/<name>`) is read once: a segment the collector has
shipped but not yet deleted locally (collector.shipping) exists in both places with the same bytes, and
the remote copy is read (it is never deleted by the collector, the local one is). The views get explicit
file lists then; a local-only lake keeps its globs (valid as files come and go, for --print-views).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path

from collector.objectstore import ObjectLake
from verdict.tenancy import validate_tenant_id


def _partitions(days: Sequence[date] | None) -> list[str]:
    return ["date=*"] if days is None else [f"date={day.isoformat()}" for day in days]


@dataclass(frozen=True)
class LakeSource:
    data_dir: Path | None
    remote: ObjectLake | None = None
    _listings: dict = field(default_factory=dict, compare=False, repr=False)  # (table, tenant) -> remote paths
    _known: dict = field(default_factory=dict, compare=False, repr=False)  # object URL -> ObjectMeta, for readers

    @classmethod
    def of(cls, lake: LakeSource | Path) -> LakeSource:
        return lake if isinstance(lake, LakeSource) else cls(Path(lake))

    def local_dir(self, table: str, tenant: str) -> Path | None:
        if self.data_dir is None:
            return None
        return self.data_dir.resolve() / table / f"tenant={validate_tenant_id(tenant)}"

    def remote_prefix(self, table: str, tenant: str) -> str:
        return f"{table}/tenant={validate_tenant_id(tenant)}/"

    def allowed_directories(self, table: str, tenant: str) -> list[str]:
        """What a query may read of this tenant's `table`: its directory and its prefix in the store."""
        local = self.local_dir(table, tenant)
        return ([f"{local}/"] if local is not None else []) + (
            [self.remote.object_url(self.remote_prefix(table, tenant))] if self.remote is not None else [])

    def _remote(self, remote: ObjectLake, table: str, tenant: str) -> list[str]:
        key = (table, tenant)
        if key not in self._listings:
            listing = remote.listing(self.remote_prefix(table, tenant))
            self._known.update({remote.object_url(r): meta for r, meta in listing.items()})
            self._listings[key] = sorted(listing)
        listed: list[str] = self._listings[key]
        return listed

    def files(self, table: str, tenant: str, pattern: str, days: Sequence[date] | None) -> list[str]:
        """Every segment of the tenant's `table` whose name matches `pattern`, in the date partitions `days`
        (all when None), each relative path once."""
        wanted = [f"{self.remote_prefix(table, tenant)}{p}/{pattern}" for p in _partitions(days)]
        local_dir = self.local_dir(table, tenant)
        local = [f for p in _partitions(days) for f in local_dir.glob(f"{p}/{pattern}")] if local_dir else []
        store = self.remote
        if store is None:
            return [str(f) for f in local]
        remote = [r for r in self._remote(store, table, tenant) if any(fnmatch.fnmatchcase(r, w) for w in wanted)]
        shipped = set(remote)
        root = self.data_dir.resolve() if self.data_dir is not None else None  # local is empty without one
        return [store.object_url(r) for r in remote] + [
            str(f) for f in local if root is not None and f.relative_to(root).as_posix() not in shipped]

    def read_paths(self, table: str, tenant: str, pattern: str, days: Sequence[date] | None) -> list[str]:
        """What `read_parquet` gets: globs over a local-only lake (only those matching a file: DuckDB refuses
        a glob matching nothing), else the explicit file list."""
        if self.remote is not None:
            return self.files(table, tenant, pattern, days)
        directory = self.local_dir(table, tenant)
        if directory is None:
            return []
        return [f"{directory}/{p}/{pattern}" for p in _partitions(days) if any(directory.glob(f"{p}/{pattern}"))]

    @cached_property
    def _filesystem(self):
        """One per source: the view plan and the query share its cache of fetched segments (None: local only)."""
        return None if self.remote is None else self.remote.read_filesystem(self._known)

    def connect(self, config: dict | None = None):
        """An in-memory DuckDB that can read this lake (the store's filesystem registered when remote)."""
        import duckdb

        con = duckdb.connect(":memory:", config=config or {})
        if self._filesystem is not None:
            con.register_filesystem(self._filesystem)
        return con
