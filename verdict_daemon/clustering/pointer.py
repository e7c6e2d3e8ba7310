"""The tenant's active-version pointer: compare-and-swap `activate` and `rollback`.

The pointer is one row per tenant (version id, generation). A change names the generation it
expects; inside one transaction the current generation is read and, if it still matches, the
pointer moves and the generation increases by one, so of two concurrent changes made from the same
generation exactly one wins and the other gets `generation_conflict` (DuckDB's file lock lets one
process write `state.duckdb` at a time). No pointer yet is generation 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from verdict.tenancy import validate_tenant_id
from verdict_daemon.clustering import events, versions
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.store.state import StateStore


@dataclass(frozen=True)
class Pointer:
    version_id: str | None
    generation: int

    def to_dict(self) -> dict:
        return {"active_version": self.version_id, "generation": self.generation}


def current(con, tenant: str) -> Pointer:
    row = con.execute("SELECT version_id, generation FROM registry_pointer WHERE tenant_id = ?", [tenant]).fetchone()
    return Pointer(*row) if row else Pointer(None, 0)


def _checked(con, tenant: str, expected: int) -> Pointer:
    """The current pointer, or `generation_conflict` when it is not at the expected generation."""
    pointer = current(con, tenant)
    if pointer.generation != expected:
        raise ClusterError("generation_conflict",
                           f"expected generation {expected}, but the tenant's registry is at generation "
                           f"{pointer.generation} (active version {pointer.version_id}); re-read it and retry",
                           {"generation": pointer.generation, "active_version": pointer.version_id})
    return pointer


def _move(con, tenant: str, actor: str, pointer: Pointer, version_id: str, action: str) -> dict:
    if pointer.version_id == version_id:
        raise ClusterError("invalid_config", f"version {version_id} is already the active version")
    generation = pointer.generation + 1
    con.execute("INSERT OR REPLACE INTO registry_pointer VALUES (?, ?, ?, ?, ?)",
                [tenant, version_id, generation, actor, datetime.now(UTC).replace(tzinfo=None)])
    events.record(con, tenant, version_id, action, actor, generation, {"previous": pointer.version_id})
    return {"active_version": version_id, "previous_version": pointer.version_id, "generation": generation}


def activate(store: StateStore, tenant: str, actor: str, version_id: str, expected_generation: int) -> dict:
    """Make a validated version the tenant's active one."""
    tenant = validate_tenant_id(tenant)
    with store.transaction() as con:
        version = versions.load(con, tenant, version_id)
        pointer = _checked(con, tenant, expected_generation)
        if version.status != "validated":
            raise ClusterError("validation_failed", f"version {version_id} is {version.status}, not validated: "
                               "run `validate` on it first (it must pass)")
        return _move(con, tenant, actor, pointer, version_id, "activated")


def rollback(store: StateStore, tenant: str, actor: str, version_id: str, expected_generation: int) -> dict:
    """Return to a version that was active before."""
    tenant = validate_tenant_id(tenant)
    with store.transaction() as con:
        versions.load(con, tenant, version_id)
        pointer = _checked(con, tenant, expected_generation)
        was_active = con.execute(
            f"SELECT count(*) FROM registry_events WHERE tenant_id = ? AND version_id = ? "
            f"AND action IN ({', '.join('?' * len(events.ACTIVATING))})",
            [tenant, version_id, *events.ACTIVATING]).fetchone()[0]
        if not was_active:
            raise ClusterError("rollback_target_not_activated",
                               f"version {version_id} was never active; rollback only returns to a version that was "
                               "activated before (use activate for a new one)")
        return _move(con, tenant, actor, pointer, version_id, "rolled_back")
