"""One monitoring cycle for one tenant: sample → judge → assign → drift. Used by `verdict-pipeline`
(once) and by the daemon's jobs (each step on its own schedule)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import Any, cast

from verdict_daemon.clustering.active import require_active
from verdict_daemon.clustering.assign_step import assign_for
from verdict_daemon.config import DaemonConfig, EvaluatorConfig
from verdict_daemon.errors import DaemonError
from verdict_daemon.review.routing import route
from verdict_daemon.service.drift_runs import run_drift
from verdict_daemon.service.evaluators import Evaluator, GraphEvaluator, load_target
from verdict_daemon.service.judge_evaluators import build_judge_evaluator
from verdict_daemon.service.judging import coverage, judge
from verdict_daemon.service.sampling import sample
from verdict_daemon.service.sentinel_health import HealthGate, summary
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
    return [build_evaluator(e) for e in config.evaluators]


def build_evaluator(config: EvaluatorConfig) -> Evaluator:
    if config.kind != "graph":
        return build_judge_evaluator(config)
    from verdict.graph import Pipeline

    target = cast(str, config.graph)  # a graph evaluator names one (EvaluatorConfig checks)
    obj = load_target(target)
    try:
        is_factory = callable(obj) and not isinstance(obj, type | Pipeline)
        pipeline = obj() if is_factory else obj
    except Exception as exc:  # the user's factory failed
        raise DaemonError("evaluator_error", f"{target!r} raised {type(exc).__name__}: {str(exc)[:300]}") from None
    return GraphEvaluator(config.name, target, pipeline)


def run_cycle(config: DaemonConfig, tenant: str, as_of: datetime, evaluators: list[Evaluator],
              registry_mode: str = "off", should_stop: Callable[[], bool] = lambda: False,
              gate: HealthGate | None = None) -> dict[str, Any]:
    """Run every step once; returns the JSON summary (judged, errors, coverage, signals, ...). With a
    `gate`, the sentinel check runs first and an unhealthy judge stops the cycle (`judge_unhealthy`)."""
    store = store_for(config)
    # Pinned for the whole cycle: a version activated meanwhile is used by the next cycle, never half of this one.
    registry = require_active(store, tenant) if registry_mode == "active" else None
    health = gate.require_all(store, tenant, evaluators) if gate is not None else []
    sampled = sample(store, config.data_dir, tenant, config.sampling, as_of)
    run_id = uuid.uuid4().hex
    judged = [judge(store, tenant, e, config.judging, run_id, should_stop) for e in evaluators]
    routed = route(store, tenant, config.review)  # untrustworthy judgments and the audit sample
    assigned = assign_for(store, config.data_dir, tenant, registry)
    names = {e.fingerprint: e.name for e in evaluators}
    runs = [] if should_stop() else [r for e in evaluators for r in run_drift(store, tenant, e.fingerprint,
                                                                               config.drift, as_of)]
    signals = [{**asdict(s), "evaluator": names[s.fingerprint], "examples": list(s.examples)}
               for r in runs for s in r.signals]
    return {
        "tenant_id": tenant,
        "as_of": as_of.isoformat(),
        "registry_mode": registry_mode,
        "registry_version": registry.version_id if registry else None,
        "sentinel_health": [summary(h) for h in health],
        "sampled": sampled.sampled,
        "budget_limited_sampling": sampled.budget_limited,
        "judged": sum(j.judged for j in judged),
        "errors": sum(j.errors for j in judged),
        "no_content": sum(j.no_content for j in judged),
        "warnings": [w for w in (sampled.warning(),) if w],
        "missing_intent_key": assigned.missing_intent_key,
        "review_queued": routed.queued,
        "evaluators": [{"name": j.evaluator, "fingerprint": j.fingerprint, "pending": j.pending, "judged": j.judged,
                        "errors": j.errors, "no_content": j.no_content, "budget_exhausted": j.budget_exhausted, "stopped": j.stopped,
                        "early_stop": j.early_stop,
                        "input_tokens": j.usage.input_tokens, "output_tokens": j.usage.output_tokens,
                        "cost_usd": round(j.usage.cost_usd, 6),
                        "coverage": coverage(store, tenant, j.fingerprint)} for j in judged],
        "drift_runs": [{"run_id": r.run_id, "evaluator": names[r.fingerprint], "fingerprint": r.fingerprint,
                        "as_of": r.as_of.isoformat(), "alpha": r.alpha,
                        "judgments": r.judgments, "cells": r.cells, "tested": r.tested, "signals": len(r.signals),
                        "reused": r.reused} for r in runs],
        "signals": signals,
        "adverse_signals": sum(s["kind"] in ADVERSE_KINDS for s in signals),
    }
