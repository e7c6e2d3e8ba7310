"""Wilson interval and two-proportion power / MDE against statsmodels and published tables."""

import numpy as np
import pytest
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint, proportion_effectsize

from verdict.stats import (
    cohens_h,
    minimum_detectable_delta,
    minimum_detectable_drop,
    two_proportion_power,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_newcombe_1998_table(k, n, low, high):
    """Newcombe (1998), Statistics in Medicine 17:857-872, Table II, method 3 (Wilson 1927 score)."""
    r = wilson_interval(k, n)
    assert (round(r.low, 4), round(r.high, 4)) == (low, high)


def test_matches_statsmodels_wilson():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 2000))
        k = int(rng.integers(0, n + 1))
        conf = float(rng.choice([0.8, 0.9, 0.95, 0.99]))
        ref = proportion_confint(k, n, alpha=1 - conf, method="wilson")
        r = wilson_interval(k, n, confidence=conf)
        assert (r.low, r.high) == pytest.approx(ref, abs=1e-12)


def test_wilson_input_errors():
    with pytest.raises(ValueError, match="exceed"):
        wilson_interval(5, 3)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 3, confidence=1.0)
    assert np.isnan(wilson_interval(0, 0).value)


def test_cohens_h_matches_statsmodels_and_cohen_1988():
    """Cohen (1988), Statistical Power Analysis, Table 6.2.1: phi = 2·asin(sqrt(p)); h(.65, .45) = .40."""
    assert cohens_h(0.65, 0.45) == pytest.approx(proportion_effectsize(0.65, 0.45))
    assert round(cohens_h(0.65, 0.45), 2) == 0.40


@pytest.mark.parametrize(
    ("p1", "p2", "n1", "n2"), [(0.85, 0.7, 400, 3000), (0.5, 0.55, 1000, 1000), (0.9, 0.95, 30, 60)]
)
def test_power_matches_statsmodels(p1, p2, n1, n2):
    ref = NormalIndPower().power(proportion_effectsize(p1, p2), nobs1=n1, alpha=0.05, ratio=n2 / n1)
    assert two_proportion_power(p1, p2, n1, n2) == pytest.approx(ref, rel=1e-10)


def test_cohen_1988_sample_size_for_small_effect():
    """Cohen (1988) Table 6.4.1: h = .20, alpha = .05 two-sided, power .80 needs n = 392 per group."""
    mde_at_392 = minimum_detectable_drop(0.5, 392, 392)
    h = cohens_h(0.5, 0.5 - float(mde_at_392))
    assert h == pytest.approx(0.2, abs=0.001)


@pytest.mark.parametrize(
    ("rate", "n1", "n2"), [(0.85, 3000, 400), (0.5, 100, 100), (0.95, 500, 80)]
)
def test_mde_inverts_statsmodels_power(rate, n1, n2):
    drop = float(minimum_detectable_drop(rate, n1, n2, alpha=0.05, power=0.8))
    h_ref = NormalIndPower().solve_power(nobs1=n1, alpha=0.05, power=0.8, ratio=n2 / n1)
    assert cohens_h(rate, rate - drop) == pytest.approx(h_ref, rel=1e-4)
    assert two_proportion_power(rate, rate - drop, n1, n2) == pytest.approx(0.8, abs=1e-4)


def test_mde_is_capped_at_the_baseline_rate_and_vectorised():
    drops = minimum_detectable_drop(
        np.array([0.02, 0.9]), np.array([10, 10_000]), np.array([10, 10_000])
    )
    assert drops[0] == pytest.approx(0.02)
    assert 0 < drops[1] < 0.02


def test_mde_delta_shrinks_with_sample_size():
    small, large = minimum_detectable_delta(np.array([30, 3000]), np.array([30, 3000]))
    assert large < small
    # null SD of delta is sqrt((n1+n2+1)/(3 n1 n2)); 2.8016 = z_.975 + z_.80
    assert small == pytest.approx(2.8016 * np.sqrt(61 / (3 * 900)), rel=1e-3)
