"""The per-cell statistics of one run, computed vectorised over cells, and the example trace ids of a signal.

See docs/statistics.md for every status and gate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from verdict.drift.input import (
    BASELINE,
    CURRENT,
    ERROR,
    FAIL,
    PASS,
    REFERENCE,
    SCORE,
    UNCLEAR,
    Judgments,
)
from verdict.drift.model import (
    Basis,
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
COMPARED = (BASELINE, REFERENCE)  # what the current window is compared with
BASES = (Basis.RECENT, Basis.REFERENCE)  # the same, named


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
        self.seasonal = data.seasonal  # [cell]: compared with the same weekdays
        self.small = data.small  # [cell]: over the small-cell windows
        self.gates = gates  # [cell]: effect gate in the cell's unit
        n = self.counts.shape[0]
        self.usable = self.counts[:, :, [PASS, FAIL, SCORE]].sum(axis=2)  # [cell, window]
        sized = self.usable >= det.min_usable
        self.compared = sized[:, COMPARED] & sized[:, [CURRENT]]  # [cell, comparison]: tested against it
        self.tested = self.compared.any(axis=1)
        self.p, self.delta, self.low, self.high = (np.full(n, np.nan) for _ in range(4))
        self.mde, self.mde_adjusted, self.adjusted = (np.full(n, np.nan) for _ in range(3))
        self.basis = np.zeros(n, dtype=np.int64)  # [cell]: index into COMPARED of the comparison reported
        self.level = np.full((n, 3), np.nan)  # [cell, window]: pass rate or mean score
        tests = np.full((4, n, len(COMPARED)), np.nan)  # p, delta, low, high per [cell, comparison]
        self._test_pass_rates(tests)
        self._test_scores(data, tests)
        self._combine(tests)
        self._minimum_detectable_deltas()
        self._adjust()
        self.cov_tested = (self.counts.sum(axis=2)[:, [BASELINE, CURRENT]] >= det.min_usable).all(axis=1)
        self.rise, self.cov_p, self.cov_adjusted = self._test_coverage()

    def _test_pass_rates(self, tests: np.ndarray) -> None:
        """Binary cells: pass rates, and Fisher's exact test with the pass-rate difference per comparison."""
        import numpy as np

        from verdict.stats.cliffs_delta import binary_delta
        from verdict.stats.fisher import fisher_exact_many

        passed, usable, scored = self.counts[:, :, PASS], self.usable, self.scored
        with np.errstate(divide="ignore", invalid="ignore"):
            self.level[~scored] = (passed / usable)[~scored]
        for j, w in enumerate(COMPARED):
            b = np.flatnonzero(self.compared[:, j] & ~scored)
            if not b.size:
                continue
            cur_pass, cur_n = passed[b, CURRENT], usable[b, CURRENT]
            base_pass, base_n = passed[b, w], usable[b, w]
            tests[0, b, j] = fisher_exact_many(cur_pass, cur_n - cur_pass, base_pass, base_n - base_pass).p_value
            tests[1, b, j], tests[2, b, j], tests[3, b, j] = binary_delta(cur_pass, cur_n, base_pass, base_n)

    def _test_scores(self, data: Judgments, tests: np.ndarray) -> None:
        """Continuous cells: mean scores, and Mann-Whitney U with Cliff's delta per comparison."""
        import numpy as np

        from verdict.stats.cliffs_delta import cliffs_delta
        from verdict.stats.mann_whitney import mann_whitney_u

        if not self.scored.any():
            return
        for c, samples in _score_samples(data, np.flatnonzero(self.scored)).items():
            self.level[c] = [s.mean() if s.size else np.nan for s in samples]
            for j, w in enumerate(COMPARED):
                if self.compared[c, j]:
                    cd = cliffs_delta(samples[CURRENT], samples[w])
                    tests[:, c, j] = mann_whitney_u(samples[CURRENT], samples[w]).p_value, cd.delta, cd.low, cd.high

    def _combine(self, tests: np.ndarray) -> None:
        """One p-value per cell: the smallest of its comparisons times their number (Bonferroni within the
        cell), reported with that comparison's change and interval."""
        import numpy as np

        t = np.flatnonzero(self.tested)
        if not t.size:
            return
        p = tests[0, t]
        best = np.nanargmin(p, axis=1)
        self.basis[t] = best
        k = self.compared[t].sum(axis=1)
        self.p[t] = np.minimum(1.0, k * p[np.arange(t.size), best])
        for out, i in ((self.delta, 1), (self.low, 2), (self.high, 3)):
            out[t] = tests[i, t, best]

    def _minimum_detectable_deltas(self) -> None:
        """MDE against the reported comparison (the recent baseline unless the reference decided), wherever
        both windows have data, tested or not.

        It tells an `insufficient` cell how far it is from seeing anything, and a tested one whether the
        gate or the data decides. The adjusted MDE is the one the detector has: at quality_alpha/(m·k), the
        level a lone change must reach under BH, Holm or Bonferroni in a family of m tested cells, k the
        cell's comparisons (its p-value is multiplied by k).
        """
        import numpy as np

        from verdict.stats.power import minimum_detectable_delta, minimum_detectable_drop

        power, cells = self.det.power, np.arange(self.usable.shape[0])
        window = np.asarray(COMPARED)[self.basis]
        base_n, cur_n = self.usable[cells, window], self.usable[:, CURRENT]
        sized = (base_n > 0) & (cur_n > 0)
        b = np.flatnonzero(sized & ~self.scored)
        scored_cells = np.flatnonzero(sized & self.scored)
        base_rate = self.counts[b, window[b], PASS] / base_n[b]
        family = max(int(self.tested.sum()), 1)
        k = np.maximum(self.compared.sum(axis=1), 1)
        levels = [(self.mde, np.full(k.shape, True), self.quality_alpha)]
        levels += [(self.mde_adjusted, k == kk, self.quality_alpha / (family * kk)) for kk in np.unique(k).tolist()]
        for out, at, level in levels:
            bb, ss = b[at[b]], scored_cells[at[scored_cells]]
            out[bb] = minimum_detectable_drop(base_rate[at[b]], base_n[bb], cur_n[bb], alpha=level, power=power)
            out[ss] = minimum_detectable_delta(base_n[ss], cur_n[ss], alpha=level, power=power)

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
            reference=self._window(i, REFERENCE),
            seasonal=bool(self.seasonal[i]),
            basis=BASES[int(self.basis[i])],
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
            small_cell=bool(self.small[i]),
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


def _score_samples(data: Judgments, cells: np.ndarray) -> dict[int, list[np.ndarray]]:
    """Scores per window (BASELINE, CURRENT, REFERENCE) of each continuous cell, via one sort instead of
    per-cell masks."""
    import numpy as np

    is_score = np.flatnonzero(data.values == SCORE)
    key = data.cell[is_score] * 3 + data.window[is_score]
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    vals = data.scores[is_score][order]
    out = {}
    for c in cells.tolist():
        bounds = np.searchsorted(key_sorted, [3 * c, 3 * c + 1, 3 * c + 2, 3 * c + 3]).tolist()
        out[c] = [vals[lo:hi] for lo, hi in zip(bounds, bounds[1:], strict=False)]
    return out


def _opt(x: float) -> float | None:
    return None if x != x else float(x)  # NaN -> None
