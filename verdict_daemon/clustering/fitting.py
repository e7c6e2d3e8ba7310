"""`fit`: an immutable registry version from the analysis index before a cutoff, with a preview.

There is no default strategy: the caller names one. The index must hold every lake trace before
the cutoff (`analysis_index_pending` otherwise), and the cutoff may not lie in the future, so a
fit depends only on data that can no longer change: refitting gives the same version id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from collector.lake_union import LakeUnion
from verdict.tenancy import TenantId
from verdict_daemon.clustering import events, explicit, versions
from verdict_daemon.clustering.analysis_index import require_indexed
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.store.clusters import ClusterRepository
from verdict_daemon.store.state import StateStore


@dataclass(frozen=True)
class FitRequest:
    strategy: str  # one of versions.STRATEGIES
    cutoff: datetime  # naive UTC; traces started before it are the candidates
    target_workload: str | None = None  # only traces of this verdict.workload
    model_path: Path | None = None  # semantic / hybrid only


@dataclass(frozen=True)
class FitResult:
    version: versions.Version
    reused: bool  # an identical fit already existed

    def to_dict(self) -> dict:
        return {"version_id": self.version.version_id, "reused": self.reused, "version": self.version.summary(),
                "preview": self.version.preview}


def fit(store: StateStore, data_dir: Path, tenant: TenantId, actor: str, request: FitRequest,
        lake: LakeUnion | None = None) -> FitResult:
    """Fit a version on the indexed traces before the cutoff; every trace of the tenant's lakes (`lake`,
    default the data dir's spans) must be indexed. `data_dir` holds the embedding cache."""
    if request.strategy not in versions.STRATEGIES:
        raise ClusterError("invalid_config", f"--strategy must be one of {', '.join(versions.STRATEGIES)}")
    if request.cutoff > datetime.now(UTC).replace(tzinfo=None):
        raise ClusterError("invalid_config", f"--cutoff {request.cutoff.isoformat()} is in the future "
                           "(a fit may only read traces that can no longer arrive)")
    if request.model_path is not None and request.strategy == "explicit":
        raise ClusterError("invalid_config", "--model-path applies to --strategy semantic or hybrid only")
    require_indexed(store, data_dir if lake is None else lake, tenant, request.cutoff)
    gate = None
    if request.strategy == "explicit":
        with ClusterRepository(store).transaction() as tx:
            counts = tx.key_counts(tenant, request.cutoff, request.target_workload, explicit.PREVIEW_TOP + 1)
        clusters, definition, preview = explicit.fit(counts, request.cutoff, request.target_workload)
        params: dict[str, Any] = {}
        identity: dict[str, Any] = {}
    else:
        from verdict_daemon.clustering import semantic_strategy

        clusters, definition, preview, params, gate = semantic_strategy.fit(
            store, data_dir, tenant, request.cutoff, request.target_workload, request.model_path,
            hybrid=request.strategy == "hybrid")
        identity = {"semantic": params["semantic"]}  # the model enters through the definition's fingerprint
    fingerprint = versions.fingerprint(definition)
    version = versions.Version(
        tenant_id=tenant, strategy=request.strategy, experimental=request.strategy in versions.EXPERIMENTAL,
        version_id=versions.version_id(tenant, request.strategy, request.cutoff, request.target_workload, identity,
                                       fingerprint),
        status="fitted", cutoff=request.cutoff, target_workload=request.target_workload, params=params,
        definition=definition, definition_fingerprint=fingerprint, preview=preview, gate=gate, validation=None,
        created_by=actor, created_at=datetime.now(UTC).replace(tzinfo=None))
    with ClusterRepository(store).transaction() as tx:
        created = tx.insert_version(version, clusters)
        if created:
            events.record(tx, tenant, version.version_id, "fitted", actor,
                          detail={"strategy": version.strategy, "clusters": len(clusters),
                                  **({"quality_gate_passed": gate["passed"]} if gate else {})})
        stored = tx.version(tenant, version.version_id)
    return FitResult(stored, reused=not created)
