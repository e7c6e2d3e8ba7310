"""Which tenants hold data in a data dir and its lakes, and the one `unknown_tenant` error naming them.

A tenant id that matches nothing (a typo, the docs' `acme` where the Quickstart wrote `__verdict_local__`)
must not read as an empty tenant: `verdict report` and the UI's overview refuse it with `unknown_tenant`;
`verdict pipeline` warns in its summary and `verdict sql` on stderr (a cycle before the first span, a count
of 0, are legitimate answers); each lists the tenants that do have data. A tenant has data when its lakes hold a span segment of it, or
state.duckdb holds a row of it (sampled traces, judgment attempts, sentinel checks, registry versions,
review items).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collector.lake import SEGMENT_SUFFIX
from collector.lake_union import LakeUnion, read_errors
from verdict.tenancy import InvalidTenantError, TenantId, validate_tenant_id
from verdict_daemon.errors import DaemonError
from verdict_daemon.store.views import state_tenants

_TENANT_DIR = "tenant="


def _lake_candidates(lake: LakeUnion) -> set[str]:
    """Tenant ids with a `spans/tenant=T` directory (or object prefix) in some member; unchecked."""
    names: set[str] = set()
    for member in lake.members:
        if member.data_dir is not None and (member.data_dir / "spans").is_dir():
            names |= {d.name for d in (member.data_dir / "spans").iterdir() if d.is_dir()}
        if member.remote is not None:
            names |= set(member.remote.list_dirs("spans/"))
    return {n.removeprefix(_TENANT_DIR) for n in names if n.startswith(_TENANT_DIR)}


def _valid(name: str) -> TenantId | None:
    try:
        return validate_tenant_id(name)
    except InvalidTenantError:  # a stray directory, not a tenant
        return None


def has_spans(lake: LakeUnion, tenant: TenantId) -> bool:
    return bool(lake.files("spans", tenant, f"*{SEGMENT_SUFFIX}", None))


def tenants_with_data(data_dir: Path, lake: LakeUnion, lock_timeout: float = 10.0) -> tuple[str, ...]:
    """Every tenant with a span segment in `lake` or rows in the data dir's state, sorted."""
    in_lake = {t for name in _lake_candidates(lake) if (t := _valid(name)) is not None and has_spans(lake, t)}
    return tuple(sorted(in_lake | state_tenants(data_dir, lock_timeout)))


@dataclass(frozen=True, slots=True)
class NoData:
    """A tenant without data: why, and the tenants that do have some."""
    message: str
    tenants: tuple[str, ...]


def no_data(tenant: TenantId, data_dir: Path, lake: LakeUnion, lock_timeout: float = 10.0) -> NoData | None:
    """None when `tenant` has data; else why not, naming the tenants that have some. A lake that cannot be
    listed is storage_error."""
    try:
        if has_spans(lake, tenant) or state_tenants(data_dir, lock_timeout, tenant):
            return None
        others = tenants_with_data(data_dir, lake, lock_timeout)
    except read_errors() as exc:  # a directory without permission; no such bucket, store unreachable
        if isinstance(exc, OSError):  # as verdict report words it
            raise DaemonError("storage_error", f"cannot read {exc.filename or data_dir} ({exc.strerror})") from None
        raise DaemonError("storage_error", f"span lake of tenant {tenant}: {type(exc).__name__}: "
                          + (str(exc).splitlines() or [""])[0][:300]) from None
    listed = f"tenants with data: {', '.join(others)}" if others else "no tenant has data there yet"
    return NoData(f"tenant {tenant!r} has no spans and no state in {lake.describe()}; {listed}", others)


def require_data(tenant: TenantId, data_dir: Path, lake: LakeUnion, lock_timeout: float = 10.0) -> None:
    """`unknown_tenant` (its `tenants` field lists the tenants with data) unless `tenant` has data."""
    missing = no_data(tenant, data_dir, lake, lock_timeout)
    if missing is not None:
        raise DaemonError("unknown_tenant", missing.message, {"tenants": list(missing.tenants)})
