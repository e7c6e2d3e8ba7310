"""Mann-Whitney U against scipy.stats.mannwhitneyu (same method choices) and Conover's example."""

import numpy as np
import pytest
from scipy import stats

from verdict.stats import mann_whitney_u


def test_conover_diabetes_ages():
    """Conover (1980), Practical Nonparametric Statistics, ages at diagnosis (the example in scipy's
    mannwhitneyu docs): males 19 22 16 29 24, females 20 11 17 12: U = 17, exact two-sided p = 1/9."""
    males, females = [19, 22, 16, 29, 24], [20, 11, 17, 12]
    exact = mann_whitney_u(males, females)
    assert exact.method == "exact"
    assert exact.u == 17
    assert exact.p_value == pytest.approx(1 / 9, rel=1e-12)
    assert mann_whitney_u(males, females, method="asymptotic").p_value == pytest.approx(
        0.11134688653314041
    )


@pytest.mark.parametrize(
    ("n1", "n2", "ties"),
    [
        (3, 4, False),
        (8, 8, False),
        (2, 60, False),
        (8, 300, False),
        (9, 9, False),
        (5, 7, True),
        (40, 50, True),
        (200, 150, False),
    ],
)
def test_matches_scipy_auto(n1, n2, ties):
    rng = np.random.default_rng(n1 * 1000 + n2)
    x, y = rng.normal(size=n1), rng.normal(0.4, size=n2)
    if ties:
        x, y = np.round(x), np.round(y)
    ours = mann_whitney_u(x, y)
    ref = stats.mannwhitneyu(x, y)
    assert ours.u == pytest.approx(ref.statistic)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)
    small_without_ties = min(n1, n2) <= 8 and not ties
    assert ours.method == ("exact" if small_without_ties else "asymptotic")


@pytest.mark.parametrize("method", ["exact", "asymptotic"])
def test_forced_methods_match_scipy(method):
    rng = np.random.default_rng(11)
    x, y = rng.normal(size=12), rng.normal(1, size=15)
    ours = mann_whitney_u(x, y, method=method)
    assert ours.p_value == pytest.approx(stats.mannwhitneyu(x, y, method=method).pvalue, rel=1e-9)


def test_without_continuity_correction_matches_scipy():
    rng = np.random.default_rng(2)
    x, y = rng.integers(0, 5, 30), rng.integers(1, 6, 25)
    ours = mann_whitney_u(x, y, continuity=False)
    assert ours.p_value == pytest.approx(
        stats.mannwhitneyu(x, y, use_continuity=False).pvalue, rel=1e-9
    )


def test_all_values_identical_is_not_significant():
    assert mann_whitney_u([1.0] * 20, [1.0] * 30).p_value == 1.0


@pytest.mark.parametrize(
    ("x", "message"),
    [([], "at least 1"), ([1.0, float("nan")], "NaN"), ([[1, 2]], "one-dimensional")],
)
def test_bad_samples_are_rejected(x, message):
    with pytest.raises(ValueError, match=message):
        mann_whitney_u(x, [1, 2, 3])


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match="method"):
        mann_whitney_u([1, 2], [3, 4], method="permutation")  # type: ignore[arg-type]  # the invalid value is the point


@pytest.mark.parametrize("alternative", ["less", "greater"])
@pytest.mark.parametrize("method", ["exact", "asymptotic", "auto"])
def test_one_sided_matches_scipy(alternative, method):
    rng = np.random.default_rng(4)
    for _ in range(100):
        m, n = (int(v) for v in rng.integers(1, 9, 2))
        x = rng.normal(0.3, 1, m)
        y = rng.normal(0, 1, n)
        if method != "exact" and rng.random() < 0.5:  # ties only where scipy allows them
            x, y = np.round(x), np.round(y)
        ours = mann_whitney_u(x, y, method=method, alternative=alternative)
        ref = stats.mannwhitneyu(x, y, method=method, alternative=alternative)
        assert ours.u == ref.statistic
        assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)


def test_conover_one_sided():
    """Conover's ages: males older than females, exact one-sided p = 1/18."""
    assert mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12], alternative="greater").p_value == \
        pytest.approx(1 / 18, rel=1e-12)


def test_unknown_alternative_is_refused():
    with pytest.raises(ValueError, match="alternative must be one of"):
        mann_whitney_u([1, 2], [3, 4], alternative="two_sided")  # type: ignore[arg-type]  # the invalid value is the point
