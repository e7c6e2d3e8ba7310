"""Cluster assignment: which cluster each sampled trace belongs to.

`--registry-mode off` (this module): the explicit intent key (`verdict.intent_key`) is the cluster.
A trace without one is kept, assigned to `unassigned` with reason `missing_intent_key`, and counted
in the run summary, never dropped. `--registry-mode active`: the tenant's active registry version
assigns instead (verdict_daemon.clustering.active; docs/clustering.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from verdict.tenancy import validate_tenant_id
from verdict_daemon.service.sampling import UNASSIGNED
from verdict_daemon.store.state import StateStore, insert_rows

if TYPE_CHECKING:
    from verdict_daemon.clustering.active import ActiveRegistry

log = logging.getLogger("verdict.daemon")

MISSING_INTENT_KEY = "missing_intent_key"
_COLUMNS = ("tenant_id", "trace_id", "cluster", "method", "reason", "assigned_at")


@dataclass(frozen=True)
class Assignment:
    trace_id: str
    cluster: str
    method: str
    reason: str | None = None


class ClusterAssigner(Protocol):
    def assign(self, traces: list[tuple[str, str | None]]) -> list[Assignment]:
        """(trace_id, intent_key) pairs -> one Assignment each."""
        ...


class IntentKeyAssigner:
    method = "intent_key"

    def assign(self, traces: list[tuple[str, str | None]]) -> list[Assignment]:
        return [Assignment(trace_id, intent, self.method) if intent
                else Assignment(trace_id, UNASSIGNED, self.method, MISSING_INTENT_KEY)
                for trace_id, intent in traces]


@dataclass(frozen=True)
class AssignReport:
    assigned: int
    missing_intent_key: int


def assign(store: StateStore, tenant: str, assigner: ClusterAssigner) -> AssignReport:
    """Assign the sampled traces that have no cluster yet. Rows a registry version assigned
    (`--registry-mode active`, method `registry:<version>`) are replaced in the same transaction, so
    drift never reads a mix of registry clusters and intent keys."""
    tenant = validate_tenant_id(tenant)
    now = datetime.now(UTC).replace(tzinfo=None)
    with store.transaction() as con:
        con.execute("DELETE FROM cluster_assignments WHERE tenant_id = ? AND starts_with(method, 'registry:')", [tenant])
        traces = con.execute(
            "SELECT s.trace_id, s.intent_key FROM sampled_traces s ANTI JOIN "
            "(SELECT trace_id FROM cluster_assignments WHERE tenant_id = $t) a USING (trace_id) "
            "WHERE s.tenant_id = $t ORDER BY s.trace_id", {"t": tenant}).fetchall()
        assignments = assigner.assign(traces)  # pure computation: fine inside the short transaction
        insert_rows(con, "cluster_assignments", _COLUMNS,
                    [(tenant, a.trace_id, a.cluster, a.method, a.reason, now) for a in assignments])
    missing = sum(a.reason == MISSING_INTENT_KEY for a in assignments)
    if missing:
        log.warning("assign tenant=%s: %d trace(s) carry no intent key (%s); kept as cluster %r",
                    tenant, missing, MISSING_INTENT_KEY, UNASSIGNED)
    return AssignReport(len(assignments), missing)


def assign_for(store: StateStore, data_dir: Path, tenant: str, registry: ActiveRegistry | None) -> AssignReport:
    """The cycle's assign step: intent keys (`registry` None, `--registry-mode off`) or the pinned
    active registry version."""
    if registry is None:
        return assign(store, tenant, IntentKeyAssigner())
    from verdict_daemon.clustering.active import assign_active

    report = assign_active(store, data_dir, tenant, registry)
    return AssignReport(report.assigned, report.missing_intent_key)
