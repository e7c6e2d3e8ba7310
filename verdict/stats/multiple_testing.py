"""Multiple-testing corrections with adjusted p-values: Benjamini-Hochberg (false discovery rate, the
<= step-up rule), Holm (step-down) and Bonferroni (family-wise error rate), as statsmodels
``multipletests`` methods ``fdr_bh``, ``holm`` and ``bonferroni``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from verdict.stats._arrays import probability


@dataclass(frozen=True)
class BHResult:
    """Index-aligned with the input p-values."""

    adjusted: np.ndarray
    rejected: np.ndarray
    alpha: float


Correction = Literal["bh", "holm", "bonferroni"]
CORRECTIONS: tuple[Correction, ...] = ("bh", "holm", "bonferroni")


def adjust(p_values: Any, *, method: Correction = "bh", alpha: float = 0.05) -> BHResult:
    """Adjusted p-values and rejections (``adjusted <= alpha``) under `method`.

    ``bh`` controls the false discovery rate (and, when every hypothesis is null, the probability of
    any rejection); ``holm`` and ``bonferroni`` control the family-wise error rate under any
    dependence. Holm's adjusted p of p_(i) is the running max of (m - i + 1)·p_(i), capped at 1.
    """
    if method == "bh":
        return benjamini_hochberg(p_values, alpha=alpha)
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {list(CORRECTIONS)}, got {method!r}")
    p, level = _checked(p_values, alpha)
    m = p.size
    if method == "bonferroni":
        adjusted = np.minimum(p * m, 1.0)
    else:
        order = np.argsort(p, kind="stable")
        scaled = p[order] * (m - np.arange(m))
        adjusted = np.empty(m)
        adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return BHResult(adjusted=adjusted, rejected=adjusted <= level, alpha=level)


def _checked(p_values: Any, alpha: float) -> tuple[np.ndarray, float]:
    p = np.asarray(p_values, dtype=float).ravel()
    level = probability("alpha", alpha)
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must be finite numbers in [0, 1]")
    return p, level


def benjamini_hochberg(p_values: Any, *, alpha: float = 0.05) -> BHResult:
    """Step-up BH: reject p_(1..k) for the largest k with p_(k) <= k·alpha/m.

    The adjusted p-value of p_(i) is min over j >= i of m·p_(j)/j, capped at 1, so
    ``adjusted <= alpha`` is exactly the rejection set (statsmodels ``fdr_bh``).
    """
    p, level = _checked(p_values, alpha)
    m = p.size
    if m == 0:
        return BHResult(np.empty(0), np.empty(0, dtype=bool), level)
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted_sorted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return BHResult(adjusted=adjusted, rejected=adjusted <= level, alpha=level)
