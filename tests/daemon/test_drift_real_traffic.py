"""Drift on real traffic (issue 27): weekly patterns, slow drifts, lasting drops, several evaluators.

Every simulation runs the daemon's own decision path (`drift_runs.plan`, `Drift.detector`,
`drift_runs.report_signals`, the evaluator's share of the tenant's alpha), see tests/daemon/drift_schedule.py,
after a warm-up of one full reach (the reference and the same weekdays have data). `BEFORE_27` is the same
path with the recent baseline only and a whole alpha per evaluator: the code before this issue, simulated
next to it so that each test shows what it fixes. Rates carry Clopper-Pearson intervals (statsmodels), and
a rate is "above alpha" when the one-sided binomial test rejects at the 0.001 level. The long sweeps with
the figures of docs/statistics.md are in bench/drift_real_traffic.py.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from tests.daemon.conftest import NOW, make_config
from tests.daemon.drift_schedule import (
    BEFORE_27,
    NEW,
    START,
    Traffic,
    alarmed_periods,
    drop_at,
    flagged_looks,
    is_weekend,
    judgments,
)
from tests.daemon.test_drift_runs import _rows
from verdict.tenancy import TenantId
from verdict_daemon.config import Drift
from verdict_daemon.service.cycle import build_evaluators, run_cycle

DAY = timedelta(days=1)
# The weekly shape: 40 intents x 6 dimensions, log-normal volumes (mean 100 a day), every pass rate
# 0.85 on weekdays and 0.78 on Saturdays and Sundays, nothing broken.
WEEKLY = Traffic(clusters=40, dimensions=6, per_day=100, low=0.85, high=0.85, weekend=0.07, volume_sigma=1.0)


def _above(alarms: int, periods: int, alpha: float) -> bool:
    return stats.binom.sf(alarms - 1, periods, alpha) < 0.001


def _interval(hits: int, n: int) -> str:
    low, high = proportion_confint(hits, n, alpha=0.05, method="beta")
    return f"{hits}/{n} [{low:.2f}, {high:.2f}]"


def test_a_weekly_pattern_raises_no_more_than_alpha_per_period():
    """Six weeks of looks every 6 hours (closing decisions and early looks); the weekend days count apart."""
    config = Drift()
    alarmed, observed = alarmed_periods(config, WEEKLY, 42, timedelta(hours=6), 3)
    weekends = [p for p in observed if is_weekend(config, p)]
    on_weekends = sum(p in alarmed for p in weekends)
    assert not _above(len(alarmed), len(observed), config.alpha), _interval(len(alarmed), len(observed))
    assert not _above(on_weekends, len(weekends), config.alpha), _interval(on_weekends, len(weekends))
    before, observed = alarmed_periods(config, WEEKLY, 42, DAY, 3, BEFORE_27, offset=timedelta(0))
    before_weekends = sum(p in before for p in weekends)
    assert _above(before_weekends, len(weekends), config.alpha), _interval(before_weekends, len(weekends))


def test_a_weekly_pattern_is_found_by_the_automatic_check():
    """The cells of the weekly traffic are seasonal on a Saturday; on stationary traffic few are."""
    config = Drift()
    saturday = START + timedelta(days=38)  # the window ending then is Saturday 2026-02-07
    assert (saturday - DAY).weekday() == 5
    weekly = config.detector().detect(judgments(WEEKLY, 39, 4), now=saturday)
    assert sum(c.seasonal for c in weekly.cells) / len(weekly.cells) > 0.9
    flat = Traffic(clusters=40, dimensions=6, per_day=100, low=0.85, high=0.85, volume_sigma=1.0)
    stationary = config.detector().detect(judgments(flat, 39, 4), now=saturday)
    assert sum(c.seasonal for c in stationary.cells) / len(stationary.cells) < 0.2


REPLICATES = 12
FLAT = Traffic(clusters=10, dimensions=6, per_day=100)


def test_a_slow_drift_of_one_point_a_day_is_flagged():
    """Cell c00/d0 falls from 0.90 to 0.70 over 20 days, then stays; daily closing decisions for 30 days."""
    config = Drift()
    warm = config.reach / DAY
    slow = lambda days: -np.clip(days - warm, 0, 20) / 100  # noqa: E731
    def flagged(design) -> int:
        return sum(bool(flagged_looks(config, FLAT, warm + 30, seed, slow, 0.90, START + config.reach, design=design))
                   for seed in range(REPLICATES))

    new, before = flagged(NEW), flagged(BEFORE_27)
    assert proportion_confint(new, REPLICATES, alpha=0.05, method="beta")[0] >= 0.5, _interval(new, REPLICATES)
    assert before <= 3, _interval(before, REPLICATES)  # the sliding baseline: rarely if ever


def test_a_lasting_drop_missed_at_first_is_not_absorbed():
    """A 20-point drop on a 60-a-day cell; nobody looks in its first three days, then daily for a week."""
    config = Drift()
    traffic = Traffic(clusters=10, dimensions=6, per_day=60)
    warm = config.reach / DAY

    def flagged(design) -> int:
        hits = 0
        for seed in range(REPLICATES):
            onset = START + timedelta(days=warm + np.random.default_rng(seed).uniform(0, 1))
            hits += bool(flagged_looks(config, traffic, warm + 11, seed, drop_at(onset, 0.20), 0.90,
                                       START + timedelta(days=warm + 4), design=design))
        return hits

    new, before = flagged(NEW), flagged(BEFORE_27)
    assert proportion_confint(new, REPLICATES, alpha=0.05, method="beta")[0] >= 0.5, _interval(new, REPLICATES)
    assert before <= 3, _interval(before, REPLICATES)


def test_several_evaluators_share_one_alpha_per_tenant():
    """Five evaluators on one tenant, clean traffic, alpha 0.2: the tenant's periods stay within alpha."""
    config = Drift(alpha=0.2)
    traffic = Traffic(clusters=4, dimensions=5, per_day=100, evaluators=5)
    alarmed, observed = alarmed_periods(config, traffic, 24, DAY, 5, offset=timedelta(0))
    assert not _above(len(alarmed), len(observed), config.alpha), _interval(len(alarmed), len(observed))
    before, observed = alarmed_periods(config, traffic, 24, DAY, 5, BEFORE_27, offset=timedelta(0))
    assert len(before) > len(alarmed) and len(before) / len(observed) > config.alpha, _interval(len(before), 24)


def test_the_stored_runs_of_all_evaluators_spend_at_most_alpha_per_period(lake):
    """Through the state store: two evaluators of one tenant, one closing decision each, alpha split."""
    judge = make_config(lake).evaluators[0].model_dump(mode="json", exclude_defaults=True)
    config = make_config(lake, evaluators=[judge, {**judge, "name": "second", "per_dimension": True}])
    evaluators = build_evaluators(config)
    assert len({e.fingerprint for e in evaluators}) == 2
    run_cycle(config, TenantId("acme"), NOW, evaluators)  # on the grid: the closing decision of the day before
    spent = _rows(lake, "SELECT as_of, sum(alpha), count(DISTINCT fingerprint) FROM drift_runs GROUP BY as_of")
    assert [(n, round(a, 12)) for _, a, n in spent] == [(2, 0.04)]
