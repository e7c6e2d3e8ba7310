"""The registry's audit trail: who fitted, assigned, validated, activated, rolled back or renamed what."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

from verdict_daemon.clustering.versions import canonical

ACTIVATING = ("activated", "rolled_back")  # actions that made a version the active one


def record(con, tenant: str, version_id: str | None, action: str, actor: str, generation: int | None = None,
           detail: dict | None = None) -> int:
    """Append one event inside the caller's transaction; returns its sequence number."""
    seq = con.execute("SELECT coalesce(max(seq), 0) + 1 FROM registry_events WHERE tenant_id = ?", [tenant]).fetchone()[0]
    con.execute("INSERT INTO registry_events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [tenant, seq, version_id, action, actor, generation, canonical(detail or {}),
                 datetime.now(UTC).replace(tzinfo=None)])
    return cast(int, seq)  # coalesce(max(seq), 0) + 1
