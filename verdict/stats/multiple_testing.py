"""Benjamini-Hochberg false discovery rate control (the <= step-up rule) with adjusted p-values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from verdict.stats._arrays import probability


@dataclass(frozen=True)
class BHResult:
    """Index-aligned with the input p-values."""

    adjusted: np.ndarray
    rejected: np.ndarray
    alpha: float


def benjamini_hochberg(p_values: Any, *, alpha: float = 0.05) -> BHResult:
    """Step-up BH: reject p_(1..k) for the largest k with p_(k) <= k·alpha/m.

    The adjusted p-value of p_(i) is min over j >= i of m·p_(j)/j, capped at 1, so
    ``adjusted <= alpha`` is exactly the rejection set (statsmodels ``fdr_bh``).
    """
    p = np.asarray(p_values, dtype=float).ravel()
    level = probability("alpha", alpha)
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must be finite numbers in [0, 1]")
    m = p.size
    if m == 0:
        return BHResult(np.empty(0), np.empty(0, dtype=bool), level)
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted_sorted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return BHResult(adjusted=adjusted, rejected=adjusted <= level, alpha=level)
