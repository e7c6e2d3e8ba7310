"""The daemon's and `verdict-pipeline --registry-mode active`'s view of the registry.

A cycle pins the tenant's active version once (`require_active`) and assigns its sampled traces
under that version only (`assign_active`): sampled traces missing from the analysis index are
indexed first, assigned by the version (stored immutably in `registry_assignments`), then
`cluster_assignments` (what drift runs read) is switched to that version in one transaction, each
row carrying `method = 'registry:<version_id>'`. A drift run reads `cluster_assignments` in one
transaction, so it sees one version's clusters, never a mix.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from verdict.tenancy import validate_tenant_id
from verdict_daemon.clustering import pointer, versions
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.errors import ERROR_CODES, DaemonError
from verdict_daemon.store.state import StateStore

log = logging.getLogger("verdict.daemon")

METHOD_PREFIX = "registry:"


@dataclass(frozen=True)
class ActiveRegistry:
    version_id: str
    generation: int
    strategy: str


@dataclass(frozen=True)
class ActiveAssignReport:
    version_id: str
    assigned: int  # sampled traces newly given a cluster for drift
    missing_intent_key: int  # of those, traces without an intent key


@contextlib.contextmanager
def _daemon_errors() -> Iterator[None]:
    """Registry failures in the daemon's closed vocabulary (the codes both share keep their name)."""
    try:
        yield
    except ClusterError as exc:
        raise DaemonError(exc.code if exc.code in ERROR_CODES else "storage_error", exc.message) from None


def require_active(store: StateStore, tenant: str) -> ActiveRegistry:
    tenant = validate_tenant_id(tenant)
    with _daemon_errors(), store.transaction() as con:
        current = pointer.current(con, tenant)
        if current.version_id is None:
            raise ClusterError("no_active_registry", f"tenant {tenant} has no active cluster registry version "
                               "(verdict cluster fit, assign, validate and activate one; or use --registry-mode off)")
        version = versions.load(con, tenant, current.version_id)
    return ActiveRegistry(version.version_id, current.generation, version.strategy)


def assign_active(store: StateStore, data_dir: Path, tenant: str, registry: ActiveRegistry) -> ActiveAssignReport:
    from verdict_daemon.clustering.analysis_index import index_traces
    from verdict_daemon.clustering.assignment import assign_scope

    tenant = validate_tenant_id(tenant)
    method = METHOD_PREFIX + registry.version_id
    with _daemon_errors():
        with store.transaction() as con:
            version = versions.load(con, tenant, registry.version_id)
            unindexed = con.execute(
                "SELECT trace_id, started_at FROM sampled_traces WHERE tenant_id = ? AND trace_id NOT IN "
                "(SELECT trace_id FROM analysis_index WHERE tenant_id = ?)", [tenant, tenant]).fetchall()
        index_traces(store, data_dir, tenant, unindexed)
        assign_scope(store, data_dir, version,
                     "a.trace_id IN (SELECT trace_id FROM sampled_traces WHERE tenant_id = $t)", {})
        with store.transaction() as con:
            con.execute("DELETE FROM cluster_assignments WHERE tenant_id = ? AND method <> ?", [tenant, method])
            before = _counts(con, tenant)
            con.execute("""
                INSERT INTO cluster_assignments
                SELECT r.tenant_id, r.trace_id, r.cluster_id, $method, r.reason, $now FROM registry_assignments r
                WHERE r.tenant_id = $t AND r.version_id = $v
                  AND r.trace_id IN (SELECT trace_id FROM sampled_traces WHERE tenant_id = $t)
                  AND r.trace_id NOT IN (SELECT trace_id FROM cluster_assignments WHERE tenant_id = $t)""",
                        {"t": tenant, "v": registry.version_id, "method": method,
                         "now": datetime.now(UTC).replace(tzinfo=None)})
            added, missing = (after - first for after, first in zip(_counts(con, tenant), before, strict=True))
    if missing:
        log.warning("assign tenant=%s version=%s: %d trace(s) carry no intent key (missing_intent_key)",
                    tenant, registry.version_id, missing)
    return ActiveAssignReport(registry.version_id, added, missing)


def _counts(con, tenant: str) -> tuple[int, int]:
    return cast(tuple[int, int], con.execute(  # two counts: one row
        "SELECT count(*), count(*) FILTER (WHERE reason = 'missing_intent_key') "
        "FROM cluster_assignments WHERE tenant_id = ?", [tenant]).fetchone())
