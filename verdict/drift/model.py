"""The drift report's types: statuses, per-window counts, coverage, cells and the run's report (stdlib only)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from datetime import datetime, timedelta


class DriftInputError(ValueError):
    """The judgments cannot be analysed as given; the message says which column and why."""


class MetricKind(enum.StrEnum):
    BINARY = "binary"  # PASS/FAIL verdicts, Fisher's exact test
    CONTINUOUS = "continuous"  # scores, Mann-Whitney U


class CellStatus(enum.StrEnum):
    INSUFFICIENT = "insufficient"  # fewer than min_usable usable judgments in a window: not tested
    STABLE = "stable"  # tested; adjusted p above the quality level
    BELOW_GATE = "below_gate"  # significant, but the change is under the cell's effect gate
    REGRESSION = "regression"  # signal: significant, |change| >= gate, current worse
    IMPROVEMENT = "improvement"  # signal: significant, |change| >= gate, current better


class Basis(enum.StrEnum):
    """What the current window of a cell was found different from (its p-value is the smaller of the two
    comparisons times their number)."""

    RECENT = "recent"  # the recent baseline: the days before the gap, or the same weekdays if seasonal
    REFERENCE = "reference"  # the long-horizon reference: the recent baseline `reference_weeks` earlier


class CoverageStatus(enum.StrEnum):
    INSUFFICIENT = "insufficient"  # fewer than min_usable judgments (any outcome) in a window
    STABLE = "stable"
    COVERAGE_DROP = "coverage_drop"  # signal: UNCLEAR/ERROR share rose significantly and sharply


@dataclass(frozen=True)
class WindowCounts:
    passed: int
    failed: int
    unclear: int
    error: int
    scored: int
    level: float | None  # pass rate (binary) or mean score (continuous); None without usable rows

    @property
    def usable(self) -> int:
        return self.passed + self.failed + self.scored

    @property
    def total(self) -> int:
        return self.usable + self.unclear + self.error

    @property
    def unusable_share(self) -> float | None:
        return (self.unclear + self.error) / self.total if self.total else None


@dataclass(frozen=True)
class Coverage:
    """Separate test of the UNCLEAR/ERROR share (Fisher on usable vs unusable counts)."""

    status: CoverageStatus
    rise: float | None  # current unusable share minus baseline unusable share
    p_value: float | None
    adjusted_p: float | None
    examples: tuple[str, ...]  # UNCLEAR/ERROR trace ids from the current window, when a signal


@dataclass(frozen=True)
class DriftCell:
    fingerprint: str
    cluster: str
    dimension: str
    kind: MetricKind
    status: CellStatus
    baseline: WindowCounts  # the recent baseline (the same weekdays of earlier weeks when `seasonal`)
    current: WindowCounts
    reference: WindowCounts  # the long-horizon reference; empty for seasonal cells and without one
    seasonal: bool  # a weekly pattern: compared with the same weekdays (verdict.drift.seasonal)
    basis: Basis  # the comparison the p-value, change and interval come from
    p_value: float | None  # None when not tested
    adjusted_p: float | None  # the run's correction over every tested cell of the run
    delta: float | None  # Cliff's delta of current over baseline (pass-rate difference on binary)
    delta_low: float | None
    delta_high: float | None
    gate: float  # smallest |delta| that is a signal: pass-rate points (binary) or Cliff's delta
    mde: float | None  # smallest |delta| detectable at these sizes at the quality level; None without data
    mde_adjusted: float | None  # the same at the level the detector tests at: quality_alpha/(m·comparisons)
    coverage: Coverage
    examples: tuple[str, ...]  # up to max_examples trace ids from the current window, when a signal
    small_cell: bool = False  # too few judgments in the current window: tested over the small-cell windows

    @property
    def compared(self) -> WindowCounts:
        """The window the change is measured against."""
        return self.reference if self.basis is Basis.REFERENCE else self.baseline

    @property
    def is_signal(self) -> bool:
        return self.status in (CellStatus.REGRESSION, CellStatus.IMPROVEMENT)


def window_to_reach(min_usable: int, usable: int, width: timedelta) -> timedelta | None:
    """The window (in whole days, at least one) whose judgments would reach `min_usable`, extrapolating the
    `usable` judgments seen over `width`; None when there were none to extrapolate from."""
    if not usable:
        return None
    days = math.ceil(min_usable / usable * (width / timedelta(days=1)))
    return timedelta(days=max(days, 1))


@dataclass(frozen=True)
class DriftReport:
    now: datetime
    current_start: datetime
    baseline_start: datetime
    baseline_end: datetime
    alpha: float  # P(the run raises any false signal, quality or coverage) <= alpha
    coverage_alpha_share: float
    pass_rate_gate: float
    delta_gate: float
    correction: str
    min_usable: int
    cells: tuple[DriftCell, ...]  # every (fingerprint, cluster, dimension) seen in either window
    small_cell_start: datetime | None = None  # the small cells' current window starts here; None: no such window

    @property
    def quality_alpha(self) -> float:
        """The level of the quality family (pass rates, scores)."""
        return self.alpha * (1 - self.coverage_alpha_share)

    @property
    def coverage_alpha(self) -> float:
        """The level of the coverage family (UNCLEAR/ERROR shares)."""
        return self.alpha * self.coverage_alpha_share

    @property
    def signals(self) -> tuple[DriftCell, ...]:
        return tuple(c for c in self.cells if c.is_signal)

    @property
    def coverage_signals(self) -> tuple[DriftCell, ...]:
        return tuple(c for c in self.cells if c.coverage.status is CoverageStatus.COVERAGE_DROP)

    @property
    def tested(self) -> int:
        return sum(c.p_value is not None for c in self.cells)

    def window_to_test(self, cell: DriftCell) -> timedelta | None:
        """For a cell not tested for lack of data: the current window (in whole days, at its present volume)
        whose judgments would reach `min_usable`; None for a tested cell or one with no current judgments.
        A small cell's current window is the small-cell window."""
        if cell.p_value is not None:
            return None
        start = self.small_cell_start if cell.small_cell and self.small_cell_start else self.current_start
        return window_to_reach(self.min_usable, cell.current.usable, self.now - start)

    def by_fingerprint(self) -> dict[str, tuple[DriftCell, ...]]:
        out: dict[str, list[DriftCell]] = {}
        for c in self.cells:
            out.setdefault(c.fingerprint, []).append(c)
        return {k: tuple(v) for k, v in out.items()}

    def cell(self, fingerprint: str, cluster: str, dimension: str) -> DriftCell:
        for c in self.cells:
            if (c.fingerprint, c.cluster, c.dimension) == (fingerprint, cluster, dimension):
                return c
        raise KeyError(
            f"no cell for fingerprint={fingerprint!r} cluster={cluster!r} dimension={dimension!r}"
        )
