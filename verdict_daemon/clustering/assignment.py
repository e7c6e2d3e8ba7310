"""`assign`: give indexed traces a cluster of one registry version (set-based SQL).

Assignments are immutable: a trace assigned under a version keeps that cluster (later runs only add
the traces the version has not assigned yet), and each row carries its version id. Explicit rows
come from one INSERT … SELECT joining the analysis index on the version's clusters; semantic rows
(semantic / hybrid versions) from one embedding batch and one Arrow insert.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from verdict.tenancy import validate_tenant_id
from verdict_daemon.clustering import events, explicit, versions
from verdict_daemon.clustering.analysis_index import require_indexed
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.store.state import StateStore


@dataclass(frozen=True)
class AssignResult:
    version_id: str
    strategy: str
    through_cutoff: datetime | None
    assigned: int  # rows this call added
    total: int  # rows the version holds in the scope
    clusters_used: int  # distinct non-reserved clusters among them
    reasons: dict[str, int]  # unassigned / outlier rows by reason

    def to_dict(self) -> dict:
        return {"version_id": self.version_id, "strategy": self.strategy,
                "through_cutoff": self.through_cutoff.isoformat() if self.through_cutoff else None,
                "assigned": self.assigned, "total": self.total, "clusters_used": self.clusters_used,
                "reasons": self.reasons}


def assign_version(store: StateStore, data_dir: Path, tenant: str, version_id: str, through_cutoff: datetime, *,
                   model_path: Path | None = None, actor: str = "api") -> AssignResult:
    """Assign every indexed trace started before `through_cutoff` (naive UTC) under `version_id`."""
    tenant = validate_tenant_id(tenant)
    with store.transaction() as con:
        version = versions.load(con, tenant, version_id)
    if model_path is not None and version.strategy not in versions.EXPERIMENTAL:
        raise ClusterError("invalid_config", f"--model-path applies to semantic or hybrid versions; {version_id} "
                           "is explicit")
    require_indexed(store, data_dir, tenant, through_cutoff)
    scope, args = "a.started_at < $cutoff", {"cutoff": through_cutoff}

    def finish(con, added: int) -> AssignResult:
        total, used, reasons = _summary(con, version, through_cutoff)
        events.record(con, tenant, version_id, "assigned", actor,
                      detail={"through_cutoff": through_cutoff.isoformat(), "assigned": added})
        return AssignResult(version_id, version.strategy, through_cutoff, added, total, used, reasons)

    if version.strategy == "explicit":  # one transaction: this is the path with a throughput target
        with store.transaction() as con:
            return finish(con, explicit_step(con, version, scope, args, _now()))
    added = assign_scope(store, data_dir, version, scope, args, model_path)
    with store.transaction() as con:
        return finish(con, added)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def explicit_step(con, version: versions.Version, scope: str, args: dict[str, Any], now: datetime) -> int:
    return cast(int, con.execute(explicit.ASSIGN.format(scope=scope), {  # the inserted rows' count
        **args, "t": version.tenant_id, "v": version.version_id, "workload": version.target_workload,
        "fallback": version.strategy == "hybrid", "now": now}).fetchone()[0])


def assign_scope(store: StateStore, data_dir: Path, version: versions.Version, scope: str, args: dict[str, Any],
                 model_path: Path | None = None) -> int:
    """Assign the rows of `scope` (a condition on analysis_index `a`) the version lacks; returns rows added."""
    now = _now()
    added = 0
    if version.strategy in ("explicit", "hybrid"):
        with store.transaction() as con:
            added = explicit_step(con, version, scope, args, now)
    if version.strategy in versions.EXPERIMENTAL:
        from verdict_daemon.clustering import semantic_strategy

        added += semantic_strategy.assign(store, data_dir, version, scope, args, model_path, now)
    return added


def _summary(con, version: versions.Version, through_cutoff: datetime) -> tuple[int, int, dict[str, int]]:
    rows = con.execute("""
        SELECT cluster_id, reason, count(*) FROM registry_assignments
        WHERE tenant_id = $t AND version_id = $v AND started_at < $cutoff GROUP BY ALL""",
                       {"t": version.tenant_id, "v": version.version_id, "cutoff": through_cutoff}).fetchall()
    reasons: dict[str, int] = {}
    for _, reason, n in rows:
        if reason is not None:
            reasons[reason] = reasons.get(reason, 0) + n
    used = len({cid for cid, _, _ in rows if cid not in versions.RESERVED_CLUSTERS})
    return sum(n for *_, n in rows), used, dict(sorted(reasons.items()))
