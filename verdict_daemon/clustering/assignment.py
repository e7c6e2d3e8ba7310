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

from collector.lake_union import LakeUnion
from verdict.tenancy import TenantId
from verdict_daemon.clustering import events, versions
from verdict_daemon.clustering.analysis_index import require_indexed
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.store.clusters import ClusterRepository, RegistryTransaction, Scope
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


def assign_version(store: StateStore, data_dir: Path, tenant: TenantId, version_id: str, through_cutoff: datetime, *,
                   model_path: Path | None = None, actor: str = "api", lake: LakeUnion | None = None) -> AssignResult:
    """Assign every indexed trace started before `through_cutoff` (naive UTC) under `version_id`; every trace of
    the tenant's lakes (`lake`, default the data dir's spans) must be indexed."""
    repository = ClusterRepository(store)
    with repository.transaction() as tx:
        version = tx.version(tenant, version_id)
    if model_path is not None and version.strategy not in versions.EXPERIMENTAL:
        raise ClusterError("invalid_config", f"--model-path applies to semantic or hybrid versions; {version_id} "
                           "is explicit")
    require_indexed(store, data_dir if lake is None else lake, tenant, through_cutoff)
    scope = Scope(before=through_cutoff)

    def finish(tx: RegistryTransaction, added: int) -> AssignResult:
        total, used, reasons = _summary(tx, version, through_cutoff)
        events.record(tx, tenant, version_id, "assigned", actor,
                      detail={"through_cutoff": through_cutoff.isoformat(), "assigned": added})
        return AssignResult(version_id, version.strategy, through_cutoff, added, total, used, reasons)

    if version.strategy == "explicit":  # one transaction: this is the path with a throughput target
        with repository.transaction() as tx:
            return finish(tx, tx.assign_explicit(version, scope, _now()))
    added = assign_scope(store, data_dir, version, scope, model_path)
    with repository.transaction() as tx:
        return finish(tx, added)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def assign_scope(store: StateStore, data_dir: Path, version: versions.Version, scope: Scope,
                 model_path: Path | None = None) -> int:
    """Assign the scope's indexed traces the version lacks; returns rows added."""
    now = _now()
    added = 0
    if version.strategy in ("explicit", "hybrid"):
        with ClusterRepository(store).transaction() as tx:
            added = tx.assign_explicit(version, scope, now)
    if version.strategy in versions.EXPERIMENTAL:
        from verdict_daemon.clustering import semantic_strategy

        added += semantic_strategy.assign(store, data_dir, version, scope, model_path, now)
    return added


def _summary(tx: RegistryTransaction, version: versions.Version, through_cutoff: datetime) -> tuple[int, int, dict[str, int]]:
    rows = tx.assignment_counts(version, through_cutoff)
    reasons: dict[str, int] = {}
    for row in rows:
        if row.reason is not None:
            reasons[row.reason] = reasons.get(row.reason, 0) + row.traces
    used = len({row.cluster_id for row in rows if row.cluster_id not in versions.RESERVED_CLUSTERS})
    return sum(row.traces for row in rows), used, dict(sorted(reasons.items()))
