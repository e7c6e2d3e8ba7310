"""Fisher's exact test for 2x2 tables, two- or one-sided, vectorised over many tables.

Table layout ``[[a, b], [c, d]]``; with fixed margins, ``a`` follows a hypergeometric law. The two-sided
p-value sums the probabilities of every table no more likely than the observed one (the rule of
scipy.stats.fisher_exact and R's fisher.test), with R's relative tolerance of 1e-7 so tables that are
equally likely in exact arithmetic are not split by rounding. One-sided (scipy's and R's
``alternative``): "greater" is P(A >= a), evidence that the odds ratio exceeds 1; "less" is P(A <= a).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from verdict.stats._arrays import counts

# Tables are evaluated over their full support in chunks of at most this many support points,
# which bounds memory (a few arrays of this length) whatever the number or size of tables.
_CHUNK_POINTS = 2_000_000
_LOG_TOLERANCE = 1e-7
Alternative = Literal["two-sided", "less", "greater"]
ALTERNATIVES = ("two-sided", "less", "greater")


@dataclass(frozen=True)
class FisherResult:
    odds_ratio: float
    p_value: float


@dataclass(frozen=True)
class FisherBatch:
    """Results for many tables, index-aligned with the input arrays."""

    odds_ratio: np.ndarray
    p_value: np.ndarray


def fisher_exact(table: Any, *, alternative: Alternative = "two-sided") -> FisherResult:
    """Fisher's exact test of one 2x2 table ``[[a, b], [c, d]]``."""
    t = counts("table", table)
    if t.shape != (2, 2):
        raise ValueError(f"table must be 2x2, got shape {t.shape}")
    batch = fisher_exact_many(t[0, 0], t[0, 1], t[1, 0], t[1, 1], alternative=alternative)
    return FisherResult(float(batch.odds_ratio[0]), float(batch.p_value[0]))


def fisher_exact_many(a: Any, b: Any, c: Any, d: Any, *, alternative: Alternative = "two-sided") -> FisherBatch:
    """Fisher's exact test of each table ``[[a[i], b[i]], [c[i], d[i]]]``.

    Identical tables are computed once; the rest are evaluated together with numpy over the
    concatenated supports of their hypergeometric distributions.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    cells = [counts(name, v).ravel() for name, v in (("a", a), ("b", b), ("c", c), ("d", d))]
    if len({arr.size for arr in cells}) != 1:
        raise ValueError("a, b, c and d must have the same length")
    tables = np.stack(cells, axis=1)
    unique, inverse = np.unique(tables, axis=0, return_inverse=True)
    p = _p_values(unique, alternative)[inverse.ravel()]
    ua, ub, uc, ud = (unique[:, i].astype(float) for i in range(4))
    with np.errstate(divide="ignore", invalid="ignore"):
        odds = (ua * ud) / (ub * uc)
    return FisherBatch(odds_ratio=odds[inverse.ravel()], p_value=p)


def _p_values(tables: np.ndarray, alternative: Alternative) -> np.ndarray:
    from scipy.special import gammaln

    a, b, c, d = (tables[:, i] for i in range(4))
    n1, n2, k = a + b, c + d, a + c
    lo = np.maximum(0, k - n2)
    hi = np.minimum(k, n1)
    lengths = hi - lo + 1
    # log pmf(x) = log C(n1, x) + log C(n2, k - x) - log C(n1 + n2, k); the last term is constant
    # per table and is added back after the comparison with the observed table.
    const = (
        gammaln(n1 + 1)
        + gammaln(n2 + 1)
        - gammaln(n1 + n2 + 1)
        + gammaln(k + 1)
        + gammaln(n1 + n2 - k + 1)
    )

    def log_kernel(rows: np.ndarray, x: np.ndarray) -> np.ndarray:
        kx = k[rows] - x
        log_terms: np.ndarray = (
            gammaln(x + 1)
            + gammaln(n1[rows] - x + 1)
            + gammaln(kx + 1)
            + gammaln(n2[rows] - kx + 1)
        )
        return -log_terms

    p = np.empty(len(tables))
    start = 0
    while start < len(tables):
        stop = start + max(1, int(np.searchsorted(np.cumsum(lengths[start:]), _CHUNK_POINTS)))
        rows = np.arange(start, stop)
        owner = np.repeat(rows, lengths[rows])
        offsets = np.arange(owner.size) - np.repeat(
            np.cumsum(lengths[rows]) - lengths[rows], lengths[rows]
        )
        x = lo[owner] + offsets
        logp = log_kernel(owner, x)
        if alternative == "greater":
            keep = x >= a[owner]
        elif alternative == "less":
            keep = x <= a[owner]
        else:
            observed = log_kernel(rows, a[rows])
            keep = logp <= np.repeat(observed, lengths[rows]) + _LOG_TOLERANCE
        mass = np.exp(logp + const[owner]) * keep
        p[rows] = np.bincount(owner - start, weights=mass, minlength=len(rows))
        start = stop
    return np.minimum(p, 1.0)
