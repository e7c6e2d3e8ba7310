"""The registry's audit trail: who fitted, assigned, validated, activated, rolled back or renamed what."""

from __future__ import annotations

from datetime import UTC, datetime

from verdict.tenancy import TenantId
from verdict_daemon.store.clusters import RegistryTransaction

ACTIVATING = ("activated", "rolled_back")  # actions that made a version the active one


def record(tx: RegistryTransaction, tenant: TenantId, version_id: str | None, action: str, actor: str,
           generation: int | None = None, detail: dict | None = None) -> int:
    """Append one event inside the caller's transaction; returns its sequence number."""
    return tx.record_event(tenant, version_id, action, actor, generation, detail or {},
                           datetime.now(UTC).replace(tzinfo=None))
