"""The tenant's active-version pointer: compare-and-swap `activate` and `rollback`.

The pointer is one row per tenant (version id, generation). A change names the generation it
expects; inside one transaction the current generation is read and, if it still matches, the
pointer moves and the generation increases by one, so of two concurrent changes made from the same
generation exactly one wins and the other gets `generation_conflict` (DuckDB's file lock lets one
process write `state.duckdb` at a time). No pointer yet is generation 0.
"""

from __future__ import annotations

from datetime import UTC, datetime

from verdict.tenancy import TenantId
from verdict_daemon.clustering import events
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.store.clusters import ClusterRepository, Pointer, RegistryTransaction
from verdict_daemon.store.state import StateStore

__all__ = ["Pointer", "activate", "rollback"]


def _checked(tx: RegistryTransaction, tenant: TenantId, expected: int) -> Pointer:
    """The current pointer, or `generation_conflict` when it is not at the expected generation."""
    pointer = tx.pointer(tenant)
    if pointer.generation != expected:
        raise ClusterError("generation_conflict",
                           f"expected generation {expected}, but the tenant's registry is at generation "
                           f"{pointer.generation} (active version {pointer.version_id}); re-read it and retry",
                           {"generation": pointer.generation, "active_version": pointer.version_id})
    return pointer


def _move(tx: RegistryTransaction, tenant: TenantId, actor: str, pointer: Pointer, version_id: str, action: str) -> dict:
    if pointer.version_id == version_id:
        raise ClusterError("invalid_config", f"version {version_id} is already the active version")
    generation = pointer.generation + 1
    tx.set_pointer(tenant, version_id, generation, actor, datetime.now(UTC).replace(tzinfo=None))
    events.record(tx, tenant, version_id, action, actor, generation, {"previous": pointer.version_id})
    return {"active_version": version_id, "previous_version": pointer.version_id, "generation": generation}


def activate(store: StateStore, tenant: TenantId, actor: str, version_id: str, expected_generation: int) -> dict:
    """Make a validated version the tenant's active one."""
    with ClusterRepository(store).transaction() as tx:
        version = tx.version(tenant, version_id)
        pointer = _checked(tx, tenant, expected_generation)
        if version.status != "validated":
            raise ClusterError("validation_failed", f"version {version_id} is {version.status}, not validated: "
                               "run `validate` on it first (it must pass)")
        return _move(tx, tenant, actor, pointer, version_id, "activated")


def rollback(store: StateStore, tenant: TenantId, actor: str, version_id: str, expected_generation: int) -> dict:
    """Return to a version that was active before."""
    with ClusterRepository(store).transaction() as tx:
        tx.version(tenant, version_id)
        pointer = _checked(tx, tenant, expected_generation)
        if not tx.has_event(tenant, version_id, events.ACTIVATING):
            raise ClusterError("rollback_target_not_activated",
                               f"version {version_id} was never active; rollback only returns to a version that was "
                               "activated before (use activate for a new one)")
        return _move(tx, tenant, actor, pointer, version_id, "rolled_back")
