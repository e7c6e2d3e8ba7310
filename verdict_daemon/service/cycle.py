"""The monitoring cycle, defined once: its steps for one tenant, their order, and the one rule for the
active cluster registry.

`verdict pipeline` runs `Cycle.run` (every step once, in order); the daemon
(service/daemon.py) runs the same step methods as one scheduled job per step. The registry rule: a
unit of work (one pipeline run; one daemon assign or drift run for a tenant) pins the tenant's version
once, at its start (`Cycle.pin`), and a drift run reads the clusters assigned under the version its
unit pinned. The pipeline's assign step runs right before its drift step; the daemon's drift job, which
runs apart from the assign job, assigns under its own pin first (`Daemon.drift`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import partial
from typing import Any, cast

from collector.lake_union import LakeUnion
from verdict.tenancy import TenantId
from verdict_daemon.clustering.active import ActiveRegistry, require_active, version_clusters
from verdict_daemon.clustering.assign_step import AssignReport, assign_for
from verdict_daemon.config import DEFAULT_CONVERSATION_TOKENS, DaemonConfig, EvaluatorConfig
from verdict_daemon.errors import DaemonError
from verdict_daemon.lakes import open_lakes
from verdict_daemon.review.routing import RoutingReport, route
from verdict_daemon.service.conversation import CONVERSATION
from verdict_daemon.service.drift_runs import evaluator_config, run_drift
from verdict_daemon.service.evaluation_export import ExportReport, export
from verdict_daemon.service.evaluators import Evaluator, GraphEvaluator, load_target
from verdict_daemon.service.imported_evaluations import (
    ImportedSeries,
    imported_table,
    register_series,
)
from verdict_daemon.service.judge_evaluators import build_judge_evaluator
from verdict_daemon.service.judging import JudgeReport, coverage, judge
from verdict_daemon.service.sampling import SampleReport, sample
from verdict_daemon.service.sentinel_health import HealthGate, summary
from verdict_daemon.store.drift_runs import DriftRunReport
from verdict_daemon.store.state import StateStore

# Signal kinds that mean "got worse" (what --fail-on-signal fails on); improvements are reported only.
ADVERSE_KINDS = ("regression", "coverage_drop")


def store_for(config: DaemonConfig) -> StateStore:
    """The state store of an existing, usable data dir (a missing one is a typo more often than a
    new install: the collector creates it)."""
    data_dir = config.data_dir
    if not data_dir.exists():
        raise DaemonError("invalid_config", f"data_dir: {data_dir} does not exist (start `verdict collector` on it, "
                          "or create it)")
    if not data_dir.is_dir():
        raise DaemonError("invalid_config", f"data_dir: {data_dir} is not a directory")
    if not os.access(data_dir, os.R_OK | os.W_OK | os.X_OK):
        raise DaemonError("storage_error", f"data_dir: {data_dir} is not readable and writable by this user")
    return StateStore(data_dir, lock_timeout=config.state_lock_timeout_seconds)


def build_evaluators(config: DaemonConfig) -> list[Evaluator]:
    """The configured evaluators; only those with `trajectory = true` are shown trajectories (and have them in their
    fingerprint): the others keep the fingerprint they had before trajectories existed."""
    c = config.conversations
    return [build_evaluator(e, c.history_tokens, c.trajectory_steps if e.trajectory else 0, c.conversation_tokens)
            for e in config.evaluators]


def build_evaluator(config: EvaluatorConfig, history_tokens: int = 0, trajectory_steps: int = 0,
                    conversation_tokens: int = DEFAULT_CONVERSATION_TOKENS) -> Evaluator:
    """The evaluator of `config`; `history_tokens` ([conversations]) is its budget for the conversation so far,
    `trajectory_steps` for an agent run's tool trajectory; a conversation evaluator (`unit = "conversation"`)
    is shown a closed conversation within `conversation_tokens`."""
    if config.kind != "graph":
        return build_judge_evaluator(config, history_tokens, trajectory_steps, conversation_tokens)
    from verdict.graph import Pipeline

    target = cast(str, config.graph)  # a graph evaluator names one (EvaluatorConfig checks)
    obj = load_target(target)
    try:
        is_factory = callable(obj) and not isinstance(obj, type | Pipeline)
        pipeline = obj() if is_factory else obj
    except Exception as exc:  # the user's factory failed
        raise DaemonError("evaluator_error", f"{target!r} raised {type(exc).__name__}: {str(exc)[:300]}") from None
    return GraphEvaluator(config.name, target, pipeline, history_tokens, trajectory_steps,
                          conversation_tokens if config.unit == CONVERSATION else 0)


@dataclass(frozen=True)
class Cycle:
    """The steps of one data dir's cycle. Each step takes the tenant and returns its report."""

    config: DaemonConfig
    store: StateStore
    evaluators: list[Evaluator]
    registry_mode: str = "off"  # "active": clusters from the tenant's active registry version
    gate: HealthGate | None = None  # the sentinel check of the evaluators (None: not checked)

    def pin(self, tenant: TenantId) -> ActiveRegistry | None:
        """The registry version a unit of work uses throughout: in active mode the tenant's active version
        (no_active_registry without one), so a version activated meanwhile is used by the next unit, never
        half of this one; None (the intent keys) otherwise."""
        return require_active(self.store, tenant) if self.registry_mode == "active" else None

    def lake(self) -> LakeUnion:
        """The union of the tenant's lakes ([lake]), opened per step: it keeps its listings, so a fresh one
        sees the segments landed since."""
        return open_lakes(self.config.data_dir, self.config.lake)

    def sample(self, tenant: TenantId, as_of: datetime) -> SampleReport:
        """Sample traces, and closed conversations when an evaluator judges conversations."""
        return sample(self.store, self.lake(), tenant, self.config.sampling, as_of, self.config.conversations,
                      judge_conversations=any(e.unit == CONVERSATION for e in self.evaluators))

    def judge(self, tenant: TenantId, evaluator: Evaluator, run_id: str, should_stop: Callable[[], bool]) -> JudgeReport:
        return judge(self.store, tenant, evaluator, self.config.judging, run_id, should_stop)

    def route(self, tenant: TenantId) -> RoutingReport:
        """After judging: queue untrustworthy judgments and the audit sample for human review."""
        return route(self.store, tenant, self.config.review)

    def export(self, tenant: TenantId, should_stop: Callable[[], bool] = lambda: False) -> ExportReport | None:
        """After judging: the judgments not yet exported as OTLP evaluation records; None when
        [export.evaluations] has no endpoint. A failed request is counted in the report, never raised."""
        if self.config.export.evaluations.endpoint is None:
            return None
        return export(self.store, tenant, self.config.export.evaluations, should_stop)

    def assign(self, tenant: TenantId, registry: ActiveRegistry | None) -> AssignReport:
        return assign_for(self.store, self.config.data_dir, tenant, registry, self.lake())

    @property
    def imported(self) -> list[ImportedSeries]:
        """The drift series over other evaluators' records ([[imported_evaluations]])."""
        return [ImportedSeries(c) for c in self.config.imported_evaluations]

    def _drift_config(self):
        """One evaluator's or series' drift config: the tenant's alpha shared among all of them."""
        return evaluator_config(self.config.drift, len(self.evaluators) + len(self.config.imported_evaluations))

    def drift(self, tenant: TenantId, evaluator: Evaluator, as_of: datetime) -> list[DriftRunReport]:
        return run_drift(self.store, tenant, evaluator.fingerprint, self._drift_config(), as_of)

    def drift_imported(self, tenant: TenantId, series: ImportedSeries, as_of: datetime,
                       registry: ActiveRegistry | None) -> list[DriftRunReport]:
        """A drift look at an imported series: its records read from the tenant's lakes, its runs stored under
        its fingerprint like a judge's (registered first, so the report and alerts name it). Its traces are
        clustered as the judged ones are: by `registry` (the unit's pin) when one is active, else by intent key."""
        register_series(self.store, tenant, series)
        lake = self.lake()
        clusters = None if registry is None else partial(
            version_clusters, self.store, self.config.data_dir, tenant, registry, lake)
        return run_drift(self.store, tenant, series.fingerprint, self._drift_config(), as_of,
                         lambda: imported_table(lake, tenant, series, self.config.drift, as_of, clusters))

    def run(self, tenant: TenantId, as_of: datetime, should_stop: Callable[[], bool] = lambda: False) -> dict[str, Any]:
        """Every step once, in order; returns the JSON summary (judged, errors, coverage, signals, ...). With a
        `gate`, the sentinel check runs first and an unhealthy judge stops the cycle (`judge_unhealthy`)."""
        registry = self.pin(tenant)  # pinned for the whole cycle
        health = self.gate.require_all(self.store, tenant, self.evaluators) if self.gate is not None else []
        sampled = self.sample(tenant, as_of)
        run_id = uuid.uuid4().hex
        judged = [self.judge(tenant, e, run_id, should_stop) for e in self.evaluators]
        routed = self.route(tenant)
        exported = self.export(tenant, should_stop)
        assigned = self.assign(tenant, registry)
        runs = [] if should_stop() else [r for e in self.evaluators for r in self.drift(tenant, e, as_of)] + \
            [r for series in self.imported for r in self.drift_imported(tenant, series, as_of, registry)]
        return self._summary(tenant, as_of, registry, health, sampled, judged, routed, assigned, runs, exported)

    def _summary(self, tenant: TenantId, as_of: datetime, registry: ActiveRegistry | None, health: list[dict[str, Any]],
                 sampled: SampleReport, judged: list[JudgeReport], routed: RoutingReport, assigned: AssignReport,
                 runs: list[DriftRunReport], exported: ExportReport | None) -> dict[str, Any]:
        names = {e.fingerprint: e.name for e in self.evaluators} | {s.fingerprint: s.name for s in self.imported}
        low_coverage = [why for j in judged if (why := j.low_coverage(self.config.judging)) is not None]
        signals = [{**asdict(s), "evaluator": names[s.fingerprint], "examples": list(s.examples)}
                   for r in runs for s in r.signals]
        return {
            "tenant_id": tenant,
            "as_of": as_of.isoformat(),
            "registry_mode": self.registry_mode,
            "registry_version": registry.version_id if registry else None,
            "sentinel_health": [summary(h) for h in health],
            "sampled": sampled.sampled,
            "sampled_conversations": sampled.conversations,
            "budget_limited_sampling": sampled.budget_limited,
            "llm_calls_audit": sampled.call_audit.as_json(),
            "content_omitted": sampled.content_omitted,
            "incomplete_windows": [c.as_json() for c in sampled.incomplete()],
            "judged": sum(j.judged for j in judged),
            "errors": sum(j.errors for j in judged),
            "no_content": sum(j.no_content for j in judged),
            "warnings": sampled.warnings() + [w for w in (exported and exported.warning(),) if w] + low_coverage,
            "low_coverage": low_coverage,
            "missing_intent_key": assigned.missing_intent_key,
            "review_queued": routed.queued,
            "evaluation_export": exported.as_dict() if exported is not None else None,
            "evaluators": [{"name": j.evaluator, "fingerprint": j.fingerprint, "unit": j.unit, "pending": j.pending,
                            "judged": j.judged,
                            "errors": j.errors, "no_content": j.no_content, "budget_exhausted": j.budget_exhausted, "stopped": j.stopped,
                            "early_stop": j.early_stop,
                            "input_tokens": j.usage.input_tokens, "output_tokens": j.usage.output_tokens,
                            "cost_usd": round(j.usage.cost_usd, 6), "requests": j.usage.requests,
                            "requests_per_judgment": j.requests_per_judgment,
                            "coverage": coverage(self.store, tenant, j.fingerprint, j.unit)} for j in judged],
            "drift_runs": [{"run_id": r.run_id, "evaluator": names[r.fingerprint], "fingerprint": r.fingerprint,
                            "as_of": r.as_of.isoformat(), "alpha": r.alpha,
                            "judgments": r.judgments, "cells": r.cells, "tested": r.tested, "min_usable": r.min_usable,
                            "not_tested": not_tested(r.cells, r.tested, r.min_usable), "signals": len(r.signals),
                            "reused": r.reused} for r in runs],
            "signals": signals,
            "adverse_signals": sum(s["kind"] in ADVERSE_KINDS for s in signals),
        }


def not_tested(cells: int, tested: int, min_usable: int) -> str | None:
    """Why a run's untested cells were not tested (None when every cell was): "tested 0" alone reads as a pass."""
    if tested >= cells:
        return None
    return (f"{cells - tested} of {cells} cells not tested: fewer than min_usable {min_usable} usable judgments "
            "in the current window or in the windows compared against ([drift] min_usable)")


def run_cycle(config: DaemonConfig, tenant: TenantId, as_of: datetime, evaluators: list[Evaluator],
              registry_mode: str = "off", should_stop: Callable[[], bool] = lambda: False,
              gate: HealthGate | None = None) -> dict[str, Any]:
    """`Cycle.run` on `config`'s data dir: every step once, in order; the JSON summary."""
    return Cycle(config, store_for(config), evaluators, registry_mode, gate).run(tenant, as_of, should_stop)
