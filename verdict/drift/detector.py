"""`DriftDetector`: its settings, and one run from the judgment columns to the report."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from verdict.drift.analysis import Analysis, Examples
from verdict.drift.input import FAIL, PASS, SCORE, History, Judgments, read_judgments, us
from verdict.drift.model import DriftReport
from verdict.drift.seasonal import SEASONALITY, seasonal_cells
from verdict.drift.windows import Layout

if TYPE_CHECKING:
    import numpy as np


class DriftDetector:
    """Compares the current window with a baseline window per (fingerprint, cluster, dimension).

    Defaults: current = the 24 h before `now`; baseline = the 7 days ending 24 h before the current
    window starts. A cell is tested when both windows hold at least `min_usable` usable judgments.
    `alpha` bounds the probability that a run on unchanged data raises any signal, quality or coverage:
    the quality tests form one family at `(1 - coverage_alpha_share)·alpha`, the coverage tests another
    at `coverage_alpha_share·alpha` (union bound). A quality signal needs adjusted p <= its family's level
    (`correction` over every tested cell: "bh", "holm" or "bonferroni") and a change of at least the cell's gate, judged on the point estimate: a pass-rate
    difference of `pass_rate_gate` (a share: 0.05 = 5 percentage points) on PASS/FAIL dimensions, a
    |Cliff's delta| of `delta_gate` on scored ones; `dimension_gates` overrides either per dimension.

    Real traffic (docs/statistics.md, "Weekly patterns" and "Slow drift and lasting drops"): a cell with a
    weekly pattern (`seasonality`, see verdict.drift.seasonal) is compared with the same window of the
    `seasonal_weeks` weeks before; any other cell also with a reference, its recent baseline
    `reference_weeks` weeks earlier, so that a slow drift or a drop missed at first is not absorbed when
    the recent baseline slides over it (0: no reference). A cell's p-value is the smaller of its
    comparisons times their number.

    Small cells (docs/statistics.md, "Small cells"): with a `small_cell_window` (longer than the current
    window; the daemon passes one only to its weekly decision), a cell with fewer than `min_usable` usable
    judgments in the current window is tested over that window instead, against the 3 times as long
    baseline a gap before it, in the run's one family.
    """

    def __init__(
        self,
        *,
        current_window: timedelta = timedelta(hours=24),
        baseline_window: timedelta = timedelta(days=7),
        gap: timedelta = timedelta(hours=24),
        min_usable: int = 30,
        alpha: float = 0.05,
        coverage_alpha_share: float = 0.1,
        pass_rate_gate: float = 0.05,
        delta_gate: float = 0.147,
        dimension_gates: Mapping[str, float] | None = None,
        correction: str = "bh",
        power: float = 0.8,
        coverage_min_rise: float = 0.10,
        max_examples: int = 5,
        seasonality: str = "auto",
        seasonal_weeks: int = 3,
        seasonal_check_alpha: float = 0.01,
        reference_weeks: int = 3,
        small_cell_window: timedelta = timedelta(0),
    ) -> None:
        if current_window <= timedelta(0) or baseline_window <= timedelta(0):
            raise ValueError("current_window and baseline_window must be positive")
        if gap < timedelta(0):
            raise ValueError("gap must not be negative")
        if min_usable < 2:
            raise ValueError(f"min_usable must be at least 2, got {min_usable}")
        for name, v in (("alpha", alpha), ("power", power)):
            if not 0 < v < 1:
                raise ValueError(f"{name} must lie in (0, 1), got {v}")
        if not 0 <= coverage_alpha_share < 1:
            raise ValueError(f"coverage_alpha_share must lie in [0, 1), got {coverage_alpha_share}")
        gates = dict(dimension_gates or {})
        for name, v in (("pass_rate_gate", pass_rate_gate), ("delta_gate", delta_gate),
                        ("coverage_min_rise", coverage_min_rise),
                        *((f"dimension_gates[{k!r}]", g) for k, g in gates.items())):
            if not 0 <= v <= 1:
                raise ValueError(f"{name} must lie in [0, 1], got {v}")
        from verdict.stats.multiple_testing import CORRECTIONS

        if correction not in CORRECTIONS:
            raise ValueError(f"correction must be one of {list(CORRECTIONS)}, got {correction!r}")
        if max_examples < 0:
            raise ValueError(f"max_examples must be >= 0, got {max_examples}")
        _check_real_traffic(seasonality, seasonal_weeks, seasonal_check_alpha, reference_weeks,
                            current_window, baseline_window)
        if small_cell_window and small_cell_window <= current_window:
            raise ValueError(f"small_cell_window ({small_cell_window}) must be longer than current_window "
                             f"({current_window}); 0 = none")
        self.current_window = current_window
        self.baseline_window = baseline_window
        self.gap = gap
        self.min_usable = min_usable
        self.alpha = alpha
        self.coverage_alpha_share = coverage_alpha_share
        self.pass_rate_gate = pass_rate_gate
        self.delta_gate = delta_gate
        self.dimension_gates = gates
        self.correction = correction
        self.power = power
        self.coverage_min_rise = coverage_min_rise
        self.max_examples = max_examples
        self.seasonality = seasonality
        self.seasonal_weeks = seasonal_weeks
        self.seasonal_check_alpha = seasonal_check_alpha
        self.reference_weeks = reference_weeks
        self.small_cell_window = small_cell_window

    def detect(self, judgments: Any, *, now: datetime | None = None) -> DriftReport:
        at = _utc(now or datetime.now(UTC))
        current_start = at - self.current_window
        baseline_end = current_start - self.gap
        baseline_start = baseline_end - self.baseline_window
        layout = Layout(us(at), us(current_start), us(baseline_start), us(baseline_end),
                        self.seasonal_weeks, self.reference_weeks, self.small_cell_window // timedelta(microseconds=1))
        history = read_judgments(judgments, layout)
        seasonal, _ = seasonal_cells(history, self.seasonality, self.min_usable, self.seasonal_check_alpha)
        small = self._small(history)
        data = history.windowed(seasonal & ~small, small)
        analysis = Analysis(self, data, self._gates(data))
        examples = Examples(self.max_examples, data)
        labels = data.labels
        cells = tuple(
            analysis.cell(i, labels[i], examples)
            for i in sorted(range(len(labels)), key=lambda i: labels[i])
        )
        return DriftReport(
            now=at,
            current_start=current_start,
            baseline_start=baseline_start,
            baseline_end=baseline_end,
            alpha=self.alpha,
            coverage_alpha_share=self.coverage_alpha_share,
            pass_rate_gate=self.pass_rate_gate,
            delta_gate=self.delta_gate,
            correction=self.correction,
            min_usable=self.min_usable,
            cells=cells,
            small_cell_start=at - self.small_cell_window if self.small_cell_window else None,
        )

    def _small(self, history: History) -> np.ndarray:
        """Per cell: tested over the small-cell window, having fewer than `min_usable` usable judgments in the
        current window (counts, not verdicts, choose it: the choice leaves the test's level alone)."""
        import numpy as np

        if not self.small_cell_window:
            return np.zeros(len(history.labels), dtype=bool)
        counts = history.counts(history.layout.current(history.ts))
        small: np.ndarray = counts[:, [PASS, FAIL, SCORE]].sum(axis=1) < self.min_usable
        return small

    def _gates(self, data: Judgments) -> np.ndarray:
        """Per cell, the smallest |change| that is a signal, in the cell's unit."""
        import numpy as np

        return np.array([self.dimension_gates.get(dim, self.delta_gate if s else self.pass_rate_gate)
                         for (_, _, dim), s in zip(data.labels, data.scored.tolist(), strict=True)])


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _check_real_traffic(seasonality: str, seasonal_weeks: int, check_alpha: float, reference_weeks: int,
                        current_window: timedelta, baseline_window: timedelta) -> None:
    if seasonality not in SEASONALITY:
        raise ValueError(f"seasonality must be one of {list(SEASONALITY)}, got {seasonality!r}")
    if seasonality != "off" and current_window > timedelta(days=7):
        raise ValueError("seasonality needs a current_window of at most 7 days; set seasonality='off'")
    if not 1 <= seasonal_weeks <= 52:
        raise ValueError(f"seasonal_weeks must lie in [1, 52], got {seasonal_weeks}")
    if not 0 < check_alpha < 1:
        raise ValueError(f"seasonal_check_alpha must lie in (0, 1), got {check_alpha}")
    if not 0 <= reference_weeks <= 52:
        raise ValueError(f"reference_weeks must lie in [0, 52], got {reference_weeks}")
    if reference_weeks and timedelta(weeks=reference_weeks) < baseline_window:
        raise ValueError(f"reference_weeks ({reference_weeks}) must span at least baseline_window "
                         f"({baseline_window}) so the reference and the recent baseline do not overlap; 0 = none")
