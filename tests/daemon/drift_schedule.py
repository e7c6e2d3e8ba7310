"""Simulating the drift job on a schedule: per-period false alarms and detection delay.

Each look runs the daemon's own decision path: `drift_runs.plan` (which runs a look takes, at which
level, for which alert period, given the runs already taken), `drift_runs.decision_detector` and
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
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

import numpy as np
import pyarrow as pa

from verdict.drift import DriftDetector
from verdict.tenancy import TenantId
from verdict_daemon.config import Drift
from verdict_daemon.service.drift_runs import (
    Decision,
    decision_detector,
    evaluator_config,
    lookback,
    plan,
    report_signals,
)

START = datetime(2026, 1, 1)  # naive UTC, a period boundary
Plan = Callable[[Drift, datetime, list[datetime]], list[Decision]]


def legacy_plan(config: Drift, at: datetime, runs: list[datetime]) -> list[Decision]:
    return [Decision(at, config.alpha, (at - datetime(1970, 1, 1)) // config.period)]


def legacy_detector(config: Drift, decision: Decision) -> DriftDetector:
    """Quality and coverage tests each a family at `alpha` (two halves of 2·alpha), the recent baseline only."""
    return config.model_copy(update={"coverage_alpha_share": 0.5, "seasonality": "off",
                                     "reference_weeks": 0}).detector(2 * decision.alpha)


def recent_only(config: Drift, decision: Decision) -> DriftDetector:
    """The detector before issue 27: the recent baseline only, no weekly patterns, no reference, no small-cell
    windows."""
    return config.model_copy(update={"seasonality": "off", "reference_weeks": 0}).detector(decision.alpha)


def per_evaluator(config: Drift, evaluators: int) -> Drift:
    """Before issue 27: every evaluator fingerprint spent the tenant's whole alpha."""
    return config


@dataclass(frozen=True)
class Design:
    """Which runs a look takes, the detector of a run at a given level, and an evaluator's config when a
    tenant has several."""

    plan: Plan
    detector: Callable[[Drift, Decision], DriftDetector]
    share: Callable[[Drift, int], Drift] = evaluator_config


NEW = Design(plan, decision_detector)
BEFORE_27 = Design(plan, recent_only, per_evaluator)  # issue 17's design: the code before issue 27
LEGACY = Design(legacy_plan, legacy_detector, per_evaluator)  # before issue 17


@dataclass(frozen=True)
class Traffic:
    clusters: int = 20
    dimensions: int = 5
    per_day: int = 100  # the sampler's default per cluster per window (the mean over clusters)
    low: float = 0.60  # cell pass rates are drawn uniformly in [low, high]
    high: float = 0.95
    unusable: tuple[float, float] = (0.0, 0.0)  # cell UNCLEAR shares are drawn uniformly in this range
    volume_sigma: float = 0.0  # cluster volumes log-normal with this sigma (mean per_day); 0 = all equal
    weekend: float = 0.0  # every pass rate this much lower on Saturdays and Sundays (UTC)
    evaluators: int = 1  # fingerprints judging every trace, independently
    small: float | None = None  # cluster c00's traces per day (a low-volume intent); None: as the others
    scores: bool = False  # a score per verdict instead: normal, SD 1, the cell's mean drawn in [low, high]


Shift = Callable[[np.ndarray], np.ndarray]  # days since START -> pass-rate (or mean score) change of cell c00/d0


def drop_at(onset: datetime, points: float) -> Shift:
    """A lasting drop of `points` from `onset` on."""
    at = (onset - START) / timedelta(days=1)
    return lambda days: np.where(days >= at, -points, 0.0)


def judgments(traffic: Traffic, days: float, seed: int, drop: tuple[datetime, float] | None = None,
              shift: Shift | None = None, first: float | None = None) -> pa.Table:
    """`days` of judgments from START, sorted by time; `drop` = (onset, points) lowers cell c00/d0 from
    onset on, `shift` moves it by any function of time, `first` pins its pass rate before that."""
    rng = np.random.default_rng(seed)
    weights = rng.lognormal(0, traffic.volume_sigma, traffic.clusters)
    n = int(traffic.clusters * traffic.per_day * days)
    if traffic.small is not None:
        weights = np.full(traffic.clusters, float(traffic.per_day))
        weights[0] = traffic.small
        n = int(weights.sum() * days)
    t = np.sort(rng.uniform(0, days * 86_400e6, n)).astype(np.int64)
    cluster = rng.choice(traffic.clusters, n, p=weights / weights.sum())
    rates = rng.uniform(traffic.low, traffic.high, (traffic.clusters, traffic.dimensions))
    if first is not None:
        rates[0, 0] = first
    per_trace = traffic.dimensions * traffic.evaluators
    ts = np.repeat(t, per_trace)
    cl = np.repeat(cluster, per_trace)
    dim = np.tile(np.repeat(np.arange(traffic.dimensions), traffic.evaluators), n)
    fp = np.tile(np.arange(traffic.evaluators), n * traffic.dimensions)
    p = rates[cl, dim]
    day = ts / 86_400e6
    if traffic.weekend:
        p = p - traffic.weekend * np.isin((START.weekday() + day.astype(np.int64)) % 7, (5, 6))
    if drop is not None:
        shift = drop_at(*drop)
    if shift is not None:
        target = (cl == 0) & (dim == 0)
        p = np.where(target, p + shift(day) * target, p)
    draw = rng.random(ts.size)
    unclear = rng.uniform(*traffic.unusable, (traffic.clusters, traffic.dimensions))[cl, dim]
    value = np.where(draw < unclear, 2, (draw - unclear) < p * (1 - unclear))  # UNCLEAR, else PASS w.p. p
    start_us = int((START - datetime(1970, 1, 1)) / timedelta(microseconds=1))
    verdicts: pa.Array = pa.DictionaryArray.from_arrays(value.astype(np.int32), ["FAIL", "PASS", "UNCLEAR"])
    scores = {}
    if traffic.scores:  # the shift moves the mean, in standard deviations
        verdicts, scores = pa.nulls(ts.size, pa.string()), {"score": pa.array(rng.normal(p, 1.0))}
    return pa.table({
        "started_at": pa.array(ts + start_us, pa.timestamp("us")),
        "trace_id": pa.array(np.repeat(np.arange(n), per_trace)).cast(pa.string()),
        "cluster": pa.DictionaryArray.from_arrays(cl.astype(np.int32), [f"c{i:02d}" for i in range(traffic.clusters)]),
        "dimension": pa.DictionaryArray.from_arrays(dim.astype(np.int32), [f"d{i}" for i in range(traffic.dimensions)]),
        "value": verdicts,
        "fingerprint": pa.DictionaryArray.from_arrays(fp.astype(np.int32), [f"fp{i}" for i in range(traffic.evaluators)]),
        **scores,
    })


@dataclass(frozen=True)
class Alert:
    look: datetime  # when the look that raised it ran
    period: int
    cluster: str
    dimension: str
    kind: str
    fingerprint: str


def visible(config: Drift, at: datetime, runs: list[datetime]) -> list[datetime]:
    """What run_drift reads of the sorted `runs` for a look at `at`: the first run and those since lookback."""
    return runs[:1] + runs[bisect.bisect_left(runs, lookback(config, at)):]


def run_schedule(config: Drift, table: pa.Table, looks: list[datetime], design: Design = NEW,
                 stop: Callable[[Alert], bool] = lambda alert: False) -> list[Alert]:
    """Every alert the looks raise, one per signal id (the first look that raised it), over every evaluator
    fingerprint of the table (each with its own runs, at its share of the tenant's alpha, as the cycle's
    `drift` step); the looks end after the first alert that `stop` accepts."""
    fingerprint = cast(pa.DictionaryArray, table.column("fingerprint").combine_chunks())  # judgments() encodes it
    names = [str(n) for n in fingerprint.dictionary.to_pylist()]
    codes = fingerprint.indices.to_numpy(zero_copy_only=False)
    tables = {name: table.take(np.flatnonzero(codes == i)) for i, name in enumerate(names)}
    config = design.share(config, len(names))
    runs: dict[str, list[datetime]] = {name: [] for name in names}
    seen: dict[str, Alert] = {}
    for at in looks:
        for name, own in tables.items():
            _look(config, own, at, runs[name], design, seen)
        if any(stop(a) for a in seen.values()):
            break
    return list(seen.values())


def _look(config: Drift, table: pa.Table, at: datetime, runs: list[datetime], design: Design,
          seen: dict[str, Alert]) -> None:
    """One evaluator's look at `at`: its decisions, their reports, their signals into `seen`."""
    us = table.column("started_at").combine_chunks().view(pa.int64()).to_numpy()
    epoch = datetime(1970, 1, 1)
    for decision in design.plan(config, at, visible(config, at, runs)):
        bisect.insort(runs, decision.now)
        if not decision.alpha:
            continue
        lo, hi = np.searchsorted(us, [int((decision.now - config.reach - epoch) / timedelta(microseconds=1)),
                                      int((decision.now - epoch) / timedelta(microseconds=1))])
        report = design.detector(config, decision).detect(table.slice(lo, hi - lo), now=decision.now)
        for s in report_signals(report, TenantId("sim"), decision.period):
            seen.setdefault(s.signal_id, Alert(at, decision.period, s.cluster, s.dimension, s.kind, s.fingerprint))


def looks(first: datetime, last: datetime, every: timedelta) -> list[datetime]:
    out = []
    while first < last:
        out.append(first)
        first += every
    return out


def alarmed_periods(config: Drift, traffic: Traffic, periods: int, every: timedelta, seed: int,
                    design: Design = NEW, offset: timedelta = timedelta(minutes=5)) -> tuple[set[int], range]:
    """(alert periods with any alert, periods observed) on clean traffic, after a warm-up of one full reach."""
    span = config.reach + periods * config.period
    table = judgments(traffic, (span + config.period) / timedelta(days=1), seed)
    alerts = run_schedule(config, table, looks(START + config.reach + offset, START + span + offset, every), design)
    first = (START + config.reach - datetime(1970, 1, 1)) // config.period
    observed = range(first, first + periods)
    return {a.period for a in alerts if a.period in observed}, observed


def false_alarm_periods(config: Drift, traffic: Traffic, periods: int, every: timedelta, seed: int,
                        design: Design = NEW, offset: timedelta = timedelta(minutes=5)) -> tuple[int, int]:
    """(alert periods with any alert, periods observed) on clean traffic, after a warm-up of one full reach."""
    alarmed, observed = alarmed_periods(config, traffic, periods, every, seed, design, offset)
    return len(alarmed), len(observed)


def is_weekend(config: Drift, period: int) -> bool:
    return (datetime(1970, 1, 1) + period * config.period).weekday() >= 5


def flagged_looks(config: Drift, traffic: Traffic, days: float, seed: int, shift: Shift, first: float | None,
                  after: datetime, every: timedelta = timedelta(days=1), design: Design = NEW) -> list[datetime]:
    """The looks from `after` to the end of `days` that raise a regression alert on the shifted cell c00/d0."""
    table = judgments(traffic, days + 1, seed, shift=shift, first=first)
    alerts = run_schedule(config, table, looks(after, START + timedelta(days=days), every), design)
    return sorted(a.look for a in alerts if (a.cluster, a.dimension, a.kind) == ("c00", "d0", "regression"))


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


def delay_quantile(delays: list[float | None], q: float, confidence: float = 0.95) -> tuple[float, float, float]:
    """The q-quantile of `delays` (a miss, None, counts as later than any delay: inf) and its distribution-free
    interval: order statistics x(l) <= x(u) with P(x(l) <= quantile <= x(u)) >= confidence, the ranks from
    Binomial(n, q) (the count of delays below the true quantile). Bounds beyond the sample are 0 and inf."""
    from scipy import stats

    x = sorted(math.inf if d is None else d for d in delays)
    n, tail = len(x), (1 - confidence) / 2
    point = x[max(math.ceil(q * n), 1) - 1]
    low = int(stats.binom.ppf(tail, n, q))  # P(B <= low - 1) < tail: x(low) is below the quantile w.p. >= 1 - tail
    high = int(stats.binom.ppf(1 - tail, n, q)) + 1  # P(B <= high - 1) >= 1 - tail
    return point, x[low - 1] if low >= 1 else 0.0, x[high - 1] if high <= n else math.inf
