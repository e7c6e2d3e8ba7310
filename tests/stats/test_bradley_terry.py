"""Bradley-Terry fits against statsmodels' logistic-regression MLE and Agresti's citation example."""

import numpy as np
import pytest
import statsmodels.api as sm

from verdict.stats import fit_bradley_terry

JOURNALS = ["Biometrika", "Comm Statist", "JASA", "JRSS-B"]
# Stigler (1994) citations as in Agresti (2002) Categorical Data Analysis p. 448 (BradleyTerry2's
# `citations`): row = cited journal (the winner), column = citing journal. Self-citations ignored.
CITATIONS = [[714, 730, 498, 221], [33, 425, 68, 17], [320, 813, 1072, 142], [284, 276, 325, 188]]


def expand(counts):
    a, b, o = [], [], []
    for i, row in enumerate(counts):
        for j, n in enumerate(row):
            if i != j:
                a += [JOURNALS[i]] * n
                b += [JOURNALS[j]] * n
                o += ["A"] * n
    return a, b, o


def test_agresti_citation_example():
    """Published MLE (BradleyTerry2 vignette, Biometrika = 0): Comm Statist -2.9491, JASA -0.4796,
    JRSS-B 0.2690."""
    fit = fit_bradley_terry(*expand(CITATIONS), n_resamples=200, seed=1)
    rel = [fit.rating(j) - fit.rating("Biometrika") for j in JOURNALS[1:]]
    assert rel == pytest.approx([-2.9491, -0.4796, 0.2690], abs=1e-4)
    assert fit.ratings.mean() == pytest.approx(0.0, abs=1e-12)
    assert all(lo < r < hi for lo, r, hi in zip(fit.low, fit.ratings, fit.high, strict=True))


def simulate(seed, n=2000, k=8, tie_rate=0.1, order=0.0):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 0.8, k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    p_first = 1 / (1 + np.exp(-(strength[a] - strength[b] + order)))
    outcome = np.where(rng.random(n) < tie_rate, 0.5, (rng.random(n) < p_first).astype(float))
    return a, b, outcome, strength


def glm_reference(a, b, outcome, k, order_term):
    x = np.zeros((a.size, k))
    x[np.arange(a.size), a] += 1
    x[np.arange(a.size), b] -= 1
    design = x[:, 1:] if not order_term else np.column_stack([np.ones(a.size), x[:, 1:]])
    params = sm.GLM(outcome, design, family=sm.families.Binomial()).fit(tol=1e-12).params
    log_p = np.r_[0.0, params[-(k - 1) :]]
    return log_p - log_p.mean(), (params[0] if order_term else None)


@pytest.mark.parametrize("order_term", [False, True])
def test_matches_logistic_regression_mle(order_term):
    a, b, outcome, _ = simulate(3, order=0.4 if order_term else 0.0)
    names = [f"m{i}" for i in range(8)]
    fit = fit_bradley_terry(
        [names[i] for i in a], [names[i] for i in b], outcome, order_term=order_term, n_resamples=0
    )
    ref, ref_order = glm_reference(a, b, outcome, 8, order_term)
    ours = np.array([fit.rating(n) for n in names])
    np.testing.assert_allclose(ours, ref, atol=1e-6)
    if order_term:
        assert fit.order_effect == pytest.approx(ref_order, abs=1e-6)
    else:
        assert fit.order_effect is None


def test_ties_count_as_half_wins():
    """Two ties between X and Y equal one win each way."""
    ties = fit_bradley_terry(
        ["X", "X", "Y", "Z", "Z"],
        ["Y", "Y", "Z", "X", "Y"],
        ["TIE", "TIE", "A", "A", "B"],
        n_resamples=0,
    )
    split = fit_bradley_terry(
        ["X", "Y", "Y", "Z", "Z"],
        ["Y", "X", "Z", "X", "Y"],
        ["A", "A", "A", "A", "B"],
        n_resamples=0,
    )
    np.testing.assert_allclose(ties.ratings, split.ratings, atol=1e-8)


def test_win_probabilities_and_bootstrap_determinism():
    a, b, outcome, strength = simulate(5)
    names = [f"m{i}" for i in range(8)]
    args = ([names[i] for i in a], [names[i] for i in b], outcome)
    fit = fit_bradley_terry(*args, n_resamples=300, seed=9)
    again = fit_bradley_terry(*args, n_resamples=300, seed=9)
    np.testing.assert_array_equal(fit.low, again.low)
    w = fit.win_probability
    np.testing.assert_allclose(w + w.T, 1.0)
    best, worst = (
        fit.models.index(f"m{np.argmax(strength)}"),
        fit.models.index(f"m{np.argmin(strength)}"),
    )
    assert w[best, worst] > 0.5
    # the simulated truth lies inside most 95 % intervals
    truth = {f"m{i}": s - strength.mean() for i, s in enumerate(strength)}
    inside = sum(
        lo <= truth[m] <= hi for m, lo, hi in zip(fit.models, fit.low, fit.high, strict=True)
    )
    assert inside >= 6


def test_unestimable_data_is_rejected_with_the_reason():
    with pytest.raises(ValueError, match=r"\['X', 'Y'\] never win or never lose"):
        fit_bradley_terry(["X", "X"], ["Y", "Y"], ["A", "A"], n_resamples=0)
    # two groups that were never compared with each other
    with pytest.raises(ValueError, match="split into groups"):
        fit_bradley_terry(["P", "Q", "R", "S"], ["Q", "P", "S", "R"], ["A", "A", "A", "A"])
    with pytest.raises(ValueError, match="first position always wins"):
        fit_bradley_terry(["X", "Y"], ["Y", "X"], ["A", "A"], order_term=True)
    # every pair shown in one order only: position and rating cannot be told apart
    with pytest.raises(ValueError, match="both orders"):
        fit_bradley_terry(
            ["X", "X", "Y", "Y"], ["Y", "Y", "Z", "Z"], ["A", "B", "A", "B"], order_term=True
        )


def test_small_samples_report_unestimable_resamples():
    a, b, outcome, _ = simulate(1, n=30, k=4, tie_rate=0.0)
    fit = fit_bradley_terry(list(a), list(b), outcome, n_resamples=500, seed=2)
    assert 0 < fit.unestimable_resamples < 500
    assert np.all(fit.low < fit.ratings) and np.all(fit.ratings < fit.high)
    big = fit_bradley_terry(*simulate(1)[:2], simulate(1)[2], n_resamples=200)
    assert big.unestimable_resamples == 0


def test_bad_input():
    with pytest.raises(ValueError, match="position 1"):
        fit_bradley_terry(["X", "Y"], ["Y", "X"], ["A", "maybe"])
    with pytest.raises(ValueError, match="itself"):
        fit_bradley_terry(["X", "Y"], ["X", "X"], ["A", "B"])
    with pytest.raises(ValueError, match="same length"):
        fit_bradley_terry(["X"], ["Y", "X"], ["A"])
