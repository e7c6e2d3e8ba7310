"""Simulating the drift job on a schedule: per-period false alarms and detection delay.

Each look runs the daemon's own decision path: `drift_runs.plan` (which runs a look takes, at which
level, for which alert period, given the runs already taken), `Drift.detector(level)` and
`drift_runs.report_signals` (signal ids, deduplicated per alert period as `alert_deliveries` does).
Only the state store is left out: the runs taken so far are kept in a list, as `as_of` values, which
is all `plan` reads from `drift_runs` (`visible`). Traffic is the sampler's shape: `per_day` judged
traces per cluster per day, uniform in time, each graded on every dimension; a share of the verdicts
(`unusable`, drawn per cell) is UNCLEAR, which the coverage tests watch. Alerts of every kind count.

`LEGACY` is the design before issue 17 (every look decides at the full alpha on the window ending at the
look, alert period = the UTC day of the look, the quality and the coverage tests each a family at that
alpha), kept to reproduce its false-alarm rate.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa

from verdict.drift import DriftDetector
from verdict.tenancy import TenantId
from verdict_daemon.config import Drift
from verdict_daemon.service.drift_runs import Decision, lookback, plan, report_signals

START = datetime(2026, 1, 1)  # naive UTC, a period boundary
Plan = Callable[[Drift, datetime, list[datetime]], list[Decision]]


def legacy_plan(config: Drift, at: datetime, runs: list[datetime]) -> list[Decision]:
    return [Decision(at, config.alpha, (at - datetime(1970, 1, 1)) // config.period)]


def legacy_detector(config: Drift, alpha: float) -> DriftDetector:
    """Quality and coverage tests each a family at `alpha` (two halves of 2·alpha)."""
    return config.model_copy(update={"coverage_alpha_share": 0.5}).detector(2 * alpha)


@dataclass(frozen=True)
class Design:
    """Which runs a look takes, and the detector of a run at a given level."""

    plan: Plan
    detector: Callable[[Drift, float], DriftDetector]


NEW = Design(plan, Drift.detector)
LEGACY = Design(legacy_plan, legacy_detector)


@dataclass(frozen=True)
class Traffic:
    clusters: int = 20
    dimensions: int = 5
    per_day: int = 100  # the sampler's default per cluster per window
    low: float = 0.60  # cell pass rates are drawn uniformly in [low, high]
    high: float = 0.95
    unusable: tuple[float, float] = (0.0, 0.0)  # cell UNCLEAR shares are drawn uniformly in this range


def judgments(traffic: Traffic, days: float, seed: int, drop: tuple[datetime, float] | None = None) -> pa.Table:
    """`days` of judgments from START, sorted by time; `drop` = (onset, points) lowers cell c00/d0."""
    rng = np.random.default_rng(seed)
    n = int(traffic.clusters * traffic.per_day * days)
    t = np.sort(rng.uniform(0, days * 86_400e6, n)).astype(np.int64)
    cluster = rng.integers(0, traffic.clusters, n)
    rates = rng.uniform(traffic.low, traffic.high, (traffic.clusters, traffic.dimensions))
    ts = np.repeat(t, traffic.dimensions)
    cl = np.repeat(cluster, traffic.dimensions)
    dim = np.tile(np.arange(traffic.dimensions), n)
    p = rates[cl, dim]
    if drop is not None:
        onset = int((drop[0] - START) / timedelta(microseconds=1))
        p = np.where((cl == 0) & (dim == 0) & (ts >= onset), p - drop[1], p)
    draw = rng.random(ts.size)
    unclear = rng.uniform(*traffic.unusable, (traffic.clusters, traffic.dimensions))[cl, dim]
    value = np.where(draw < unclear, 2, (draw - unclear) < p * (1 - unclear))  # UNCLEAR, else PASS w.p. p
    start_us = int((START - datetime(1970, 1, 1)) / timedelta(microseconds=1))
    return pa.table({
        "started_at": pa.array(ts + start_us, pa.timestamp("us")),
        "trace_id": pa.array(np.repeat(np.arange(n), traffic.dimensions)).cast(pa.string()),
        "cluster": pa.DictionaryArray.from_arrays(cl.astype(np.int32), [f"c{i:02d}" for i in range(traffic.clusters)]),
        "dimension": pa.DictionaryArray.from_arrays(dim.astype(np.int32), [f"d{i}" for i in range(traffic.dimensions)]),
        "value": pa.DictionaryArray.from_arrays(value.astype(np.int32), ["FAIL", "PASS", "UNCLEAR"]),
        "fingerprint": pa.DictionaryArray.from_arrays(np.zeros(ts.size, np.int32), ["fp"]),
    })


@dataclass(frozen=True)
class Alert:
    look: datetime  # when the look that raised it ran
    period: int
    cluster: str
    dimension: str
    kind: str


def visible(config: Drift, at: datetime, runs: list[datetime]) -> list[datetime]:
    """What run_drift reads of the sorted `runs` for a look at `at`: the first run and those since lookback."""
    return runs[:1] + runs[bisect.bisect_left(runs, lookback(config, at)):]


def run_schedule(config: Drift, table: pa.Table, looks: list[datetime], design: Design = NEW,
                 stop: Callable[[Alert], bool] = lambda alert: False) -> list[Alert]:
    """Every alert the looks raise, one per signal id (the first look that raised it); the looks end
    after the first alert that `stop` accepts."""
    us = table.column("started_at").combine_chunks().view(pa.int64()).to_numpy()
    epoch = datetime(1970, 1, 1)
    history = config.period + timedelta(hours=config.gap_hours) + timedelta(days=config.baseline_days)
    runs: list[datetime] = []
    seen: dict[str, Alert] = {}
    for at in looks:
        for decision in design.plan(config, at, visible(config, at, runs)):
            bisect.insort(runs, decision.now)
            if not decision.alpha:
                continue
            lo, hi = np.searchsorted(us, [int((decision.now - history - epoch) / timedelta(microseconds=1)),
                                          int((decision.now - epoch) / timedelta(microseconds=1))])
            report = design.detector(config, decision.alpha).detect(table.slice(lo, hi - lo), now=decision.now)
            for s in report_signals(report, TenantId("sim"), decision.period):
                seen.setdefault(s.signal_id, Alert(at, decision.period, s.cluster, s.dimension, s.kind))
        if any(stop(a) for a in seen.values()):
            break
    return list(seen.values())


def looks(first: datetime, last: datetime, every: timedelta) -> list[datetime]:
    out = []
    while first < last:
        out.append(first)
        first += every
    return out


def false_alarm_periods(config: Drift, traffic: Traffic, periods: int, every: timedelta, seed: int,
                        design: Design = NEW, offset: timedelta = timedelta(minutes=5)) -> tuple[int, int]:
    """(alert periods with any alert, periods observed) on clean traffic, after a warm-up of one full history."""
    history = config.period + timedelta(hours=config.gap_hours) + timedelta(days=config.baseline_days)
    span = history + periods * config.period
    table = judgments(traffic, (span + config.period) / timedelta(days=1), seed)
    alerts = run_schedule(config, table, looks(START + history + offset, START + span + offset, every), design)
    first = (START + history - datetime(1970, 1, 1)) // config.period
    return len({a.period for a in alerts if first <= a.period < first + periods}), periods


def detection_delays(config: Drift, traffic: Traffic, points: float, seeds: range, every: timedelta,
                     design: Design = NEW, horizon: timedelta = timedelta(days=3)) -> list[float | None]:
    """Hours from a drop's onset (uniform over a day) to the first regression alert of its cell, or None."""
    out: list[float | None] = []
    for seed in seeds:
        rng = np.random.default_rng(10_000 + seed)
        onset = START + timedelta(days=9, seconds=float(rng.uniform(0, 86_400)))
        table = judgments(traffic, 9 + 1 + horizon / timedelta(days=1) + 1, seed, drop=(onset, points))
        schedule = looks(START + timedelta(days=9, minutes=5), onset + horizon, every)
        def caught(a: Alert, onset: datetime = onset) -> bool:
            return (a.cluster, a.dimension, a.kind) == ("c00", "d0", "regression") and a.look >= onset

        hits = [a.look for a in run_schedule(config, table, schedule, design, caught) if caught(a)]
        out.append((min(hits) - onset) / timedelta(hours=1) if hits else None)
    return out
