"""Bradley-Terry ratings from pairwise comparisons, with bootstrap intervals and an optional order term.

Model: P(i beats j) = p_i / (p_i + p_j); with the order term (Agresti's home-advantage model)
P(i beats j | i shown first) = θ·p_i / (θ·p_i + p_j). A tie counts as half a win for each side.
Fitting is maximum likelihood on the count matrices (the logistic-regression form of the model,
Newton-Raphson with step halving); the data are first checked for a finite estimate (Hunter 2004,
Assumption 1). The bootstrap resamples the comparisons by drawing multinomial counts over (first
model, second model, outcome) cells and refits every resample at once, vectorised over the
resample axis, so the cost does not grow with the number of comparisons.

Goodness of fit: the residual deviance of the fit against the saturated model, which gives every
pair its own win probability (every unordered pair without the order term; every ordered pair,
i shown first against j, with it), on df = observed pairs − free parameters, with its chi-square
p-value (the residual deviance and df of the same binomial GLM in statsmodels or R's glm). A small
p says the comparisons are intransitive or context-dependent beyond what one rating per model can
express. The chi-square reference needs several comparisons on most pairs (ties count as half wins,
which makes the deviance approximate).

Ratings are log-strengths centred to mean zero. Resamples without a finite maximum likelihood
estimate (a model that never wins or never loses in that resample) are left out of the
intervals and counted in `unestimable_resamples`; when that count is more than a few percent of
the resamples, the intervals are too narrow and more comparisons are needed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from verdict.stats._arrays import probability

_MAX_ITER = 100  # Newton converges in a handful of steps; this only bounds pathological input
_MAX_HALVINGS = 40
_TOL = 1e-10
_OUTCOMES = {"A": 0, "B": 1, "TIE": 2}


@dataclass(frozen=True)
class BradleyTerryFit:
    models: tuple[Hashable, ...]
    ratings: np.ndarray  # centred log-strengths, index-aligned with `models`
    low: np.ndarray
    high: np.ndarray
    win_probability: np.ndarray  # [i, j] = P(models[i] beats models[j]) with no order effect
    order_effect: float | None  # log θ: advantage of the first position (None without the term)
    order_low: float | None
    order_high: float | None
    n_comparisons: int
    confidence: float
    n_resamples: int
    unestimable_resamples: int  # resamples without a finite MLE, left out of the intervals
    seed: int
    deviance: float  # residual deviance against the saturated model (one win probability per pair)
    df: int  # observed pairs (unordered; ordered with the order term) minus free parameters
    fit_p_value: float  # P(chi-square(df) >= deviance); NaN when df is 0 (the model is saturated)

    def rating(self, model: Hashable) -> float:
        return float(self.ratings[self.models.index(model)])


def fit_bradley_terry(
    model_a: Sequence[Hashable],
    model_b: Sequence[Hashable],
    outcome: Sequence[Any],
    *,
    order_term: bool = False,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BradleyTerryFit:
    """Fit ratings to comparisons of ``model_a[k]`` (shown first) against ``model_b[k]``.

    ``outcome[k]`` is "A" (first wins), "B" (second wins) or "TIE", or the first model's score
    1, 0 or 0.5.
    """
    if not len(model_a) == len(model_b) == len(outcome):
        raise ValueError("model_a, model_b and outcome must have the same length")
    if len(outcome) == 0:
        raise ValueError("no comparisons to fit")
    level = probability("confidence", confidence)
    if n_resamples < 0:
        raise ValueError(f"n_resamples must be >= 0, got {n_resamples}")
    models = tuple(dict.fromkeys([*model_a, *model_b]))
    if len(models) < 2:
        raise ValueError("at least two distinct models are needed")
    index = {m: i for i, m in enumerate(models)}
    a = np.array([index[m] for m in model_a])
    b = np.array([index[m] for m in model_b])
    if np.any(a == b):
        raise ValueError(f"a model is compared with itself at position {int(np.argmax(a == b))}")
    o = np.array([_outcome_code(v, k) for k, v in enumerate(outcome)])
    k = len(models)
    cell_counts = np.bincount((a * k + b) * 3 + o, minlength=k * k * 3).astype(float)
    ok = _estimable(cell_counts[None, :], k, order_term)
    if not ok[0]:
        raise ValueError(_why_not_estimable(cell_counts.reshape(k, k, 3), models, order_term))

    log_p, log_theta, converged = _newton(cell_counts[None, :], k, order_term)
    if not converged[0]:
        raise ValueError("ratings are not estimable: the comparisons separate the models perfectly")
    ratings = log_p[0]
    low = high = np.full(k, np.nan)
    order_low = order_high = None
    unestimable = 0
    if n_resamples:
        rng = np.random.default_rng(seed)
        boot = rng.multinomial(len(o), cell_counts / cell_counts.sum(), size=n_resamples)
        keep = _estimable(boot.astype(float), k, order_term)
        boot_p, boot_theta, converged = _newton(boot[keep].astype(float), k, order_term)
        boot_p, boot_theta = boot_p[converged], boot_theta[converged]
        unestimable = n_resamples - len(boot_p)
        if len(boot_p):
            tail = (1 - level) / 2
            low, high = np.quantile(boot_p, [tail, 1 - tail], axis=0)
            if order_term:
                order_low, order_high = (
                    float(v) for v in np.quantile(boot_theta, [tail, 1 - tail])
                )
    strength = np.exp(ratings)
    win = strength[:, None] / (strength[:, None] + strength[None, :])
    deviance, df = _deviance(cell_counts.reshape(k, k, 3), ratings, float(log_theta[0]), order_term)
    from scipy.stats import chi2
    return BradleyTerryFit(
        models=models,
        ratings=ratings,
        low=low,
        high=high,
        win_probability=win,
        order_effect=float(log_theta[0]) if order_term else None,
        order_low=order_low,
        order_high=order_high,
        n_comparisons=len(o),
        confidence=level,
        n_resamples=n_resamples,
        unestimable_resamples=unestimable,
        seed=seed,
        deviance=deviance,
        df=df,
        fit_p_value=float(chi2.sf(deviance, df)) if df > 0 else float("nan"),
    )


def _deviance(counts: np.ndarray, ratings: np.ndarray, log_theta: float, order_term: bool) -> tuple[float, int]:
    """Residual deviance 2·sum(s·log(s/μ) + f·log(f/(n−μ))) over the pairs, and its df."""
    from scipy.special import expit, xlogy

    first_wins, shown = _wins(counts)
    eta = ratings[:, None] - ratings[None, :] + (log_theta if order_term else 0.0)
    if order_term:  # each ordered pair (i first, j second) is its own observation
        s, n, mu = first_wins, shown, shown * expit(eta)
    else:  # pool both orders: i's wins over j, out of all their comparisons, for i < j
        upper = np.triu(np.ones_like(shown, dtype=bool), 1)
        s = (first_wins + (shown - first_wins).T)[upper]
        n = (shown + shown.T)[upper]
        mu = n * expit(eta[upper])
    seen = n > 0
    s, n, mu = s[seen], n[seen], mu[seen]
    dev = 2.0 * np.sum(xlogy(s, s / mu) + xlogy(n - s, (n - s) / (n - mu)))
    n_params = len(ratings) - 1 + (1 if order_term else 0)
    return float(max(dev, 0.0)), int(seen.sum()) - n_params


def _outcome_code(value: Any, position: int) -> int:
    if isinstance(value, str) and value.upper() in _OUTCOMES:
        return _OUTCOMES[value.upper()]
    if not isinstance(value, str):
        score = {1.0: 0, 0.0: 1, 0.5: 2}.get(float(value))
        if score is not None:
            return score
    raise ValueError(
        f"outcome at position {position} is {value!r}; expected 'A', 'B', 'TIE', 1, 0 or 0.5"
    )


def _wins(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From counts [..., i, j, outcome]: wins of first i over second j, and comparisons shown."""
    return c[..., 0] + 0.5 * c[..., 2], c.sum(axis=-1)


def _estimable(cell_counts: np.ndarray, k: int, order_term: bool) -> np.ndarray:
    """Per count vector: does a finite MLE exist?

    Bradley-Terry needs the "beats" graph to be strongly connected (Hunter 2004, Assumption 1):
    every model reaches every other through a chain of wins (ties count both ways). The order
    term also needs the first position to win some and lose some comparisons.
    """
    first_wins, shown = _wins(cell_counts.reshape(-1, k, k, 3))
    beats = (first_wins + (shown - first_wins).transpose(0, 2, 1)) > 0  # [r, i, j]: i beat j
    reach = beats | np.eye(k, dtype=bool)
    for _ in range(int(np.ceil(np.log2(k)))):  # path doubling: reach within 2^t steps
        reach = (reach.astype(np.float32) @ reach.astype(np.float32)) > 0
    ok: np.ndarray = reach.all(axis=(1, 2))
    if order_term:
        home = first_wins.sum(axis=(1, 2))
        ok &= (home > 0) & (home < shown.sum(axis=(1, 2)))
        # and the order term must not be a combination of the ratings on the pairs actually shown
        i, j, x = _design(k, True)
        observed = x[None, :, :] * (shown[:, i, j] > 0)[:, :, None]
        ok &= np.linalg.matrix_rank(observed) == x.shape[1]
    return ok


def _why_not_estimable(counts: np.ndarray, models: tuple[Hashable, ...], order_term: bool) -> str:
    first_wins, shown = _wins(counts)
    wins = first_wins.sum(axis=1) + (shown - first_wins).sum(axis=0)
    losses = (shown - first_wins).sum(axis=1) + first_wins.sum(axis=0)
    stuck = [str(models[i]) for i in np.flatnonzero((wins == 0) | (losses == 0))]
    if stuck:
        return f"ratings are not estimable: model(s) {stuck} never win or never lose"
    if not _estimable(counts.reshape(1, -1), len(models), False)[0]:
        return "ratings are not estimable: the models split into groups with no wins between them"
    if first_wins.sum() in (0, shown.sum()):
        side = "always" if first_wins.sum() else "never"
        return f"the order effect is not estimable: the first position {side} wins"
    return "the order effect cannot be told apart from the ratings: show pairs in both orders"


def _design(k: int, order_term: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ordered pairs (i first, j second) and their rows e_i - e_j (+ 1 for the order term).

    Model 0 is the reference (log p_0 = 0), so its column is dropped.
    """
    i, j = np.nonzero(~np.eye(k, dtype=bool))
    x = np.zeros((i.size, k + 1))
    x[np.arange(i.size), i] = 1.0
    x[np.arange(i.size), j] = -1.0
    x[:, k] = 1.0
    return i, j, (x[:, 1 : k + 1] if order_term else x[:, 1:k])


def _newton(
    cell_counts: np.ndarray, k: int, order_term: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximum likelihood for a batch of count vectors: centred log p, log θ, and whether it converged.

        The model is a logistic regression of first-position wins on (e_i - e_j [+ 1 for the order
        term]) over the k(k-1) ordered pairs, fitted by Newton-Raphson with step halving, vectorised
        over the batch. The log-likelihood is concave, so every accepted step climbs it; a row whose
    estimate runs off to infinity (separated data) never converges and is reported as such.
    """
    first_wins, shown = _wins(cell_counts.reshape(-1, k, k, 3))
    i, j, x = _design(k, order_term)
    s, n = first_wins[:, i, j], shown[:, i, j]  # [r, pair]

    def loglik(beta: np.ndarray) -> np.ndarray:
        eta = beta @ x.T
        total: np.ndarray = np.sum(s * eta - n * np.logaddexp(0.0, eta), axis=1)
        return total

    from scipy.special import expit

    beta = np.zeros((s.shape[0], x.shape[1]))
    current = loglik(beta)
    converged = np.zeros(len(beta), dtype=bool)
    # A tiny ridge keeps every Newton system solvable; it changes steps, not the fixed point.
    ridge = 1e-9 * np.eye(x.shape[1])
    for _ in range(_MAX_ITER):
        eta = beta @ x.T
        grad = (s - n * expit(eta)) @ x
        weight = n * expit(eta) * expit(-eta)  # never exactly 0, unlike mu * (1 - mu)
        hess = np.einsum("rp,pa,pb->rab", weight, x, x) + ridge
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        scale = np.ones(len(beta))
        for _ in range(_MAX_HALVINGS):
            candidate = beta + scale[:, None] * step
            value = loglik(candidate)
            worse = value < current - 1e-12 * np.abs(current)
            if not worse.any():
                break
            scale[worse] /= 2.0
        beta, current = candidate, value
        converged |= np.max(np.abs(scale[:, None] * step), axis=1) < _TOL
        if converged.all():
            break
    log_p = np.concatenate([np.zeros((len(beta), 1)), beta[:, : k - 1]], axis=1)
    log_theta = beta[:, k - 1] if order_term else np.zeros(len(beta))
    return log_p - log_p.mean(axis=1, keepdims=True), log_theta, converged
