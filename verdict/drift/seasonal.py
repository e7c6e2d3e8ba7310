"""Which cells follow a weekly pattern and so are compared with the same weekday of earlier weeks.

`seasonality` "off": none; "weekly": every cell; "auto" (the default): a cell is seasonal when its other
phases (the weeks 1..seasonal_weeks before the current window, cut into windows of the current window's
length, without the current window's own phase) differ among themselves at level `seasonal_check_alpha`,
in the cell alone or in its dimension across clusters. The cell's check is a chi-square test of
homogeneity of the pass rate (Kruskal-Wallis on scores) over the phases holding at least `min_usable`
usable rows, at least two of them; the dimension's is the Cochran-Mantel-Haenszel test of the same
(generalised to 2 x phases tables, the cells as strata), which finds a pattern shared by the clusters long
before any one cell's check does (a weekend effect of 7 points is a 5-df chi-square of ~7 in a
100-a-day cell, but enough, over 240 such cells, to raise false alarms; the dimension's test sees it).
Scored dimensions use the cell's check only.

Why not the current window's own phase: the check then reads none of the rows a seasonal cell's test reads
(the current window and the same phase of earlier weeks), nor the reference, so on unchanged data the
choice is independent of the test and leaves its level alone. A check of the same weekdays against the
others would pick exactly the cells whose same-weekday baseline is off by chance, and inflate their false
alarms; one including the current window would turn a sudden regression into a "weekly pattern".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verdict.drift.input import FAIL, PASS, SCORE, History
from verdict.drift.windows import WEEK_US

if TYPE_CHECKING:
    import numpy as np

SEASONALITY = ("off", "weekly", "auto")


def seasonal_cells(history: History, mode: str, min_usable: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per cell of `history`: is it seasonal, and the check's p-value (NaN where not checked)."""
    import numpy as np

    n = len(history.labels)
    p = np.full(n, np.nan)
    if mode != "auto":
        return np.full(n, mode == "weekly"), p
    lay, ts = history.layout, history.ts
    other = lay.other_phases(ts)
    width = lay.now - lay.current_start
    phase = ((ts - lay.current_start) % WEEK_US) // width  # 0 is the current window's own phase
    phases = -(-WEEK_US // width)
    key = (history.cell * phases + phase) * 5 + history.values
    counts = np.bincount(key[other], minlength=n * phases * 5).reshape(n, phases, 5)
    usable = counts[:, :, [PASS, FAIL, SCORE]].sum(axis=2)
    enough = usable >= min_usable  # [cell, phase]
    checked = enough.sum(axis=1) >= 2
    scored = counts[:, :, SCORE].sum(axis=1) > 0
    b = np.flatnonzero(checked & ~scored)
    tables = np.where(enough[:, :, None], counts[:, :, [PASS, FAIL]], 0)
    if b.size:
        p[b] = homogeneity_p(tables[b])
    for c in np.flatnonzero(checked & scored).tolist():
        p[c] = _kruskal_p(history, c, other, phase, np.flatnonzero(enough[c]))
    seasonal = checked & (p <= level)
    names = [(fp, dim) for fp, _, dim in history.labels]
    groups = np.array([sorted(set(names)).index(k) for k in names]) if names else np.zeros(0, dtype=np.int64)
    for g in np.unique(groups[b]).tolist():
        strata = b[groups[b] == g]
        if strata.size > 1 and stratified_homogeneity_p(tables[strata]) <= level:
            seasonal[strata] = True
    return seasonal, p


def homogeneity_p(table: np.ndarray) -> np.ndarray:
    """Pearson's chi-square test that the pass rate is the same in every group, per cell.

    `table` is [cell, group, (passed, failed)]; groups with no rows are left out (fewer degrees of freedom).
    As scipy.stats.chi2_contingency without Yates' correction; 1.0 where every row passed or every row failed.
    """
    import numpy as np
    from scipy.special import chdtrc

    rows = table.sum(axis=2, keepdims=True)  # per group
    cols = table.sum(axis=1, keepdims=True)  # per outcome
    total = rows.sum(axis=1, keepdims=True)
    expected = rows * cols / np.maximum(total, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(expected > 0, (table - expected) ** 2 / expected, 0.0)
    stat = terms.sum(axis=(1, 2))
    df = (rows[:, :, 0] > 0).sum(axis=1) - 1
    degenerate = (cols[:, 0] == 0).any(axis=1) | (df < 1)
    return np.where(degenerate, 1.0, chdtrc(np.maximum(df, 1), stat))


def stratified_homogeneity_p(table: np.ndarray) -> float:
    """Cochran-Mantel-Haenszel test that the pass rate is the same in every group within every stratum.

    `table` is [stratum, group, (passed, failed)]. The statistic U'V⁻U, U the summed passes minus their
    expectation per group and V their summed hypergeometric covariance, is chi-square with rank(V) degrees
    of freedom (Landis, Heyman and Koch 1978, "general association"); with two groups it is
    statsmodels' StratifiedTable.test_null_odds(correction=False), with one stratum (N-1)/N times Pearson's.
    """
    import numpy as np
    from scipy.special import chdtrc

    n = table.sum(axis=2).astype(float)  # [stratum, group]
    x = table[:, :, 0].astype(float)
    big_n, m = n.sum(axis=1), x.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(big_n > 1, m * (big_n - m) / (big_n**2 * (big_n - 1)), 0.0)
        expected = np.where(big_n[:, None] > 0, n * (m / big_n)[:, None], 0.0)
    u = (x - expected).sum(axis=0)
    v = np.diag((f * big_n) @ n) - np.einsum("s,sj,sk->jk", f, n, n)
    df = int(np.linalg.matrix_rank(v))
    if df < 1:
        return 1.0
    return float(chdtrc(df, u @ np.linalg.pinv(v) @ u))


def _kruskal_p(history: History, cell: int, other: np.ndarray, phase: np.ndarray, phases: np.ndarray) -> float:
    import numpy as np
    from scipy.stats import kruskal

    rows = other & (history.cell == cell) & (history.values == SCORE)
    groups = [history.scores[rows & (phase == k)] for k in phases.tolist()]
    if np.ptp(np.concatenate(groups)) == 0:
        return 1.0  # all scores equal: no evidence of a pattern
    return float(kruskal(*groups).pvalue)
