"""Bradley-Terry ratings from pairwise comparisons, with bootstrap intervals and an optional order term.

Model: P(i beats j) = p_i / (p_i + p_j); with the order term (Agresti's home-advantage model)
P(i beats j | i shown first) = θ·p_i / (θ·p_i + p_j). A tie counts as half a win for each side.
Fitting is Hunter's (2004) MM algorithm on count matrices, which converges to the maximum
likelihood estimate. The bootstrap resamples the comparisons by drawing multinomial counts over
(first model, second model, outcome) cells and refits every resample at once, vectorised over the
resample axis, so the cost does not grow with the number of comparisons.

Ratings are log-strengths centred to mean zero. A bootstrap bound of ±inf means some resamples
saw a model never win (or never lose), where its maximum likelihood rating does not exist.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from verdict.stats._arrays import probability

_MAX_ITER = 10_000
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
    seed: int

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
    _check_estimable(cell_counts.reshape(k, k, 3), models)

    log_p, log_theta = _mm(cell_counts[None, :], k, order_term)
    ratings = log_p[0]
    low = high = np.full(k, np.nan)
    order_low = order_high = None
    if n_resamples:
        rng = np.random.default_rng(seed)
        boot = rng.multinomial(len(o), cell_counts / cell_counts.sum(), size=n_resamples).astype(float)
        boot_p, boot_theta = _mm(boot, k, order_term)
        tail = (1 - level) / 2
        # inverted_cdf picks order statistics, so ±inf resamples never turn bounds into NaN
        low, high = np.nanquantile(boot_p, [tail, 1 - tail], axis=0, method="inverted_cdf")
        if order_term:
            order_low, order_high = (float(v) for v in np.quantile(boot_theta, [tail, 1 - tail], method="inverted_cdf"))
    strength = np.exp(ratings)
    win = strength[:, None] / (strength[:, None] + strength[None, :])
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
        seed=seed,
    )


def _outcome_code(value: Any, position: int) -> int:
    if isinstance(value, str) and value.upper() in _OUTCOMES:
        return _OUTCOMES[value.upper()]
    if not isinstance(value, str):
        score = {1.0: 0, 0.0: 1, 0.5: 2}.get(float(value))
        if score is not None:
            return score
    raise ValueError(f"outcome at position {position} is {value!r}; expected 'A', 'B', 'TIE', 1, 0 or 0.5")


def _check_estimable(counts: np.ndarray, models: tuple[Hashable, ...]) -> None:
    """The MLE exists only if every model both wins and loses (ties count half) somewhere."""
    first_wins = counts[:, :, 0] + 0.5 * counts[:, :, 2]
    second_wins = counts[:, :, 1] + 0.5 * counts[:, :, 2]
    wins = first_wins.sum(axis=1) + second_wins.sum(axis=0)
    losses = second_wins.sum(axis=1) + first_wins.sum(axis=0)
    bad = [str(models[i]) for i in np.flatnonzero((wins == 0) | (losses == 0))]
    if bad:
        raise ValueError(f"ratings are unbounded: model(s) {bad} never win or never lose")


def _mm(cell_counts: np.ndarray, k: int, order_term: bool) -> tuple[np.ndarray, np.ndarray]:
    """Hunter's MM iterations for a batch of count vectors; returns centred log p and log θ."""
    c = cell_counts.reshape(-1, k, k, 3)
    first_wins = c[..., 0] + 0.5 * c[..., 2]  # [r, i, j]: i first beats j second
    shown = c.sum(axis=-1)  # [r, i, j]: comparisons with i first, j second
    wins = first_wins.sum(axis=2) + (shown - first_wins).sum(axis=1)
    home_wins = first_wins.sum(axis=(1, 2))
    present = (shown.sum(axis=2) + shown.sum(axis=1)) > 0  # a resample can miss a rare model
    p = np.ones((c.shape[0], k))
    theta = np.ones(c.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(_MAX_ITER):
            t = theta[:, None, None]
            denom_first = t * p[:, :, None] + p[:, None, :]  # [r, i, j] for i first
            weight = shown * t / denom_first  # d/dp_i of the terms where i is first
            weight_second = shown / denom_first  # d/dp_j of the terms where j is second
            new_p = np.where(present, wins / (weight.sum(axis=2) + weight_second.sum(axis=1)), 0.0)
            new_p /= new_p.sum(axis=1, keepdims=True)
            if order_term:
                theta = home_wins / np.sum(shown * p[:, :, None] / denom_first, axis=(1, 2))
            done = np.max(np.abs(new_p - p)) < _TOL
            p = new_p
            if done:
                break
        log_p = np.where(present, np.log(p), np.nan)
    finite = np.where(np.isfinite(log_p), log_p, np.nan)
    centred = log_p - np.nanmean(finite, axis=1, keepdims=True)
    return centred, np.log(theta)
