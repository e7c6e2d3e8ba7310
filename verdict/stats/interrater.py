"""Agreement between two raters on one nominal scale: raw agreement, Cohen's kappa, Gwet's AC1.

All three are computed from the q×q table of joint ratings (rows: rater A, columns: rater B).

- Kappa's standard error is the large-sample (non-null) variance of Fleiss, Cohen & Everitt (1969),
  the one statsmodels ``cohens_kappa`` reports; its interval is kappa ± z·SE.
- AC1's standard error is Gwet's (2008) linearised variance for two raters (irrCAC
  ``gwet.ac1.table``); its interval is AC1 ± t(n-1)·SE, as irrCAC reports it.
All intervals are clipped to [-1, 1].
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from verdict.stats._arrays import counts, probability


@dataclass(frozen=True)
class Coefficient:
    """A chance-corrected agreement coefficient with standard error and interval."""

    value: float
    std_error: float
    low: float
    high: float
    confidence: float


def contingency_table(
    a: Sequence[Hashable], b: Sequence[Hashable], categories: Sequence[Hashable]
) -> np.ndarray:
    """q×q counts of (rating by A, rating by B) pairs over the given categories."""
    if len(a) != len(b):
        raise ValueError(f"the two raters rated different numbers of items ({len(a)} vs {len(b)})")
    index = {c: i for i, c in enumerate(categories)}
    if len(index) < 2:
        raise ValueError("at least two distinct categories are needed")
    unknown = {v for v in (*a, *b) if v not in index}
    if unknown:
        raise ValueError(f"ratings outside the categories: {sorted(map(str, unknown))}")
    q = len(index)
    flat = np.array([index[x] * q + index[y] for x, y in zip(a, b, strict=True)], dtype=np.int64)
    return np.bincount(flat, minlength=q * q).reshape(q, q)


def raw_agreement(table: Any) -> float:
    """Share of items on which both raters agree."""
    t = _square("table", table)
    return float(np.trace(t) / t.sum())


def cohens_kappa(table: Any, *, confidence: float = 0.95) -> Coefficient:
    """Cohen's kappa with the Fleiss-Cohen-Everitt (1969) standard error."""
    from scipy.special import ndtri

    t = _square("table", table)
    n = t.sum()
    p = t / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    po, pe = np.trace(p), float(rows @ cols)
    if pe >= 1.0:
        raise ValueError("kappa is undefined when both raters use a single category")
    kappa = (po - pe) / (1 - pe)
    diag = np.diag(p)
    term1 = np.sum(diag * (1 - (rows + cols) * (1 - kappa)) ** 2)
    off = p.copy()
    np.fill_diagonal(off, 0.0)
    term2 = (1 - kappa) ** 2 * np.sum(off * (cols[:, None] + rows[None, :]) ** 2)
    term3 = (kappa - pe * (1 - kappa)) ** 2
    se = float(np.sqrt(max(term1 + term2 - term3, 0.0) / (n * (1 - pe) ** 2)))
    level = probability("confidence", confidence)
    half = float(ndtri(0.5 + level / 2)) * se
    return Coefficient(float(kappa), se, max(kappa - half, -1.0), min(kappa + half, 1.0), level)


def gwet_ac1(table: Any, *, confidence: float = 0.95) -> Coefficient:
    """Gwet's AC1 with its linearised standard error (Gwet 2008)."""
    from scipy.stats import t as student_t

    t = _square("table", table)
    n = t.sum()
    q = t.shape[0]
    p = t / n
    pi = (p.sum(axis=1) + p.sum(axis=0)) / 2
    pa = float(np.trace(p))
    pe = float(np.sum(pi * (1 - pi)) / (q - 1))
    ac1 = (pa - pe) / (1 - pe)
    weights = np.eye(q) - 2 * (1 - ac1) * (1 - (pi[:, None] + pi[None, :]) / 2) / (q - 1)
    var = (np.sum(p * weights**2) - (pa - 2 * (1 - ac1) * pe) ** 2) / (n * (1 - pe) ** 2)
    se = float(np.sqrt(max(var, 0.0)))
    level = probability("confidence", confidence)
    half = float(student_t.ppf(0.5 + level / 2, n - 1)) * se if n > 1 else float("inf")
    return Coefficient(float(ac1), se, max(ac1 - half, -1.0), min(ac1 + half, 1.0), level)


def _square(name: str, table: Any) -> np.ndarray:
    t = counts(name, table)
    if t.ndim != 2 or t.shape[0] != t.shape[1] or t.shape[0] < 2:
        raise ValueError(f"{name} must be a square q×q table with q >= 2, got shape {t.shape}")
    if t.sum() == 0:
        raise ValueError(f"{name} is empty: no rated items")
    return t
