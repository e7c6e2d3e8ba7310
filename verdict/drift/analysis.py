"""The per-cell statistics of one run, computed vectorised over cells, and the example trace ids of a signal.

See docs/statistics.md for every status and gate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from verdict.drift.input import BASELINE, CURRENT, ERROR, FAIL, PASS, SCORE, UNCLEAR, Judgments
from verdict.drift.model import (
    CellStatus,
    Coverage,
    CoverageStatus,
    DriftCell,
    MetricKind,
    WindowCounts,
)

if TYPE_CHECKING:
    import numpy as np

    from verdict.drift.detector import DriftDetector

_SIGNALS = (CellStatus.REGRESSION, CellStatus.IMPROVEMENT)


class Analysis:
    """All per-cell statistics of one run, computed vectorised before cells are materialised.

    Every per-cell array is NaN where its statistic is not computed (an untested cell has no p-value).
    """

    def __init__(self, det: DriftDetector, data: Judgments, gates: np.ndarray) -> None:
        import numpy as np

        self.det = det
        # The run's alpha split between two families, so that any signal of either kind stays within alpha.
        self.quality_alpha = det.alpha * (1 - det.coverage_alpha_share)
        self.coverage_alpha = det.alpha * det.coverage_alpha_share
        self.counts = data.counts  # [cell, window, value code]
        self.scored = data.scored  # [cell]: continuous?
        self.gates = gates  # [cell]: effect gate in the cell's unit
        n = self.counts.shape[0]
        self.usable = self.counts[:, :, [PASS, FAIL, SCORE]].sum(axis=2)  # [cell, window]
        self.tested = (self.usable >= det.min_usable).all(axis=1)
        self.p, self.delta, self.low, self.high = (np.full(n, np.nan) for _ in range(4))
        self.mde, self.mde_adjusted, self.adjusted = (np.full(n, np.nan) for _ in range(3))
        self.level = np.full((n, 2), np.nan)  # [cell, window]: pass rate or mean score
        self._test_pass_rates()
        self._test_scores(data)
        self._minimum_detectable_deltas()
        self._adjust()
        self.cov_tested = (self.counts.sum(axis=2) >= det.min_usable).all(axis=1)
        self.rise, self.cov_p, self.cov_adjusted = self._test_coverage()

    def _test_pass_rates(self) -> None:
        """Binary cells: pass rates, and Fisher's exact test with the pass-rate difference on tested ones."""
        import numpy as np

        from verdict.stats.cliffs_delta import binary_delta
        from verdict.stats.fisher import fisher_exact_many

        passed, usable, scored = self.counts[:, :, PASS], self.usable, self.scored
        with np.errstate(divide="ignore", invalid="ignore"):
            self.level[~scored] = (passed / usable)[~scored]
        binary = self.tested & ~scored
        if binary.any():
            b = np.flatnonzero(binary)
            cur_pass, cur_n = passed[b, CURRENT], usable[b, CURRENT]
            base_pass, base_n = passed[b, BASELINE], usable[b, BASELINE]
            self.p[b] = fisher_exact_many(
                cur_pass, cur_n - cur_pass, base_pass, base_n - base_pass
            ).p_value
            self.delta[b], self.low[b], self.high[b] = binary_delta(
                cur_pass, cur_n, base_pass, base_n
            )

    def _test_scores(self, data: Judgments) -> None:
        """Continuous cells: mean scores, and Mann-Whitney U with Cliff's delta on tested ones."""
        import numpy as np

        from verdict.stats.cliffs_delta import cliffs_delta
        from verdict.stats.mann_whitney import mann_whitney_u

        if not self.scored.any():
            return
        for c, (base, cur) in _score_samples(data, np.flatnonzero(self.scored)).items():
            self.level[c] = [
                base.mean() if base.size else np.nan,
                cur.mean() if cur.size else np.nan,
            ]
            if not self.tested[c]:
                continue
            self.p[c] = mann_whitney_u(cur, base).p_value
            cd = cliffs_delta(cur, base)
            self.delta[c], self.low[c], self.high[c] = cd.delta, cd.low, cd.high

    def _minimum_detectable_deltas(self) -> None:
        """MDE wherever both windows have data, tested or not.

        It tells an `insufficient` cell how far it is from seeing anything, and a tested one whether the
        gate or the data decides. The adjusted MDE uses quality_alpha/m, the level a lone change must reach
        under BH, Holm or Bonferroni in a family of m tested cells.
        """
        import numpy as np

        from verdict.stats.power import minimum_detectable_delta, minimum_detectable_drop

        usable, power = self.usable, self.det.power
        sized = (usable > 0).all(axis=1)
        base_n, cur_n = usable[:, BASELINE], usable[:, CURRENT]
        b = np.flatnonzero(sized & ~self.scored)
        scored_cells = np.flatnonzero(sized & self.scored)
        base_rate = self.counts[b, BASELINE, PASS] / base_n[b]
        family = max(int(self.tested.sum()), 1)
        for out, level in ((self.mde, self.quality_alpha), (self.mde_adjusted, self.quality_alpha / family)):
            out[b] = minimum_detectable_drop(base_rate, base_n[b], cur_n[b], alpha=level, power=power)
            out[scored_cells] = minimum_detectable_delta(
                base_n[scored_cells], cur_n[scored_cells], alpha=level, power=power
            )

    def _adjust(self) -> None:
        """One family over every tested cell of the run, whatever its fingerprint or kind."""
        import numpy as np

        from verdict.stats.multiple_testing import adjust

        tested = np.flatnonzero(self.tested)
        if tested.size:
            self.adjusted[tested] = adjust(
                self.p[tested], method=self.det.correction, alpha=self.quality_alpha
            ).adjusted

    def _test_coverage(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rise of the unusable share, its p-value and adjusted p per cell.

        Fisher on (unusable, usable) x (current, baseline), its own family at coverage_alpha.
        """
        import numpy as np

        from verdict.stats.fisher import fisher_exact_many
        from verdict.stats.multiple_testing import adjust

        usable = self.usable
        total = self.counts.sum(axis=2)
        unusable = total - usable
        with np.errstate(divide="ignore", invalid="ignore"):
            rise = unusable[:, CURRENT] / total[:, CURRENT] - unusable[:, BASELINE] / total[:, BASELINE]
        p = np.full(rise.size, np.nan)
        adjusted = np.full(rise.size, np.nan)
        ct = np.flatnonzero(self.cov_tested)
        if ct.size:
            p[ct] = fisher_exact_many(
                unusable[ct, CURRENT],
                usable[ct, CURRENT],
                unusable[ct, BASELINE],
                usable[ct, BASELINE],
            ).p_value
            adjusted[ct] = adjust(
                p[ct], method=self.det.correction, alpha=self.det.alpha
            ).adjusted  # only the adjusted p is used: compared with coverage_alpha in coverage_status
        return rise, p, adjusted

    def status(self, i: int) -> CellStatus:
        if not self.tested[i]:
            return CellStatus.INSUFFICIENT
        if self.adjusted[i] > self.quality_alpha:
            return CellStatus.STABLE
        if abs(self.delta[i]) < self.gates[i]:
            return CellStatus.BELOW_GATE
        return CellStatus.REGRESSION if self.delta[i] < 0 else CellStatus.IMPROVEMENT

    def coverage_status(self, i: int) -> CoverageStatus:
        if not self.cov_tested[i]:
            return CoverageStatus.INSUFFICIENT
        if (self.coverage_alpha > 0 and self.cov_adjusted[i] <= self.coverage_alpha
                and self.rise[i] >= self.det.coverage_min_rise):
            return CoverageStatus.COVERAGE_DROP
        return CoverageStatus.STABLE

    def cell(self, i: int, label: tuple[str, str, str], examples: Examples) -> DriftCell:
        status = self.status(i)
        cov_status = self.coverage_status(i)
        kind = MetricKind.CONTINUOUS if self.scored[i] else MetricKind.BINARY
        return DriftCell(
            fingerprint=label[0],
            cluster=label[1],
            dimension=label[2],
            kind=kind,
            status=status,
            baseline=self._window(i, BASELINE),
            current=self._window(i, CURRENT),
            p_value=_opt(self.p[i]),
            adjusted_p=_opt(self.adjusted[i]),
            delta=_opt(self.delta[i]),
            delta_low=_opt(self.low[i]),
            delta_high=_opt(self.high[i]),
            gate=float(self.gates[i]),
            mde=_opt(self.mde[i]),
            mde_adjusted=_opt(self.mde_adjusted[i]),
            coverage=Coverage(
                status=cov_status,
                rise=_opt(self.rise[i]),
                p_value=_opt(self.cov_p[i]),
                adjusted_p=_opt(self.cov_adjusted[i]),
                examples=examples.unusable(i) if cov_status is CoverageStatus.COVERAGE_DROP else (),
            ),
            examples=examples.for_signal(i, kind, status) if status in _SIGNALS else (),
        )

    def _window(self, i: int, w: int) -> WindowCounts:
        c = self.counts[i, w]
        return WindowCounts(
            passed=int(c[PASS]),
            failed=int(c[FAIL]),
            unclear=int(c[UNCLEAR]),
            error=int(c[ERROR]),
            scored=int(c[SCORE]),
            level=_opt(self.level[i, w]),
        )


class Examples:
    """Deterministic example trace ids from the current window: most recent first, then input order."""

    def __init__(self, limit: int, data: Judgments) -> None:
        import numpy as np

        self.limit = limit
        self.data = data
        current = np.flatnonzero(data.window == CURRENT)
        self.order = current[np.lexsort((current, -data.ts[current], data.cell[current]))]
        self.cells = data.cell[self.order]

    def _pick(
        self, cell: int, keep: Callable[[np.ndarray], np.ndarray], by_score: int = 0
    ) -> tuple[str, ...]:
        import numpy as np

        lo, hi = np.searchsorted(self.cells, [cell, cell + 1])
        chosen = self.order[lo:hi]
        chosen = chosen[keep(self.data.values[chosen])]
        if by_score:  # stable sort keeps "most recent first" among equal scores
            chosen = chosen[np.argsort(by_score * self.data.scores[chosen], kind="stable")]
        ids = self.data.table.column("trace_id").take(self.data.rows[chosen[: self.limit]]).to_pylist()
        return tuple(str(v) for v in ids)

    def for_signal(self, cell: int, kind: MetricKind, status: CellStatus) -> tuple[str, ...]:
        worse = status is CellStatus.REGRESSION
        if kind is MetricKind.CONTINUOUS:  # lowest scores for a regression, highest otherwise
            return self._pick(cell, lambda v: v == SCORE, by_score=1 if worse else -1)
        return self._pick(cell, lambda v: v == (FAIL if worse else PASS))

    def unusable(self, cell: int) -> tuple[str, ...]:
        return self._pick(cell, lambda v: (v == UNCLEAR) | (v == ERROR))


def _score_samples(data: Judgments, cells: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Scores per (cell, window) for the continuous cells, via one sort instead of per-cell masks."""
    import numpy as np

    is_score = np.flatnonzero(data.values == SCORE)
    key = data.cell[is_score] * 2 + data.window[is_score]
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    vals = data.scores[is_score][order]
    out = {}
    for c in cells.tolist():
        lo, mid, hi = np.searchsorted(key_sorted, [2 * c, 2 * c + 1, 2 * c + 2])
        out[c] = (vals[lo:mid], vals[mid:hi])
    return out


def _opt(x: float) -> float | None:
    return None if x != x else float(x)  # NaN -> None
