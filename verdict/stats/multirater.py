"""Agreement among several raters on the same items: Fleiss' kappa, Gwet's AC1, Krippendorff's alpha.

Every coefficient is computed from the items × categories count matrix ``counts[i, c]`` = number of
raters who put item i in category c (``rating_counts`` builds it from raw ratings with missing
labels). Raters need not be the same people on every item.

- Fleiss' kappa (Fleiss 1971) needs the same number of raters on every item (statsmodels
  ``fleiss_kappa``, method "fleiss").
- Gwet's AC1 (Gwet 2008; irrCAC ``gwet.ac1.raw``): items with at least two ratings give the observed
  agreement, every rated item gives the category prevalence; missing labels are fine.
- Krippendorff's alpha (Krippendorff 2011): 1 - observed/expected disagreement over the coincidence
  matrix of pairable values (items with at least two ratings); "nominal", "ordinal" (categories in
  the given order) or "interval" (category values) distances; missing labels are fine.
Intervals: percentile bootstrap over items (seeded; items are the sampling unit, raters fixed),
vectorised over the resamples; ``std_error`` is the standard deviation of the replicates. When a
resample puts every rating in one category the coefficient is undefined there, and leaving such
resamples out would bias the interval: the interval and SE are then NaN (collect more items).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Literal

import numpy as np

from verdict.stats._arrays import counts as as_counts
from verdict.stats._arrays import probability
from verdict.stats.interrater import Coefficient

Level = Literal["nominal", "ordinal", "interval"]
_LEVELS = ("nominal", "ordinal", "interval")


def rating_counts(ratings: Sequence[Sequence[Hashable | None]], categories: Sequence[Hashable]) -> np.ndarray:
    """Items × categories counts from ``ratings[i]`` = the labels of item i (None for a missing label)."""
    index = {c: k for k, c in enumerate(categories)}
    if len(index) < 2:
        raise ValueError("at least two distinct categories are needed")
    out = np.zeros((len(ratings), len(index)), dtype=np.int64)
    for i, row in enumerate(ratings):
        for label in row:
            if label is None:
                continue
            if label not in index:
                raise ValueError(f"item {i}: rating {label!r} is not one of the categories {list(index)}")
            out[i, index[label]] += 1
    return out


def fleiss_kappa(counts: Any, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Coefficient:
    """Fleiss' kappa; every item must have the same number (>= 2) of ratings."""
    c = _matrix(counts, min_per_item=2)
    r = c.sum(axis=1)
    if np.any(r != r[0]):
        raise ValueError("Fleiss' kappa needs the same number of raters on every item; with missing labels use "
                         "Krippendorff's alpha or Gwet's AC1")
    return _with_interval(_fleiss, c, confidence, n_resamples, seed)


def gwet_ac1_raters(counts: Any, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Coefficient:
    """Gwet's AC1 for any number of raters per item (items with one rating count for prevalence only)."""
    c = _matrix(counts, min_per_item=1)
    return _with_interval(_ac1, c, confidence, n_resamples, seed)


def krippendorff_alpha(counts: Any, *, level: Level = "nominal", values: Sequence[float] | None = None,
                       confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Coefficient:
    """Krippendorff's alpha; `values` are the categories' numbers for the interval level (default 0, 1, …)."""
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {_LEVELS}, got {level!r}")
    c = _matrix(counts, min_per_item=0)
    c = c[c.sum(axis=1) >= 2]  # only pairable values take part
    if len(c) < 2:
        raise ValueError("Krippendorff's alpha needs at least two items with two or more ratings")
    q = c.shape[1]
    numbers = np.arange(q, dtype=float) if values is None else np.asarray(values, dtype=float)
    if numbers.shape != (q,) or not np.all(np.isfinite(numbers)):
        raise ValueError(f"values must be {q} finite numbers, one per category")

    def statistic(batch: np.ndarray) -> np.ndarray:
        return _alpha(batch, level, numbers)

    return _with_interval(statistic, c, confidence, n_resamples, seed)


def _matrix(counts: Any, *, min_per_item: int) -> np.ndarray:
    c = as_counts("counts", counts)
    if c.ndim != 2 or c.shape[1] < 2:
        raise ValueError(f"counts must be an items × categories matrix with >= 2 categories, got shape {c.shape}")
    per_item = c.sum(axis=1)
    c = c[per_item > 0]  # an item nobody rated carries no information
    if len(c) < 2:
        raise ValueError("at least two rated items are needed")
    if np.any(c.sum(axis=1) < min_per_item):
        raise ValueError(f"every item needs at least {min_per_item} ratings")
    matrix: np.ndarray = c.astype(float)  # (numpy types a masked array's astype Any)
    return matrix


def _fleiss(batch: np.ndarray) -> np.ndarray:
    """Fleiss' kappa of each [b, items, q] count matrix."""
    r = batch.sum(axis=2)
    p_item = (np.sum(batch**2, axis=2) - r) / (r * (r - 1))
    p_cat = batch.sum(axis=1) / r.sum(axis=1, keepdims=True)
    pe = np.sum(p_cat**2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (p_item.mean(axis=1) - pe) / (1 - pe), np.nan)


def _ac1(batch: np.ndarray) -> np.ndarray:
    """Gwet's AC1 of each [b, items, q] count matrix (irrCAC's unweighted raw-ratings estimator)."""
    q = batch.shape[2]
    r = batch.sum(axis=2)
    pairable = r >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        agree = np.where(pairable, np.sum(batch * (batch - 1), axis=2) / (r * (r - 1)), 0.0)
        pa = agree.sum(axis=1) / pairable.sum(axis=1)
        pi = np.mean(batch / r[..., None], axis=1)
        pe = np.sum(pi * (1 - pi), axis=1) / (q - 1)
        return np.where(pe < 1, (pa - pe) / (1 - pe), np.nan)


def _alpha(batch: np.ndarray, level: Level, values: np.ndarray) -> np.ndarray:
    """Krippendorff's alpha of each [b, items, q] count matrix of pairable items, from the
    coincidence matrix o[c, k] = sum over items of n_c (n_k - [c = k]) / (m - 1)."""
    q = batch.shape[2]
    weights = 1.0 / (batch.sum(axis=2) - 1)
    o = np.einsum("biq,bik,bi->bqk", batch, batch, weights)
    o -= np.einsum("biq,bi->bq", batch, weights)[:, :, None] * np.eye(q)
    totals = o.sum(axis=2)
    n = totals.sum(axis=1)
    if level == "interval":
        delta = np.broadcast_to((values[:, None] - values[None, :]) ** 2, o.shape)
    elif level == "ordinal":
        # delta²(c, k) = (sum of n_g for g from c to k − (n_c + n_k) / 2)², Krippendorff (2011)
        idx = np.arange(q)
        lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
        span = np.cumsum(totals, axis=1)[:, hi] - np.cumsum(totals, axis=1)[:, lo] + totals[:, lo]
        delta = (span - (totals[:, :, None] + totals[:, None, :]) / 2) ** 2
    else:
        delta = np.broadcast_to(1.0 - np.eye(q), o.shape)
    observed = np.sum(o * delta, axis=(1, 2)) / n
    expected = np.einsum("bq,bk,bqk->b", totals, totals, delta) / (n * (n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - observed / expected, np.nan)


def _with_interval(statistic, c: np.ndarray, confidence: float, n_resamples: int, seed: int) -> Coefficient:
    level = probability("confidence", confidence)
    if n_resamples < 100:
        raise ValueError(f"n_resamples must be >= 100, got {n_resamples}")
    value = float(statistic(c[None])[0])
    if value != value:
        raise ValueError("the coefficient is undefined: every rating is in one category")
    rng = np.random.default_rng(seed)
    reps = np.empty(n_resamples)
    step = max(1, 4_000_000 // c.size)  # bounds memory: at most ~32 MB of resampled counts at once
    for start in range(0, n_resamples, step):
        idx = rng.integers(0, len(c), size=(min(step, n_resamples - start), len(c)))
        reps[start:start + len(idx)] = statistic(c[idx])
    if not np.all(np.isfinite(reps)):
        return Coefficient(value, float("nan"), float("nan"), float("nan"), level)
    tail = (1 - level) / 2
    low, high = np.quantile(reps, [tail, 1 - tail])
    return Coefficient(value, float(np.std(reps, ddof=1)), float(max(low, -1.0)), float(min(high, 1.0)), level)
