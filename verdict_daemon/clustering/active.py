"""The daemon's and `verdict-pipeline --registry-mode active`'s view of the registry.

A cycle pins the tenant's active version once (`require_active`) and assigns its sampled traces
under that version only (`assign_active`): sampled traces missing from the analysis index are
indexed first, assigned by the version (stored immutably in `registry_assignments`), then
`cluster_assignments` (what drift runs read) is switched to that version in one transaction, each
row carrying `method = 'registry:<version_id>'`. A drift run reads `cluster_assignments` in one
transaction, so it sees one version's clusters, never a mix. A conversation unit (`conversation:<first trace
id>`) is clustered as its first turn is: that trace is indexed and assigned like a sampled one, and the unit's
row takes its cluster and reason (store/clusters.py; the intent-key mode reads the same first turn). An imported
evaluation series' traces are clustered by the same version (`version_clusters`), so its records land in the cells
of the judgments of the same traces.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from verdict.tenancy import TenantId
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.errors import ERROR_CODES, DaemonError
from verdict_daemon.store.clusters import REGISTRY_METHOD_PREFIX, ClusterRepository, Scope
from verdict_daemon.store.state import StateStore

if TYPE_CHECKING:
    from collector.lake_union import LakeUnion

log = logging.getLogger("verdict.daemon")

METHOD_PREFIX = REGISTRY_METHOD_PREFIX


@dataclass(frozen=True)
class ActiveRegistry:
    version_id: str
    generation: int
    strategy: str


@dataclass(frozen=True)
class ActiveAssignReport:
    version_id: str
    assigned: int  # sampled rows (traces, conversation units) newly given a cluster for drift
    missing_intent_key: int  # of those, traces without an intent key


@contextlib.contextmanager
def _daemon_errors() -> Iterator[None]:
    """Registry failures in the daemon's closed vocabulary (the codes both share keep their name)."""
    try:
        yield
    except ClusterError as exc:
        raise DaemonError(exc.code if exc.code in ERROR_CODES else "storage_error", exc.message) from None


def require_active(store: StateStore, tenant: TenantId) -> ActiveRegistry:
    with _daemon_errors(), ClusterRepository(store).transaction() as tx:
        current = tx.pointer(tenant)
        if current.version_id is None:
            raise ClusterError("no_active_registry", f"tenant {tenant} has no active cluster registry version "
                               "(verdict cluster fit, assign, validate and activate one; or use --registry-mode off)")
        version = tx.version(tenant, current.version_id)
    return ActiveRegistry(version.version_id, current.generation, version.strategy)


def assign_active(store: StateStore, data_dir: Path, tenant: TenantId, registry: ActiveRegistry,
                  lake: LakeUnion | None = None) -> ActiveAssignReport:
    """Assign the tenant's sampled traces under `registry`, indexing first the ones the analysis index lacks
    from `lake` (default: the data dir's own spans); `data_dir` holds the embedding cache."""
    from verdict_daemon.clustering.analysis_index import index_traces
    from verdict_daemon.clustering.assignment import assign_scope

    method = METHOD_PREFIX + registry.version_id
    repository = ClusterRepository(store)
    with _daemon_errors():
        with repository.transaction() as tx:
            version = tx.version(tenant, registry.version_id)
            unindexed = tx.unindexed_sampled(tenant)
        index_traces(store, data_dir if lake is None else lake, tenant, unindexed)
        assign_scope(store, data_dir, version, Scope(sampled_only=True))
        with repository.transaction() as tx:
            added, missing = tx.switch_drift_to_version(tenant, registry.version_id, method,
                                                        datetime.now(UTC).replace(tzinfo=None))
    if missing:
        log.warning("assign tenant=%s version=%s: %d trace(s) carry no intent key (missing_intent_key)",
                    tenant, registry.version_id, missing)
    return ActiveAssignReport(registry.version_id, added, missing)


def version_clusters(store: StateStore, data_dir: Path, tenant: TenantId, registry: ActiveRegistry, lake: LakeUnion,
                     traces: list[tuple[str, datetime]]) -> dict[str, str]:
    """trace_id -> the cluster `registry`'s version gives each of these (trace_id, started_at), indexed and
    assigned first as a sampled trace is (`assign_active`) when the version has not assigned it yet. A trace it
    cannot assign (no eligible call to index; outside its target workload) is absent."""
    from verdict_daemon.clustering.analysis_index import index_traces
    from verdict_daemon.clustering.assignment import assign_scope

    repository = ClusterRepository(store)
    with _daemon_errors():
        with repository.transaction() as tx:
            version = tx.version(tenant, registry.version_id)
            clusters = tx.version_clusters(tenant, version.version_id, [t for t, _ in traces])
        todo = [(t, started) for t, started in traces if t not in clusters]
        if todo:
            index_traces(store, lake, tenant, todo)  # a trace indexed meanwhile is kept as it is
            assign_scope(store, data_dir, version, Scope(traces=tuple(t for t, _ in todo)))
            with repository.transaction() as tx:
                clusters |= tx.version_clusters(tenant, version.version_id, [t for t, _ in todo])
    return clusters
