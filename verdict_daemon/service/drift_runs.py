"""Drift runs: DriftDetector per tenant × evaluator fingerprint, persisted atomically.

The input is the latest attempt per (trace, fingerprint): its dimension verdicts, or, for a latest
ERROR, one ERROR row per dimension the fingerprint grades (so coverage analysis sees it while
PASS/FAIL rates exclude it). A run row, its exact signal set (possibly empty) and the pending alert
deliveries are committed in one transaction: a reader sees a whole run or none of it, and readers
take the latest completed run. Every cell the run saw is stored with it (`drift_cells`: tested or why not,
and a tested cell's MDE after correction). The run id hashes the inputs and the level; an `as_of` already taken
is never decided again (the stored run is returned), so a rerun cannot spend a level twice.

Repeated looks (docs/statistics.md, "Repeated looks"). The alert period is `current_window_hours` on
the UTC grid (a UTC day by default); signal ids hash (tenant, fingerprint, cluster, dimension, kind,
period), so the same change raised twice in one period is alerted once. Every run is a decision at its
own level, and the levels of the decisions of one period add up to at most `alpha`, whatever the
schedule, so by the union bound P(a period raises any false alarm) <= alpha:

- the **closing decision** of a period: the 24 h window that is exactly the closed period, taken once,
  at `(1 - early_alpha_share)·alpha`, by the first look at or after its end (a look exactly on the
  grid is that decision; a later look takes it first). Catch-up: a look closes every period of the last
  `catch_up_periods` that ended after the fingerprint's first run and has no decision yet, oldest
  first, so days the daemon did not watch (down at midnight, or all day) are still decided; older
  ones stay undecided (bounded work per look);
- the **weekly decision**: the closing decision whose period holds a Monday 00:00 UTC (every
  `small_cell_weeks` weeks; for daily periods Sunday's, taken at Monday 00:00) also tests the small cells,
  those under `min_usable` in its period, over the `small_cell_weeks` weeks before it, in the same run, the
  same family and at the same level: a small cell gets one test per such window and no look of its own;
- **early looks** inside the open period: the window ending at the look, at
  `early_alpha_share·alpha·(t - t_prev)`, t the elapsed share of the period and t_prev that of the
  period's latest earlier run. A look with nothing left to spend (an `as_of` earlier than the period's
  latest run, or `early_alpha_share = 0`) is stored with alpha 0 and no signals; a look at an `as_of`
  already taken returns the stored run.

Within a run the quality and coverage tests share its level (DriftDetector: `coverage_alpha_share`),
so the bound covers every alert kind. Plan and commit are one compare-and-swap: the commit transaction
checks that the fingerprint's runs are still those the plan read, else the look plans again. The state
file's lock serialises transactions across processes, so a `verdict-pipeline` and the daemon looking at
the same time never spend one period's level twice, and a rerun after kill -9 resumes from what was
committed (each decision commits alone, with its signals and deliveries).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, cast

from verdict.tenancy import TenantId
from verdict_daemon.config import Drift
from verdict_daemon.errors import DaemonError
from verdict_daemon.store.drift_runs import (
    BASELINE_TOO_SMALL,
    CURRENT_TOO_SMALL,
    DriftRunReport,
    RunCell,
    RunRecord,
    Signal,
    commit_run,
    judgment_table,
    run_times,
    runs_at,
    stored_run,
)
from verdict_daemon.store.drift_runs import prune_cells as store_prune_cells
from verdict_daemon.store.state import StateStore

if TYPE_CHECKING:
    import pyarrow

log = logging.getLogger("verdict.daemon")

def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, default=str, sort_keys=True).encode()).hexdigest()[:32]


def _float(value) -> float | None:
    return None if value is None or value != value else float(value)  # NaN -> None


def report_signals(report, tenant: TenantId, period: int) -> list[Signal]:
    """The signals of a DriftReport, with ids that dedupe them within alert period `period`."""
    from verdict.drift import CoverageStatus

    out = []
    for cell in report.cells:
        kinds = [str(cell.status)] if cell.is_signal else []
        if cell.coverage.status is CoverageStatus.COVERAGE_DROP:
            kinds.append("coverage_drop")
        for kind in kinds:
            coverage = kind == "coverage_drop"
            out.append(Signal(
                signal_id=_digest(tenant, cell.fingerprint, cell.cluster, cell.dimension, kind, period),
                fingerprint=cell.fingerprint, cluster=cell.cluster, dimension=cell.dimension, kind=kind,
                baseline_level=_float(cell.baseline.unusable_share if coverage else cell.compared.level),
                current_level=_float(cell.current.unusable_share if coverage else cell.current.level),
                baseline_n=cell.baseline.total if coverage else cell.compared.usable,
                current_n=cell.current.total if coverage else cell.current.usable,
                delta=_float(cell.coverage.rise if coverage else cell.delta),
                delta_low=None if coverage else _float(cell.delta_low),
                delta_high=None if coverage else _float(cell.delta_high),
                p_value=_float(cell.coverage.p_value if coverage else cell.p_value),
                adjusted_p=_float(cell.coverage.adjusted_p if coverage else cell.adjusted_p),
                mde=None if coverage else _float(cell.mde_adjusted),
                small_cell=cell.small_cell,
                examples=tuple(cell.coverage.examples if coverage else cell.examples)))
    return out


def run_cells(report, alpha: float) -> list[RunCell]:
    """Every cell of a DriftReport as stored with its run: tested or why not (a thin current window with the
    window that would test it, `DriftReport.window_to_test`), and a tested cell's MDE after correction, the
    detector's own `mde_adjusted` (none for a look with nothing to spend: it tested nothing at a level)."""
    out = []
    for cell in report.cells:
        tested = cell.p_value is not None
        reason = None if tested else CURRENT_TOO_SMALL if cell.current.usable < report.min_usable else BASELINE_TOO_SMALL
        window = report.window_to_test(cell) if reason == CURRENT_TOO_SMALL else None
        out.append(RunCell(cell.cluster, cell.dimension, str(cell.kind), str(cell.status), cell.compared.usable,
                           cell.current.usable, reason, window and window.days,
                           _float(cell.mde_adjusted) if tested and alpha else None, cell.small_cell))
    return out


_EPOCH = datetime(1970, 1, 1)


def evaluator_config(config: Drift, evaluators: int) -> Drift:
    """One evaluator's drift config when a tenant has `evaluators` of them: the tenant's alpha split equally,
    so that the levels all its fingerprints spend in one alert period add up to at most `alpha` and the
    per-period promise holds per tenant, not per evaluator (docs/statistics.md, "One alpha per tenant")."""
    return config.model_copy(update={"alpha": config.alpha / evaluators}) if evaluators > 1 else config


@dataclass(frozen=True)
class Decision:
    """One drift run to take: its window end, its level, and the alert period its signals belong to."""

    now: datetime  # naive UTC
    alpha: float
    period: int
    small_cells: bool = False  # the weekly decision: cells under min_usable are tested over small_cell_weeks


# Small-cell windows end on this grid (Monday 00:00 UTC, every `small_cell_weeks` weeks).
_MONDAY = datetime(1970, 1, 5)


def closing_decision(config: Drift, end: datetime, closing: float, period: int) -> Decision:
    """The decision on the period that ends at `end`; it is the weekly decision (small cells tested over the
    `small_cell_weeks` before `end`, in the same run and family, at the same level) when its period holds a
    boundary of the small-cell grid: for daily periods, Sunday's, taken at Monday 00:00 UTC."""
    width = config.small_cell_window
    weekly = bool(width) and (end - _MONDAY) // width != (end - config.period - _MONDAY) // width
    return Decision(end, closing, period, weekly)


def decision_detector(config: Drift, decision: Decision):
    """The DriftDetector a decision runs (a look with nothing left to spend is run at alpha for its counts)."""
    return config.detector(decision.alpha or config.alpha, small_cells=decision.small_cells)


def lookback(config: Drift, at: datetime) -> datetime:
    """`plan` reads the runs from here on, and the first run ever."""
    return at - (config.catch_up_periods + 1) * config.period


def plan(config: Drift, at: datetime, runs: list[datetime]) -> list[Decision]:
    """The decisions a look at `at` (naive UTC) takes, given the `as_of` of this fingerprint's stored runs
    since `lookback(config, at)` and of its first run.

    Pure: the simulation tests and the benchmark drive exactly this with any schedule.
    """
    width = config.period
    index = (at - _EPOCH) // width
    start = _EPOCH + index * width
    closing = (1 - config.early_alpha_share) * config.alpha
    if at in runs:  # this as_of was decided already: decide once, even on more data
        return []
    first = min(runs, default=at)  # no period before the first run is owed a decision
    out = [closing_decision(config, end, closing, index - k - 1) for k in range(config.catch_up_periods - 1, -1, -1)
           if first < (end := start - k * width) < at and end not in runs]
    if at == start:  # on the grid: this look is the closing decision of the period that just ended
        return [*out, closing_decision(config, at, closing, index - 1)]
    spent = max((r for r in runs if start < r < start + width), default=start)  # later runs too: out of order
    out.append(Decision(at, config.early_alpha_share * config.alpha * max((at - spent) / width, 0.0), index))
    return out


# Another process committing a run of this fingerprint between our plan and our commit makes us plan
# again; a process that keeps losing that race is told so rather than looping.
_REPLANS = 5


def run_drift(store: StateStore, tenant: TenantId, fingerprint: str, config: Drift, as_of: datetime,
              rows: Callable[[], pyarrow.Table] | None = None) -> list[DriftRunReport]:
    """The runs a look at `as_of` takes (see the module docstring): the closing decisions owed, oldest
    first, then the look, each stored with its signals and their alert deliveries. A look at an `as_of`
    already taken returns the stored run (`reused`). The input is the fingerprint's judgments, or what `rows`
    reads (an imported evaluation series, service/imported_evaluations.py: the same columns)."""
    at = as_of.astimezone(UTC).replace(tzinfo=None) if as_of.tzinfo else as_of
    since = lookback(config, at)
    done: list[DriftRunReport] = []
    for _ in range(_REPLANS):
        seen = run_times(store, tenant, fingerprint, since)
        decisions = plan(config, at, seen)
        if not decisions:
            return done + [cast(DriftRunReport, stored_run(store, tenant, run_id))  # listed just now: stored
                           for run_id in runs_at(store, tenant, fingerprint, at)]
        table = rows() if rows is not None else judgment_table(store, tenant, fingerprint)
        for decision in decisions:
            report = _decide(store, tenant, fingerprint, config, table, decision, (since, seen))
            if report is None:
                break
            done.append(report)
            seen = sorted({*seen, decision.now})
        else:
            return done
    raise DaemonError("storage_locked", f"fingerprint {fingerprint[:12]}: other processes kept taking drift runs "
                      f"of this fingerprint; the look at {at.isoformat()} was not taken (it is retried next time)")


def prune_cells(store: StateStore, tenant: TenantId, days: int, now: datetime) -> int:
    """`[retention] drift_cells_days`: delete the cells of the tenant's runs as of more than `days` before `now`,
    except those of the runs a report shows (store.drift_runs.prune_cells); 0 days keeps them all. The number of
    rows deleted."""
    if days == 0:
        return 0
    at = now.astimezone(UTC).replace(tzinfo=None) if now.tzinfo else now
    return store_prune_cells(store, tenant, at - timedelta(days=days))


def _decide(store: StateStore, tenant: TenantId, fingerprint: str, config: Drift, table, decision: Decision,
            planned_on: tuple[datetime, list[datetime]]) -> DriftRunReport | None:
    """Take one decision planned on `(since, runs read from since)`; None (nothing stored) if those runs
    have changed meanwhile."""
    from verdict.drift import DriftInputError

    at = decision.now
    params = config.model_dump()
    # The clusters are part of the input: the same attempts under another registry version are another run.
    run_id = _digest(tenant, fingerprint, at.isoformat(), decision.alpha, params,
                     table.column("attempt_id").to_pylist(), table.column("cluster").to_pylist())
    try:  # a look with nothing left to spend (alpha 0) is stored for its counts, without signals
        report = decision_detector(config, decision).detect(table.drop_columns(["attempt_id"]),
                                                            now=at.replace(tzinfo=UTC))
    except DriftInputError as exc:
        raise DaemonError("drift_input_error", f"fingerprint {fingerprint[:12]}: {exc}") from None
    signals = report_signals(report, tenant, decision.period) if decision.alpha else []
    naive = {name: getattr(report, name).astimezone(UTC).replace(tzinfo=None)
             for name in ("current_start", "baseline_start", "baseline_end")}
    small_start = report.small_cell_start and report.small_cell_start.astimezone(UTC).replace(tzinfo=None)
    run = RunRecord(tenant, run_id, fingerprint, at, naive["current_start"], naive["baseline_start"],
                    naive["baseline_end"], decision.alpha, report.pass_rate_gate, config.min_usable, table.num_rows,
                    len(report.cells), report.tested, small_start)
    if not commit_run(store, run, signals, run_cells(report, decision.alpha), datetime.now(UTC).replace(tzinfo=None),
                      planned_on):
        return None  # compare-and-swap: another process took a run meanwhile, the plan is stale
    log.info("drift tenant=%s fingerprint=%s run=%s judgments=%d cells=%d tested=%d signals=%d",
             tenant, fingerprint[:12], run_id, table.num_rows, len(report.cells), report.tested, len(signals))
    return DriftRunReport(run_id, fingerprint, at, decision.alpha, table.num_rows, len(report.cells), report.tested,
                          config.min_usable, tuple(signals), False)
