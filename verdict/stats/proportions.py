"""Wilson score interval for a binomial proportion (Wilson 1927; Newcombe 1998 method 3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verdict.stats._arrays import counts, probability


@dataclass(frozen=True)
class Proportion:
    """A rate with its Wilson interval; `value` is NaN when there are no trials."""

    successes: int
    trials: int
    value: float
    low: float
    high: float
    confidence: float


def wilson_interval(successes: int, trials: int, *, confidence: float = 0.95) -> Proportion:
    """Wilson score interval without continuity correction."""
    k = int(counts("successes", successes))
    n = int(counts("trials", trials))
    if k > n:
        raise ValueError(f"successes ({k}) cannot exceed trials ({n})")
    level = probability("confidence", confidence)
    low, high = wilson_bounds(np.array([k]), np.array([n]), level)
    value = k / n if n else float("nan")
    return Proportion(k, n, value, float(low[0]), float(high[0]), level)


def wilson_bounds(
    successes: np.ndarray, trials: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Wilson bounds; NaN where trials are zero."""
    from scipy.special import ndtri

    z = float(ndtri(0.5 + confidence / 2.0))
    n = trials.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = successes / n
        denom = 1.0 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
