"""Fisher's exact test against scipy.stats.fisher_exact and published worked examples."""

import numpy as np
import pytest
from scipy import stats

from verdict.stats import fisher_exact, fisher_exact_many


def test_lady_tasting_tea():
    """Fisher (1935), The Design of Experiments, ch. 2; as tabulated in Agresti (2002) Categorical
    Data Analysis, 2nd ed., Table 3.8: 3 of 4 milk-first cups identified, two-sided P = 34/70 = 0.486,
    and all 4 identified, P = 2/70."""
    assert fisher_exact([[3, 1], [1, 3]]).p_value == pytest.approx(34 / 70, rel=1e-12)
    assert fisher_exact([[4, 0], [0, 4]]).p_value == pytest.approx(2 / 70, rel=1e-12)
    assert fisher_exact([[3, 1], [1, 3]]).odds_ratio == pytest.approx(9.0)


def test_matches_scipy_on_random_tables():
    rng = np.random.default_rng(7)
    tables = np.concatenate([rng.integers(0, 15, (400, 4)), rng.integers(0, 400, (100, 4))])
    got = fisher_exact_many(*tables.T)
    for row, p, odds in zip(tables, got.p_value, got.odds_ratio, strict=True):
        ref = stats.fisher_exact(row.reshape(2, 2))
        assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
        if np.isnan(ref.statistic):
            assert np.isnan(odds)
        else:
            assert odds == pytest.approx(ref.statistic)


def test_large_and_lopsided_tables_match_scipy():
    tables = [
        (3500, 500, 400, 100),
        (4000, 10, 3990, 30),
        (0, 5000, 7, 4000),
        (2500, 2500, 2500, 2500),
    ]
    got = fisher_exact_many(*np.array(tables).T)
    for t, p in zip(tables, got.p_value, strict=True):
        assert p == pytest.approx(
            stats.fisher_exact(np.reshape(t, (2, 2))).pvalue, rel=1e-8, abs=1e-300
        )


def test_identical_tables_share_one_result_and_order_is_kept():
    a = np.array([3, 9, 3, 0])
    b = np.array([1, 2, 1, 5])
    c = np.array([1, 4, 1, 5])
    d = np.array([3, 1, 3, 0])
    got = fisher_exact_many(a, b, c, d)
    assert got.p_value[0] == got.p_value[2]
    for i in range(4):
        assert got.p_value[i] == pytest.approx(
            stats.fisher_exact(np.array([[a[i], b[i]], [c[i], d[i]]])).pvalue
        )


def test_chunking_over_many_large_tables():
    """More support points than one chunk holds: results still match scipy."""
    rng = np.random.default_rng(3)
    tables = rng.integers(1000, 3000, (1200, 4))
    got = fisher_exact_many(*tables.T)
    for i in rng.choice(len(tables), 25, replace=False):
        ref = stats.fisher_exact(tables[i].reshape(2, 2)).pvalue
        assert got.p_value[i] == pytest.approx(ref, rel=1e-8, abs=1e-300)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([[1, -1], [2, 3]], "non-negative"),
        ([[1, 2, 3], [1, 2, 3]], "2x2"),
        ([[1.5, 1], [1, 1]], "whole"),
    ],
)
def test_bad_tables_are_rejected(table, message):
    with pytest.raises(ValueError, match=message):
        fisher_exact(table)


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError, match="same length"):
        fisher_exact_many([1, 2], [1], [1, 2], [1, 2])


@pytest.mark.parametrize("alternative", ["less", "greater"])
def test_one_sided_matches_scipy(alternative):
    """One-sided p-values (scipy's and R's `alternative`); the tea-tasting one-sided P is 17/70."""
    assert fisher_exact([[3, 1], [1, 3]], alternative="greater").p_value == pytest.approx(17 / 70, rel=1e-12)
    rng = np.random.default_rng(11)
    a, b, c, d = (rng.integers(0, 60, 400) for _ in range(4))
    batch = fisher_exact_many(a, b, c, d, alternative=alternative)
    for i in range(400):
        ref = stats.fisher_exact(np.array([[a[i], b[i]], [c[i], d[i]]]), alternative=alternative).pvalue
        assert batch.p_value[i] == pytest.approx(ref, rel=1e-9, abs=1e-300)


def test_unknown_alternative_is_refused():
    with pytest.raises(ValueError, match="alternative must be one of"):
        fisher_exact([[1, 2], [3, 4]], alternative="bigger")  # type: ignore[arg-type]  # the invalid value is the point
