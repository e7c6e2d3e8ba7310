"""Cliff's delta from U against the O(n·m) dominance matrix, scipy's U and published values."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import ndtri

from verdict.stats import cliffs_delta, magnitude
from verdict.stats.cliffs_delta import binary_delta


def brute_force(x, y, confidence=0.95):
    """Cliff (1993) directly on the m×n dominance matrix: d, unbiased variance, Feng-Cliff interval."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    m, n = x.size, y.size
    dom = np.sign(x[:, None] - y[None, :])
    d = dom.mean()
    row, col = dom.mean(axis=1), dom.mean(axis=0)
    var = (
        n**2 * np.sum((row - d) ** 2) + m**2 * np.sum((col - d) ** 2) - np.sum((dom - d) ** 2)
    ) / (m * n * (m - 1) * (n - 1))
    var = max(var, (1 - d**2) / (m * n - 1))
    if abs(d) == 1:  # the closed form is 0/0 here; callers check the limit separately
        return d, np.nan, np.nan
    z = ndtri(0.5 + confidence / 2)
    half = z * np.sqrt(var) * np.sqrt((1 - d**2) ** 2 + z**2 * var)
    denom = 1 - d**2 + z**2 * var
    return d, (d - d**3 - half) / denom, (d - d**3 + half) / denom


samples = st.lists(st.integers(-6, 6) | st.floats(-5, 5, allow_nan=False), min_size=2, max_size=25)


@settings(max_examples=300, deadline=None)
@given(samples, samples)
def test_equals_brute_force_dominance_matrix(x, y):
    ours = cliffs_delta(x, y)
    d, low, high = brute_force(x, y)
    assert ours.delta == pytest.approx(d, abs=1e-12)
    if abs(d) < 1:
        assert ours.low == pytest.approx(low, abs=1e-9)
        assert ours.high == pytest.approx(high, abs=1e-9)
    assert ours.low <= ours.delta <= ours.high


def test_delta_is_a_linear_function_of_scipy_u():
    rng = np.random.default_rng(4)
    x, y = rng.integers(0, 10, 300), rng.integers(1, 11, 200)
    u = stats.mannwhitneyu(x, y).statistic
    assert cliffs_delta(x, y).delta == pytest.approx(2 * u / (300 * 200) - 1, abs=1e-12)


def test_effsize_worked_example():
    """Torchiano, effsize::cliff.delta documentation example: treatment 10 10 20 20 20 30 30 30 40 50
    against control 10 20 30 40 40 50 gives delta = -0.25, "small" (Romano et al. 2006 labels)."""
    treatment = [10, 10, 20, 20, 20, 30, 30, 30, 40, 50]
    control = [10, 20, 30, 40, 40, 50]
    result = cliffs_delta(treatment, control)
    assert result.delta == pytest.approx(-0.25)
    assert result.magnitude == "small"
    assert result.low < -0.25 < result.high


@pytest.mark.parametrize(
    ("delta", "label"),
    [
        (0.0, "negligible"),
        (-0.146, "negligible"),
        (0.147, "small"),
        (-0.329, "small"),
        (0.33, "medium"),
        (0.473, "medium"),
        (-0.474, "large"),
        (1.0, "large"),
    ],
)
def test_romano_2006_thresholds(delta, label):
    """Romano et al. (2006): negligible < .147 <= small < .33 <= medium < .474 <= large."""
    assert magnitude(delta) == label


def test_complete_separation_gives_a_finite_interval():
    result = cliffs_delta([5, 6, 7, 8], [1, 2, 3])
    assert result.delta == 1.0
    assert -1 < result.low < 1 and result.high == 1.0


def test_binary_counts_match_the_sample_version_and_rate_difference():
    rng = np.random.default_rng(9)
    for _ in range(20):
        m, n = rng.integers(5, 80, 2)
        x, y = rng.integers(0, 2, m), rng.integers(0, 2, n)
        d, low, high = binary_delta(
            np.array([x.sum()]), np.array([m]), np.array([y.sum()]), np.array([n])
        )
        sample = cliffs_delta(x, y)
        assert d[0] == pytest.approx(x.mean() - y.mean(), abs=1e-12)
        assert d[0] == pytest.approx(sample.delta, abs=1e-12)
        assert (low[0], high[0]) == pytest.approx((sample.low, sample.high), abs=1e-12)


def test_interval_covers_the_true_delta_about_95_percent_of_the_time():
    """Coverage on normal shift data with known delta = 2·Φ(shift/√2) - 1."""
    rng = np.random.default_rng(0)
    shift = 0.5
    true = 2 * stats.norm.cdf(shift / np.sqrt(2)) - 1
    hits = 0
    for _ in range(400):
        r = cliffs_delta(rng.normal(shift, size=60), rng.normal(size=50))
        hits += r.low <= true <= r.high
    assert stats.binom.cdf(hits, 400, 0.95) > 0.001  # not significantly below nominal coverage


def test_small_samples_are_rejected():
    with pytest.raises(ValueError, match="at least 2"):
        cliffs_delta([1.0], [1.0, 2.0])


def test_complete_separation_keeps_delta_inside_its_interval():
    # hypothesis found (-1 + z²v)/(1 + z²v) rounding to -0.9999999999999998 here: an interval excluding -1
    result = cliffs_delta([0, 0, 0, 0], [1] * 7)
    assert result.delta == -1.0 and result.low <= result.delta <= result.high
