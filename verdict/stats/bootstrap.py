"""Seeded percentile bootstrap of a statistic of one sample."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from verdict.stats._arrays import probability


@dataclass(frozen=True)
class BootstrapInterval:
    estimate: float  # the statistic on the original sample
    low: float
    high: float
    std_error: float  # standard deviation of the bootstrap replicates
    confidence: float
    n_resamples: int
    seed: int


def percentile_bootstrap(
    data: Any,
    statistic: Callable[[np.ndarray], Any],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    batch: bool = False,
) -> BootstrapInterval:
    """Percentile interval from `n_resamples` resamples of the rows of `data`.

    The same seed gives the same interval. With ``batch=True`` the statistic receives all resamples
    at once, stacked on a new leading axis, and must return one value per resample (much faster for
    numpy statistics); otherwise it is called once per resample.
    """
    values = np.asarray(data)
    if values.ndim == 0 or len(values) < 2:
        raise ValueError("bootstrap needs a sample of at least 2 rows")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    level = probability("confidence", confidence)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(n_resamples, len(values)))
    if batch:
        reps = np.asarray(statistic(values[idx]), dtype=float).ravel()
    else:
        reps = np.array([float(statistic(values[row])) for row in idx])
    if reps.size != n_resamples:
        raise ValueError(f"statistic returned {reps.size} values for {n_resamples} resamples")
    tail = (1 - level) / 2
    low, high = np.quantile(reps, [tail, 1 - tail])
    return BootstrapInterval(
        estimate=float(statistic(values[None, :])[0] if batch else statistic(values)),
        low=float(low),
        high=float(high),
        std_error=float(np.std(reps, ddof=1)),
        confidence=level,
        n_resamples=n_resamples,
        seed=seed,
    )
