"""Small cells (issue 27, item 3): a cell under `min_usable` in the alert period is tested over
`small_cell_weeks` once per that many weeks, inside one closing decision, so its period's budget is unchanged.

Every simulation runs the daemon's own decision path (`drift_runs.plan`, `drift_runs.decision_detector`,
`drift_runs.report_signals`), see tests/daemon/drift_schedule.py, after a warm-up of one full reach. Rates
carry Clopper-Pearson intervals; a rate is "above alpha" when the one-sided binomial test rejects at 0.001.
The figures of docs/statistics.md ("Small cells") come from bench/drift_real_traffic.py --small-cells.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from tests.daemon.drift_schedule import (
    NEW,
    START,
    Traffic,
    alarmed_periods,
    drop_at,
    flagged_looks,
    judgments,
    looks,
    visible,
)
from tests.daemon.test_drift_real_traffic import _interval
from verdict.drift import CellStatus
from verdict_daemon.config import Drift
from verdict_daemon.service.drift_runs import decision_detector, plan

DAY = timedelta(days=1)
# A low-volume intent: c00 has 8 traces a day (56 a week), the nine others 100.
LOW = Traffic(clusters=10, dimensions=3, per_day=100, small=8)
REPLICATES = 8


def _flagged(config: Drift, seed: int) -> list[datetime]:
    """Daily looks for 15 days after a 30-point drop of c00/d0 (0.90 -> 0.60) on the first warm day."""
    warm = config.reach / DAY
    onset = START + timedelta(days=warm + np.random.default_rng(seed).uniform(0, 1))
    return flagged_looks(config, LOW, warm + 15, seed, drop_at(onset, 0.30), 0.90, START + config.reach,
                         design=NEW)


def test_a_low_volume_cell_with_a_real_drop_is_flagged_by_the_weekly_decision():
    on, off = Drift(small_cell_weeks=1), Drift(small_cell_weeks=0)
    hits = [_flagged(on, seed) for seed in range(REPLICATES)]
    flagged = sum(bool(h) for h in hits)
    assert proportion_confint(flagged, REPLICATES, alpha=0.05, method="beta")[0] >= 0.6, _interval(flagged, REPLICATES)
    assert all(look.weekday() == 0 and look.time() == datetime.min.time() for h in hits for look in h)  # Mondays
    assert not any(_flagged(off, seed) for seed in range(REPLICATES))  # never tested without the option


def test_without_the_option_the_cell_is_not_tested_and_with_it_over_the_week():
    monday = START + timedelta(days=39)
    assert monday.weekday() == 0
    table = judgments(LOW, 40, 0, drop=(START + timedelta(days=31), 0.30), first=0.90)
    on = Drift(small_cell_weeks=1)
    weekly = plan(on, monday, [monday - DAY])[-1]
    assert weekly.small_cells and weekly.now == monday
    report = decision_detector(on, weekly).detect(table, now=monday)
    cell = report.cell("fp0", "c00", "d0")
    assert cell.small_cell and cell.status is CellStatus.REGRESSION, cell
    assert cell.current.usable >= 30 and report.small_cell_start == (monday - timedelta(weeks=1)).replace(tzinfo=UTC)
    assert report.cell("fp0", "c01", "d0").small_cell is False  # 100 a day: tested over the day
    daily = decision_detector(Drift(small_cell_weeks=0), weekly).detect(table, now=monday)
    before = daily.cell("fp0", "c00", "d0")
    assert before.status is CellStatus.INSUFFICIENT and before.current.usable < 30
    assert report.window_to_test(cell) is None and daily.window_to_test(before) > DAY  # "a 5-day window would reach it"


def test_small_cells_are_tested_once_a_week_inside_one_closing_decision():
    """Hourly looks for four weeks, with the daemon down over one Monday midnight: every small-cell test is a
    closing decision at a Monday 00:00, exactly one per week, and each period's levels still add up to alpha."""
    config = Drift()
    schedule = [at for at in looks(START + timedelta(minutes=5), START + timedelta(days=28), timedelta(hours=1))
                if not START + timedelta(days=10, hours=23) <= at < START + timedelta(days=11, hours=2)]
    assert (START + timedelta(days=11)).weekday() == 0  # down from Sunday 23:00 to Monday 02:00
    runs: list[datetime] = []
    spent: dict[int, float] = {}
    weekly = []
    for at in schedule:
        for d in plan(config, at, visible(config, at, runs)):
            runs = sorted({*runs, d.now})
            spent[d.period] = spent.get(d.period, 0.0) + d.alpha
            if d.small_cells:
                weekly.append(d)
    assert [d.now for d in weekly] == [datetime(2026, 1, 5), datetime(2026, 1, 12), datetime(2026, 1, 19),
                                       datetime(2026, 1, 26)]
    assert all(d.alpha == pytest.approx(0.04) for d in weekly)  # the closing level: no extra spending
    assert max(spent.values()) <= config.alpha + 1e-12


def test_clean_traffic_of_small_cells_stays_within_alpha_per_period():
    """Every cell small (10 traces a day), alpha 0.2: the weekly decisions test them all over a week. Looks
    at each Monday 00:00 (catch_up_periods 1): only the periods that hold small-cell tests are decided."""
    config = Drift(alpha=0.2, catch_up_periods=1)
    traffic = Traffic(clusters=12, dimensions=4, per_day=10, low=0.6, high=0.95, unusable=(0.0, 0.2))
    alarms = periods = tested = 0
    for seed in range(12):
        alarmed, observed = alarmed_periods(config, traffic, 56, timedelta(weeks=1), seed, offset=timedelta(days=2))
        decided = [p for p in observed if (datetime(1970, 1, 1) + p * config.period).weekday() == 6]
        alarms, periods = alarms + len(alarmed), periods + len(decided)
        tested += _tested_small(config, traffic, seed)
    assert periods == 96 and tested == 12 * 48  # every cell of every weekly decision tested over its week
    assert stats.binom.sf(alarms - 1, periods, config.alpha) >= 0.001, _interval(alarms, periods)


def _tested_small(config: Drift, traffic: Traffic, seed: int) -> int:
    monday = START + timedelta(days=39)
    weekly = plan(config, monday, [monday - DAY])[-1]
    report = decision_detector(config, weekly).detect(judgments(traffic, 40, seed), now=monday)
    return sum(c.small_cell and c.p_value is not None for c in report.cells)
