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

from verdict.tenancy import TenantId
from verdict_daemon.clustering.versions import UNASSIGNED
from verdict_daemon.store.clusters import MISSING_INTENT_KEY, Assignment, ClusterRepository
from verdict_daemon.store.state import StateStore

if TYPE_CHECKING:
    from collector.lake_union import LakeUnion
    from verdict_daemon.clustering.active import ActiveRegistry

log = logging.getLogger("verdict.daemon")

__all__ = ["MISSING_INTENT_KEY", "Assignment", "AssignReport", "ClusterAssigner", "IntentKeyAssigner", "assign",
           "assign_for"]


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


def assign(store: StateStore, tenant: TenantId, assigner: ClusterAssigner) -> AssignReport:
    """Assign the sampled traces that have no cluster yet. Rows a registry version assigned
    (`--registry-mode active`, method `registry:<version>`) are replaced in the same transaction, so
    drift never reads a mix of registry clusters and intent keys."""
    with ClusterRepository(store).transaction() as tx:
        assignments = tx.assign_unclustered(tenant, assigner.assign,
                                            datetime.now(UTC).replace(tzinfo=None))
    missing = sum(a.reason == MISSING_INTENT_KEY for a in assignments)
    if missing:
        log.warning("assign tenant=%s: %d trace(s) carry no intent key (%s); kept as cluster %r",
                    tenant, missing, MISSING_INTENT_KEY, UNASSIGNED)
    return AssignReport(len(assignments), missing)


def assign_for(store: StateStore, data_dir: Path, tenant: TenantId, registry: ActiveRegistry | None,
               lake: LakeUnion | None = None) -> AssignReport:
    """The cycle's assign step: intent keys (`registry` None, `--registry-mode off`) or the pinned
    active registry version (traces indexed from `lake`, default the data dir's spans)."""
    if registry is None:
        return assign(store, tenant, IntentKeyAssigner())
    from verdict_daemon.clustering.active import assign_active

    report = assign_active(store, data_dir, tenant, registry, lake)
    return AssignReport(report.assigned, report.missing_intent_key)
