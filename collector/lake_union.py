"""The union of several lakes read as one: local data dirs and object-store URLs holding one tenant.

A tenant split across collectors (by host or zone) has its segments in several data dirs and, once they ship,
in object stores; a reader that wants the whole tenant (the daemon, `verdict pipeline`, `verdict report`) reads
their union. Each member is a `LakeSource`; the union reads each relative path
(`spans/tenant=T/date=D/<name>`) once, whichever members hold it: segment names are unique (a uuid each), so
the same relative path in two members is the same bytes (a segment shipped and not yet deleted locally, or a
copied data dir), and a remote copy is preferred (the collector deletes its local copy, never the remote one).
A local segment whose outbox record says it was shipped to a store of the union is left to that store (which
may have merged it into another object by then, with several writers on one lake).
One fsspec filesystem per URL scheme serves every bucket of that scheme, so all stores of one scheme share the
credentials and endpoint of the standard variables (AWS_*, ...).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path

from collector import lake_source
from collector.lake_source import LakeSource
from collector.objectstore import SCHEMES, ObjectLake, ObjectMeta
from collector.shipping import outbox_dir
from verdict.tenancy import TenantId


@dataclass(frozen=True)
class LakeUnion:
    members: tuple[LakeSource, ...]
    known: dict = field(default_factory=dict, compare=False, repr=False)  # object URL -> ObjectMeta, shared by members

    @classmethod
    def of(cls, lake: LakeUnion | LakeSource | Path) -> LakeUnion:
        if isinstance(lake, LakeUnion):
            return lake
        return cls((LakeSource.of(lake),))

    @classmethod
    def open(cls, dirs: Sequence[Path], urls: Sequence[str] = ()) -> LakeUnion:
        """The lakes in `dirs` (missing ones read as empty) and at `urls` (ObjectStoreError for a bad URL)."""
        known: dict[str, ObjectMeta] = {}  # every member's listing fills it: the one filesystem per scheme reads it
        members = [LakeSource(None, ObjectLake(u), _known=known) for u in dict.fromkeys(urls)]
        members += [LakeSource(Path(d)) for d in dict.fromkeys(Path(d).resolve() for d in dirs)]
        return cls(tuple(members), known)

    def describe(self) -> str:
        return ", ".join(m.remote.url if m.remote is not None else str(m.data_dir) for m in self.members)

    def allowed_directories(self, table: str, tenant: TenantId) -> list[str]:
        return [d for m in self.members for d in m.allowed_directories(table, tenant)]

    def files(self, table: str, tenant: TenantId, pattern: str, days: Sequence[date] | None) -> list[str]:
        """Every segment of the tenant's `table` matching `pattern` in the partitions `days` (all when None),
        each relative path once over all members, the remote copy first."""
        if len(self.members) == 1:  # nothing to take once across members
            return self.members[0].files(table, tenant, pattern, days)
        remote: dict[str, str] = {}
        local: dict[str, str] = {}
        for member in self.members:
            prefix = member.remote.object_url("") if member.remote is not None else None
            root = member.data_dir.resolve() if member.data_dir is not None else None
            for f in member.files(table, tenant, pattern, days):
                if prefix is not None and f.startswith(prefix):
                    remote.setdefault(f.removeprefix(prefix), f)
                elif root is not None and not self._shipped_here(root, relative := f.removeprefix(f"{root}/")):
                    local.setdefault(relative, f)
        return [*remote.values(), *(f for relative, f in local.items() if relative not in remote)]

    def vanished(self) -> bool:
        """Whether a segment some member listed is gone now (LakeSource.vanished)."""
        return any(m.vanished() for m in self.members)

    def fresh(self) -> LakeUnion:
        """The same lakes with no listing taken yet: a new snapshot."""
        known: dict[str, ObjectMeta] = {}
        return LakeUnion(tuple(m.fresh(known) for m in self.members), known)

    def _shipped_here(self, root: Path, relative: str) -> bool:
        """Whether the collector of `root` shipped this segment to a store of the union (its outbox record, kept
        until the local copy is deleted, names the key): that store shows it, or the object that merged it."""
        record = outbox_dir(root) / f"{relative}.json"
        if not record.exists():
            return False
        try:
            key = json.loads(record.read_bytes())["key"]
        except (OSError, ValueError, KeyError, TypeError):  # removed meanwhile, or not a record: read the local copy
            return False
        return any(m.remote is not None and m.remote.key(relative) == key for m in self.members)

    @cached_property
    def _filesystems(self) -> list:
        """One read-only filesystem per scheme (DuckDB takes one per protocol); it serves every bucket."""
        first: dict[str, ObjectLake] = {}
        for m in self.members:
            if m.remote is not None:
                first.setdefault(m.remote.scheme, m.remote)
        return [first[s].read_filesystem(self.known) for s in SCHEMES if s in first]

    def connect(self, config: dict | None = None):
        """An in-memory DuckDB that can read every member."""
        if len(self.members) == 1:
            return self.members[0].connect(config)
        return lake_source.reader(config, list(self._filesystems))


def read_errors() -> tuple[type[Exception], ...]:
    """What listing or opening a lake raises besides duckdb.Error: OSError, and the object store's own errors
    (when its extra is installed)."""
    try:
        from obstore.exceptions import BaseError
    except ImportError:
        return (OSError,)
    return (OSError, BaseError)
