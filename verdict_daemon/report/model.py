"""What a report shows: typed, already-aggregated values (no row-level data besides signal examples and the
newest review-queue items)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from verdict_daemon.review.queue import DimensionJudgment, ItemSummary, LabelRecord
from verdict_daemon.store.drift_runs import CURRENT_TOO_SMALL, DriftWindows, RunCell, Signal


@dataclass(frozen=True)
class RatePoint:
    """One UTC day of one cluster × dimension: PASS out of PASS+FAIL, with the 95 % Wilson interval."""

    day: date
    passed: int
    usable: int
    rate: float
    low: float
    high: float


@dataclass(frozen=True)
class RateSeries:
    cluster: str
    dimension: str
    points: tuple[RatePoint, ...]


@dataclass(frozen=True)
class AlarmPeriod:
    """The window a drift run tested a cell over when it raised it: [start, raised_at)."""

    start: datetime
    raised_at: datetime  # the run's as_of
    closing: bool  # a period's closing decision (else an early look)


@dataclass(frozen=True)
class HeatCell:
    """Latest pass rate of a cluster × dimension (the latest run's current window, else the last day)."""

    cluster: str
    dimension: str
    passed: int
    usable: int
    rate: float | None  # None: no usable verdict in that period
    signal: str | None  # regression / improvement / coverage_drop raised on this cell by the latest run
    min_usable: int | None = None  # the latest run's minimum per window; None before any run
    window_to_test: timedelta | None = None  # a not-tested cell: the current window that would reach min_usable
    small_cell: timedelta | None = None  # under min_usable in the run's window: counts over this small-cell window
    tested: RunCell | None = None  # the run's own record of the cell (drift_cells); None before runs stored them

    @property
    def not_tested(self) -> bool:
        """The run did not test it, as the run stored it; for a run stored before its cells were, inferred: below
        the run's `min_usable` in the current window (a thin baseline then goes unseen)."""
        if self.tested is not None:
            return self.tested.not_tested is not None
        return self.min_usable is not None and self.usable < self.min_usable

    @property
    def thin_current(self) -> bool:
        """Not tested for its current window (not for the windows it is compared with)."""
        return self.not_tested and (self.tested is None or self.tested.not_tested == CURRENT_TOO_SMALL)

    @property
    def mde(self) -> float | None:
        """A tested cell's minimum detectable effect after correction, the detector's own (DriftCell.mde_adjusted)."""
        return None if self.tested is None else self.tested.mde


@dataclass(frozen=True)
class ExampleTrace:
    """An example trace of a signal: redacted conversation and the judge's latest verdict on the dimension."""

    trace_id: str
    started_at: datetime | None
    query: str | None
    response: str | None
    value: str | None
    reason: str | None
    error_code: str | None


@dataclass(frozen=True)
class SignalRow:
    """A stored drift signal and what the report adds to it."""

    signal: Signal
    mde: float | None  # the detector's, stored with the signal (gather.mde); None for coverage drops
    scored: bool  # a score dimension: levels are mean scores, not pass rates
    examples: tuple[ExampleTrace, ...]  # signal.examples (trace ids) with their content


@dataclass(frozen=True)
class CoverageRow:
    """Latest attempt per sampled trace of one cluster: how much of it yields usable verdicts."""

    cluster: str
    sampled: int
    judged: int  # traces with a latest attempt by this evaluator
    error_traces: int  # latest attempt ERROR
    verdicts: int
    unclear: int
    usable: int  # PASS/FAIL verdicts or scores
    no_content: int = 0  # latest attempt NO_CONTENT: the graded call had nothing to judge

    @property
    def pending(self) -> int:
        return max(self.sampled - self.judged, 0)

    @property
    def error_share(self) -> float | None:
        return self.error_traces / self.judged if self.judged else None

    @property
    def unclear_share(self) -> float | None:
        return self.unclear / self.verdicts if self.verdicts else None


@dataclass(frozen=True)
class EvaluatorSection:
    """Everything shown per evaluator fingerprint (results of different fingerprints are never pooled)."""

    name: str
    fingerprint: str
    run: DriftWindows | None  # the latest closing decision; the latest early look while no period has closed
    series: tuple[RateSeries, ...]
    heatmap: tuple[HeatCell, ...]
    heat_period: tuple[datetime, datetime] | None
    signals: tuple[SignalRow, ...]
    coverage: tuple[CoverageRow, ...]
    score_dimensions: tuple[str, ...]  # numeric dimensions: in the signals table, not in pass-rate charts
    look: DriftWindows | None = None  # the latest early look after `run` (`run` is the latest closing decision)
    look_signals: tuple[SignalRow, ...] = ()
    weekly: DriftWindows | None = None  # the latest run that tested small cells over their longer window, if not `run`
    weekly_signals: tuple[SignalRow, ...] = ()


@dataclass(frozen=True)
class SentinelRow:
    evaluator: str
    fingerprint: str
    status: str
    reason: str
    examples: int
    usable: int
    errors: int
    passed: int
    pass_rate: float | None
    pass_rate_low: float | None
    pass_rate_high: float | None
    threshold: float
    minimum_examples: int
    sentinel_file: str
    checked_at: datetime
    checks: int  # how many checks this evaluator has on record


@dataclass(frozen=True)
class SpendRow:
    """Judge spend: every attempt counts (retries and errors included), not only the latest."""

    evaluator: str
    fingerprint: str
    attempts: int
    errors: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    requests: int | None  # model requests, retries included (None: only attempts stored before they were counted)
    requests_per_attempt: float | None  # over the attempts that called the judge and have a count


@dataclass(frozen=True)
class SpendDay:
    day: date
    input_tokens: int
    output_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class Panel:
    """A panel fed by an optional component (probes, review queue): rows of label → value, or why empty."""

    rows: tuple[tuple[str, ...], ...]
    columns: tuple[str, ...]
    empty_reason: str | None
    note: str | None = None  # shown under the rows (e.g. files that could not be read)


@dataclass(frozen=True)
class ReviewItem:
    """A queued item as `verdict review show` gives it (verdict_daemon.review.get_item), with its trace's cluster."""

    summary: ItemSummary
    cluster: str | None  # filled in by gather from the tenant's judgments
    query: str
    response: str
    context: str
    judgments: tuple[DimensionJudgment, ...]  # the judge's verdict and rationale per dimension
    latest: tuple[LabelRecord, ...]  # the label in force per dimension (empty while pending)


@dataclass(frozen=True)
class ReviewList:
    """The newest items of one status; `total` counts them all (more than shown: the page says so)."""

    total: int
    items: tuple[ReviewItem, ...]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.items)


@dataclass(frozen=True)
class ReviewQueue:
    counts: Panel  # queue_summary's figures, or why the queue is empty
    pending: ReviewList = field(default_factory=lambda: ReviewList(0, ()))
    labelled: ReviewList = field(default_factory=lambda: ReviewList(0, ()))


@dataclass(frozen=True)
class ReportData:
    tenant: str
    generated_at: datetime
    sampled_traces: int
    evaluators: tuple[EvaluatorSection, ...]
    sentinel: tuple[SentinelRow, ...]
    spend: tuple[SpendRow, ...]
    spend_days: tuple[SpendDay, ...]
    probes: Panel
    review: ReviewQueue

    @property
    def signal_count(self) -> int:
        return sum(len(e.signals) + len(e.look_signals) for e in self.evaluators)
