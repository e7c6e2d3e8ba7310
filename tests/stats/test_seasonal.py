"""The weekly-pattern check (verdict.drift.seasonal) against independent references, and the window
geometry of a seasonal cell (verdict.drift.windows)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from scipy.stats import chi2_contingency
from statsmodels.stats.contingency_tables import StratifiedTable

from verdict.drift.input import us
from verdict.drift.seasonal import homogeneity_p, stratified_homogeneity_p
from verdict.drift.windows import Layout


def test_homogeneity_matches_scipy_chi2_contingency():
    rng = np.random.default_rng(1)
    tables = rng.integers(5, 80, (20, 6, 2))
    tables[3, 2] = 0  # an empty group is left out
    ours = homogeneity_p(tables)
    for t, p in zip(tables, ours, strict=True):
        kept = t[t.sum(axis=1) > 0]
        assert np.isclose(p, chi2_contingency(kept, correction=False).pvalue, rtol=1e-9)
    assert homogeneity_p(np.array([[[10, 0], [20, 0]]]))[0] == 1.0  # every row passed: no evidence


def test_stratified_homogeneity_matches_statsmodels_with_two_groups():
    rng = np.random.default_rng(2)
    tables = rng.integers(3, 60, (8, 2, 2))
    expected = StratifiedTable(np.moveaxis(tables, 0, -1).astype(float)).test_null_odds(correction=False).pvalue
    assert np.isclose(stratified_homogeneity_p(tables), expected, rtol=1e-9)


def test_stratified_homogeneity_of_one_stratum_is_pearson_scaled():
    table = np.array([[30, 12], [25, 20], [40, 9], [22, 22]])
    n = table.sum()
    stat = chi2_contingency(table, correction=False).statistic * (n - 1) / n
    from scipy.stats import chi2

    assert np.isclose(stratified_homogeneity_p(table[None]), chi2.sf(stat, 3), rtol=1e-9)


def test_same_weekday_windows_and_the_reference():
    now = datetime(2026, 2, 8, tzinfo=UTC)
    day = timedelta(days=1)
    layout = Layout(us(now), us(now - day), us(now - 9 * day), us(now - 2 * day), seasonal_weeks=3,
                    reference_weeks=3)
    at = lambda *ts: np.array([us(t) for t in ts])  # noqa: E731
    same = at(now - day - 7 * day, now - 7 * day - timedelta(microseconds=1),
              now - day - 21 * day)
    assert layout.seasonal(same).all()
    outside = at(now - day - 28 * day, now - day - 6 * day, now - day - 7 * day - timedelta(microseconds=1))
    assert not layout.seasonal(outside).any()
    assert layout.other_phases(at(now - day - 6 * day)).all()
    assert layout.reference(at(now - 30 * day, now - 23 * day - timedelta(microseconds=1))).all()
    assert not layout.reference(at(now - 23 * day, now - 30 * day - timedelta(microseconds=1))).any()
    assert layout.earliest == us(now - 30 * day)


def test_a_cell_too_small_to_test_says_which_window_would_test_it():
    from tests.daemon.drift_schedule import START, Traffic, judgments
    from verdict.drift import DriftDetector

    table = judgments(Traffic(clusters=1, dimensions=1, per_day=12), 10, 1)
    report = DriftDetector(seasonality="off").detect(table, now=START + timedelta(days=10))
    [cell] = report.cells
    assert cell.p_value is None and 0 < cell.current.usable < 30
    assert report.window_to_test(cell) == timedelta(days=-(-30 // cell.current.usable))
