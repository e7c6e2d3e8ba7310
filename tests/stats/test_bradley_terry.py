"""Bradley-Terry fits against statsmodels' logistic-regression MLE and Agresti's citation example."""

from collections.abc import Hashable

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
    truth: dict[Hashable, float] = {f"m{i}": s - strength.mean() for i, s in enumerate(strength)}
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
    big_a, big_b, big_outcome, _ = simulate(1)
    big = fit_bradley_terry(big_a, big_b, big_outcome, n_resamples=200)
    assert big.unestimable_resamples == 0


def test_bad_input():
    with pytest.raises(ValueError, match="position 1"):
        fit_bradley_terry(["X", "Y"], ["Y", "X"], ["A", "maybe"])
    with pytest.raises(ValueError, match="itself"):
        fit_bradley_terry(["X", "Y"], ["X", "X"], ["A", "B"])
    with pytest.raises(ValueError, match="same length"):
        fit_bradley_terry(["X"], ["Y", "X"], ["A"])


def test_goodness_of_fit_of_the_citation_example():
    """Agresti (2002) §10.6 and the BradleyTerry2 vignette: residual deviance 4.29 on 3 df for the
    journal citations."""
    fit = fit_bradley_terry(*expand(CITATIONS), n_resamples=0)
    assert round(fit.deviance, 2) == 4.29 and fit.df == 3
    assert fit.fit_p_value == pytest.approx(stats_chi2_sf(fit.deviance, 3))


def stats_chi2_sf(x, df):
    from scipy.stats import chi2

    return chi2.sf(x, df)


@pytest.mark.parametrize("order_term", [False, True])
def test_goodness_of_fit_matches_a_binomial_glm(order_term):
    """Residual deviance and df of the same model as a statsmodels binomial GLM on the grouped pairs
    (unordered pairs without the order term, ordered pairs with it); an intransitive cycle fits badly."""
    rng = np.random.default_rng(8)
    models = list("ABCDE")
    strength = np.array([0.0, 0.4, 0.8, -0.3, 1.2])
    a, b, o = [], [], []
    for _ in range(1500):
        i, j = rng.choice(5, 2, replace=False)
        p = 1 / (1 + np.exp(-(strength[i] - strength[j] + (0.3 if order_term else 0.0))))
        a.append(models[i])
        b.append(models[j])
        o.append("A" if rng.random() < p else "B")
    fit = fit_bradley_terry(a, b, o, order_term=order_term, n_resamples=0)
    index = {m: k for k, m in enumerate(fit.models)}
    groups: dict[tuple, list[int]] = {}
    for x, y, res in zip(a, b, o, strict=True):
        i, j, win = index[x], index[y], res == "A"
        if not order_term and i > j:
            i, j, win = j, i, not win
        groups.setdefault((i, j), [0, 0])[0 if win else 1] += 1
    design, endog = [], []
    for (i, j), (w, lose) in sorted(groups.items()):
        row = np.zeros(len(models) + 1)
        row[i], row[j] = 1.0, -1.0
        row[-1] = 1.0
        design.append(row[1:] if order_term else row[1:-1])
        endog.append([w, lose])
    glm = sm.GLM(np.array(endog), np.array(design), family=sm.families.Binomial()).fit()
    assert fit.deviance == pytest.approx(glm.deviance, rel=1e-7)
    assert fit.df == glm.df_resid
    assert fit.fit_p_value > 0.01  # data from the model fit it
    # a rock-paper-scissors cycle: no single rating per model can express it
    cycle = [("A", "B"), ("B", "C"), ("C", "A")] * 100
    bad = fit_bradley_terry([x for x, _ in cycle], [y for _, y in cycle], ["A"] * 240 + ["B"] * 60,
                            n_resamples=0)
    assert bad.fit_p_value < 1e-6
