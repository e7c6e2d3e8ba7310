"""Mann-Whitney U test with the method and alternative choices of scipy.stats.mannwhitneyu.

``alternative="greater"``: x tends to be larger than y (P(U_x >= u)); "less": smaller; "two-sided":
twice the tail of the larger of U_x and U_y.

``method="auto"`` is exact when one sample has at most 8 values and there are no ties, and the
normal approximation with continuity and tie correction otherwise. The exact null distribution
of U is the coefficient sequence of the Gaussian binomial ``[m + n choose m]_q``, built with
numpy in O(m·(m·n)) time, which stays small because the exact path only runs when min(m, n) <= 8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from verdict.stats._arrays import sample

Method = Literal["auto", "exact", "asymptotic"]
Alternative = Literal["two-sided", "less", "greater"]
ALTERNATIVES = ("two-sided", "less", "greater")
_EXACT_MAX_SMALLER = 8


@dataclass(frozen=True)
class RankSums:
    """What the U test needs from one joint ranking of x and y."""

    n_x: int
    n_y: int
    u_x: float  # U of x: pairs with x > y, ties counting one half
    tie_term: float  # sum of t^3 - t over tie groups of the pooled sample


@dataclass(frozen=True)
class MannWhitneyResult:
    u: float  # U statistic of the first sample (scipy's `statistic`)
    p_value: float
    method: Literal["exact", "asymptotic"]


def rank_sums(x: np.ndarray, y: np.ndarray) -> RankSums:
    """U of x and the tie term from one O((m+n) log(m+n)) sort of the pooled sample."""
    pooled = np.concatenate([x, y])
    order = np.argsort(pooled, kind="stable")
    sorted_vals = pooled[order]
    # Tie groups: average rank of a group spanning sorted positions [s, e) is (s + e + 1) / 2.
    boundaries = np.flatnonzero(np.diff(sorted_vals)) + 1
    starts = np.concatenate([[0], boundaries])
    ends = np.concatenate([boundaries, [pooled.size]])
    sizes = ends - starts
    group_rank = (starts + ends + 1) / 2.0
    ranks = np.empty(pooled.size)
    ranks[order] = np.repeat(group_rank, sizes)
    r_x = float(ranks[: x.size].sum())
    u_x = r_x - x.size * (x.size + 1) / 2.0
    t = sizes.astype(float)
    return RankSums(n_x=x.size, n_y=y.size, u_x=u_x, tie_term=float(np.sum(t**3 - t)))


def mann_whitney_u(
    x: Any, y: Any, *, method: Method = "auto", continuity: bool = True,
    alternative: Alternative = "two-sided",
) -> MannWhitneyResult:
    """Mann-Whitney U test of x against y."""
    xs = sample("x", x)
    ys = sample("y", y)
    if method not in ("auto", "exact", "asymptotic"):
        raise ValueError(f"method must be 'auto', 'exact' or 'asymptotic', got {method!r}")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    rs = rank_sums(xs, ys)
    if method == "auto":
        small = min(rs.n_x, rs.n_y) <= _EXACT_MAX_SMALLER
        method = "exact" if small and rs.tie_term == 0 else "asymptotic"
    u_y = rs.n_x * rs.n_y - rs.u_x
    u_tail, factor = {"greater": (rs.u_x, 1.0), "less": (u_y, 1.0),
                      "two-sided": (max(rs.u_x, u_y), 2.0)}[alternative]
    if method == "exact":
        p = factor * _exact_sf(int(round(u_tail)), rs.n_x, rs.n_y)
    else:
        p = factor * _normal_sf(u_tail, rs, continuity)
    return MannWhitneyResult(u=rs.u_x, p_value=float(min(max(p, 0.0), 1.0)), method=method)


def _normal_sf(u_tail: float, rs: RankSums, continuity: bool) -> float:
    from scipy.special import ndtr

    n = rs.n_x + rs.n_y
    var = rs.n_x * rs.n_y / 12.0 * ((n + 1) - rs.tie_term / (n * (n - 1)))
    if var <= 0:  # every value identical: no evidence of a difference (either way)
        return 1.0
    z = (u_tail - rs.n_x * rs.n_y / 2.0 - (0.5 if continuity else 0.0)) / np.sqrt(var)
    return float(ndtr(-z))


def _exact_sf(u: int, n_x: int, n_y: int) -> float:
    """P(U >= u) under H0 without ties."""
    m, n = min(n_x, n_y), max(n_x, n_y)
    coeffs = np.zeros(m * n + 1)
    coeffs[0] = 1.0
    # [m + n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)
    for i in range(1, m + 1):
        shifted = np.zeros_like(coeffs)
        shifted[n + i :] = coeffs[: coeffs.size - n - i]
        coeffs = coeffs - shifted
        # dividing by (1 - q^i) is a running sum along each residue class modulo i
        pad = (-coeffs.size) % i
        coeffs = np.cumsum(np.concatenate([coeffs, np.zeros(pad)]).reshape(-1, i), axis=0).ravel()[
            : m * n + 1
        ]
    pmf = coeffs / coeffs.sum()
    return float(pmf[u:].sum()) if u <= m * n else 0.0
