"""Many collectors, one lake: the manifest that says which shipped objects readers take, and how.

Each tenant's span prefix holds one manifest, `spans/tenant=T/_manifest.json` (Spark, Trino and ClickHouse
skip names starting with `_`). It is created empty by the first collector that ships to the tenant and
replaced only by a conditional PUT (If-Match on its ETag), so of two writers that read the same version
only one commit lands: safety comes from this compare-and-swap, the compactor lease (collector.lake_compactor)
only keeps a second compactor from doing the work twice.

  merged:   `m-…` objects written by the lake compactor; together they hold each (trace_id, span_id) once.
  absorbed: shipped `c-…` objects whose rows a merged object holds (deleted after a grace period).
  expired:  dates dropped by retention (their objects are deleted after the grace period).

How a reader sees an object of a tenant with a manifest (`reader_name`): a merged object is compacted
(named `c-…` for the views); an `m-…` object the manifest does not name is invisible (a compactor's
output not committed yet, or orphaned by a crash); an absorbed object or one in an expired date is
invisible; any other shipped `c-…` object (one collector's compacted segment, not merged across writers
yet) is *fresh*: the `spans` view deduplicates it against the other fresh segments and the merged rows, as
it does a collector's local fresh segments. Without a manifest (a lake shipped to before many writers) a
shipped `c-…` object is compacted, as before.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from collector.objectstore import ObjectLake

MANIFEST_NAME = "_manifest.json"
MERGED_PREFIX = "m-"
SHIPPED_PREFIX = "c-"
VERSION = 1


class ManifestConflict(RuntimeError):
    """Another writer replaced the manifest since it was read: read it again and redo the step."""


@dataclass(frozen=True)
class Manifest:
    merged: dict[str, int] = field(default_factory=dict)  # relative path -> size
    absorbed: dict[str, float] = field(default_factory=dict)  # relative path -> when it was absorbed
    expired: dict[str, float] = field(default_factory=dict)  # date (YYYY-MM-DD) -> when it expired
    generation: int = 0  # +1 per commit: every version has its own bytes, so its own ETag
    etag: str | None = None  # of the stored version this was read from (None: not stored yet)

    def to_bytes(self) -> bytes:
        return json.dumps({"version": VERSION, "generation": self.generation, "merged": self.merged,
                           "absorbed": self.absorbed, "expired": self.expired}, sort_keys=True).encode()

    def reader_name(self, relative: str) -> str | None:
        """The name the views match `relative` by (`c-…` compacted, digits-first fresh), or None: invisible."""
        path = PurePosixPath(relative)
        date = path.parent.name.removeprefix("date=")
        if path.name == MANIFEST_NAME or date in self.expired or relative in self.absorbed:
            return None
        if path.name.startswith(MERGED_PREFIX):
            return SHIPPED_PREFIX + path.name[len(MERGED_PREFIX):] if relative in self.merged else None
        if path.name.startswith(SHIPPED_PREFIX):
            return path.name[len(SHIPPED_PREFIX):]
        return path.name


def manifest_path(table: str, tenant: str) -> str:
    return f"{table}/tenant={tenant}/{MANIFEST_NAME}"


def read(remote: ObjectLake, table: str, tenant: str) -> Manifest | None:
    import obstore

    try:
        got = obstore.get(remote.store, remote.key(manifest_path(table, tenant)))
    except FileNotFoundError:
        return None
    body = json.loads(bytes(got.bytes()))
    return Manifest(body["merged"], body["absorbed"], body["expired"], body["generation"], got.meta["e_tag"])


def ensure(remote: ObjectLake, table: str, tenant: str) -> None:
    """Create the tenant's empty manifest unless one exists (a collector does this before its first upload)."""
    with contextlib.suppress(ManifestConflict):
        commit(remote, table, tenant, Manifest())


def commit(remote: ObjectLake, table: str, tenant: str, manifest: Manifest) -> Manifest:
    """Store `manifest` if the stored one is still the version it was derived from (its etag; None: absent).
    One atomic PUT: readers see the old version or the new one. Raises ManifestConflict otherwise."""
    import obstore
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    mode = "create" if manifest.etag is None else {"e_tag": manifest.etag}
    new = replace(manifest, generation=manifest.generation + 1)
    try:
        put = obstore.put(remote.store, remote.key(manifest_path(table, tenant)), new.to_bytes(), mode=mode)
    except (AlreadyExistsError, PreconditionError):
        raise ManifestConflict(f"{manifest_path(table, tenant)} changed meanwhile") from None
    return replace(new, etag=put["e_tag"])


@dataclass(frozen=True)
class Lease:
    holder: str
    expires_at: float
    etag: str


LEASE_PATH = "_verdict/compactor.lease"


def acquire_lease(remote: ObjectLake, holder: str, ttl_s: float, held: Lease | None = None) -> Lease | None:
    """Take or renew the lake's compactor lease: created if absent, replaced (If-Match) if expired or ours.
    None when another holder's lease is still valid or another contender won the race. Expiry is judged by
    this machine's clock: keep clocks within a fraction of the TTL (NTP)."""
    import obstore
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    key = remote.key(LEASE_PATH)
    mode: str | dict
    if held is not None:
        mode = {"e_tag": held.etag}
    else:
        try:
            got = obstore.get(remote.store, key)
            current = json.loads(bytes(got.bytes()))
            if current["holder"] != holder and current["expires_at"] > time.time():
                return None
            mode = {"e_tag": got.meta["e_tag"]}
        except FileNotFoundError:
            mode = "create"
    expires_at = time.time() + ttl_s
    try:
        put = obstore.put(remote.store, key, json.dumps({"holder": holder, "expires_at": expires_at}).encode(),
                          mode=mode)
    except (AlreadyExistsError, PreconditionError):
        return None
    return Lease(holder, expires_at, put["e_tag"])


def release_lease(remote: ObjectLake, lease: Lease) -> None:
    """Let another collector take over at once (only if the lease is still ours)."""
    import obstore
    from obstore.exceptions import PreconditionError

    with contextlib.suppress(PreconditionError):
        obstore.put(remote.store, remote.key(LEASE_PATH), json.dumps(
            {"holder": lease.holder, "expires_at": 0}).encode(), mode={"e_tag": lease.etag})
