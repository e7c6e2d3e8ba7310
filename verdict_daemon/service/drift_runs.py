"""Drift runs: DriftDetector per tenant × evaluator fingerprint, persisted atomically.

The input is the latest attempt per (trace, fingerprint): its dimension verdicts, or, for a latest
ERROR, one ERROR row per dimension the fingerprint grades (so coverage analysis sees it while
PASS/FAIL rates exclude it). A run row, its exact signal set (possibly empty) and the pending alert
deliveries are committed in one transaction: a reader sees a whole run or none of it, and readers
take the latest completed run. The run id hashes the inputs and the level; an `as_of` already taken
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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

from verdict.tenancy import validate_tenant_id
from verdict_daemon.config import Drift
from verdict_daemon.errors import DaemonError
from verdict_daemon.store.state import StateStore, insert_rows

log = logging.getLogger("verdict.daemon")

_SIGNAL_COLUMNS = ("tenant_id", "run_id", "signal_id", "fingerprint", "cluster", "dimension", "kind",
                   "baseline_level", "current_level", "baseline_n", "current_n", "delta", "delta_low",
                   "delta_high", "p_value", "adjusted_p", "examples")
_ALERT_COLUMNS = ("tenant_id", "signal_id", "run_id", "status", "attempts", "last_error", "next_attempt_at",
                  "delivered_at")


@dataclass(frozen=True)
class Signal:
    signal_id: str
    fingerprint: str
    cluster: str
    dimension: str
    kind: str  # regression, improvement, coverage_drop
    baseline_level: float | None
    current_level: float | None
    baseline_n: int
    current_n: int
    delta: float | None
    delta_low: float | None
    delta_high: float | None
    p_value: float | None
    adjusted_p: float | None
    examples: tuple[str, ...]


@dataclass(frozen=True)
class DriftRunReport:
    run_id: str
    fingerprint: str
    as_of: datetime
    alpha: float  # the level this run decided at (its share of the period's budget)
    judgments: int
    cells: int
    tested: int
    signals: tuple[Signal, ...]
    reused: bool  # an identical run already existed (same inputs)


def judgment_table(store: StateStore, tenant: str, fingerprint: str):
    """Latest attempt per trace as the DriftDetector's columnar input (pyarrow)."""
    with store.transaction() as con:
        return con.sql("""
            WITH latest AS (
                SELECT trace_id, arg_max(attempt_id, attempt_no) AS attempt_id, arg_max(status, attempt_no) AS status
                FROM judgment_attempts WHERE tenant_id = $t AND fingerprint = $fp GROUP BY trace_id),
            dims AS (
                SELECT DISTINCT v.dimension FROM dimension_verdicts v JOIN judgment_attempts a USING (tenant_id, attempt_id)
                WHERE v.tenant_id = $t AND a.fingerprint = $fp),
            rows AS (
                SELECT l.trace_id, l.attempt_id, v.dimension, v.value, v.score
                FROM latest l JOIN dimension_verdicts v ON v.tenant_id = $t AND v.attempt_id = l.attempt_id
                WHERE l.status = 'OK'
                UNION ALL
                SELECT l.trace_id, l.attempt_id, d.dimension, 'ERROR', NULL
                FROM latest l CROSS JOIN dims d WHERE l.status = 'ERROR')
            SELECT s.started_at, r.trace_id, c.cluster, r.dimension, r.value, $fp AS fingerprint, r.score,
                   r.attempt_id
            FROM rows r
            JOIN sampled_traces s ON s.tenant_id = $t AND s.trace_id = r.trace_id
            JOIN cluster_assignments c ON c.tenant_id = $t AND c.trace_id = r.trace_id
            ORDER BY r.attempt_id, r.dimension""", params={"t": tenant, "fp": fingerprint}).to_arrow_table()


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, default=str, sort_keys=True).encode()).hexdigest()[:32]


def _float(value) -> float | None:
    return None if value is None or value != value else float(value)  # NaN -> None


def report_signals(report, tenant: str, period: int) -> list[Signal]:
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
                baseline_level=_float(cell.baseline.unusable_share if coverage else cell.baseline.level),
                current_level=_float(cell.current.unusable_share if coverage else cell.current.level),
                baseline_n=cell.baseline.total if coverage else cell.baseline.usable,
                current_n=cell.current.total if coverage else cell.current.usable,
                delta=_float(cell.coverage.rise if coverage else cell.delta),
                delta_low=None if coverage else _float(cell.delta_low),
                delta_high=None if coverage else _float(cell.delta_high),
                p_value=_float(cell.coverage.p_value if coverage else cell.p_value),
                adjusted_p=_float(cell.coverage.adjusted_p if coverage else cell.adjusted_p),
                examples=tuple(cell.coverage.examples if coverage else cell.examples)))
    return out


def fingerprints(store: StateStore, tenant: str) -> list[str]:
    with store.transaction() as con:
        return [r[0] for r in con.execute(
            "SELECT DISTINCT fingerprint FROM judgment_attempts WHERE tenant_id = ? ORDER BY 1", [tenant]).fetchall()]


_EPOCH = datetime(1970, 1, 1)
# SQL over drift_runs: true for a closing decision, the one run whose as_of lies on its period grid (its
# current window is exactly one period); every other run is an early look.
IS_CLOSING = "epoch_us(as_of) % (epoch_us(as_of) - epoch_us(current_start)) = 0"


@dataclass(frozen=True)
class Decision:
    """One drift run to take: its window end, its level, and the alert period its signals belong to."""

    now: datetime  # naive UTC
    alpha: float
    period: int


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
    out = [Decision(end, closing, index - k - 1) for k in range(config.catch_up_periods - 1, -1, -1)
           if first < (end := start - k * width) < at and end not in runs]
    if at == start:  # on the grid: this look is the closing decision of the period that just ended
        return [*out, Decision(at, closing, index - 1)]
    spent = max((r for r in runs if start < r < start + width), default=start)  # later runs too: out of order
    out.append(Decision(at, config.early_alpha_share * config.alpha * max((at - spent) / width, 0.0), index))
    return out


_RUN_TIMES = """SELECT as_of FROM drift_runs WHERE tenant_id = $t AND fingerprint = $fp AND as_of >= $since
                UNION SELECT min(as_of) FROM drift_runs WHERE tenant_id = $t AND fingerprint = $fp ORDER BY 1"""


def _run_times(con, tenant: str, fingerprint: str, since: datetime) -> list[datetime]:
    return [r[0] for r in con.execute(_RUN_TIMES, {"t": tenant, "fp": fingerprint, "since": since}).fetchall()
            if r[0] is not None]


def _runs_at(store: StateStore, tenant: str, fingerprint: str, at: datetime) -> list[str]:
    with store.transaction() as con:
        return [r[0] for r in con.execute("SELECT run_id FROM drift_runs WHERE tenant_id = ? AND fingerprint = ? "
                                          "AND as_of = ? ORDER BY completed_at", [tenant, fingerprint, at]).fetchall()]


# Another process committing a run of this fingerprint between our plan and our commit makes us plan
# again; a process that keeps losing that race is told so rather than looping.
_REPLANS = 5


def run_drift(store: StateStore, tenant: str, fingerprint: str, config: Drift,
              as_of: datetime) -> list[DriftRunReport]:
    """The runs a look at `as_of` takes (see the module docstring): the closing decisions owed, oldest
    first, then the look, each stored with its signals and their alert deliveries. A look at an `as_of`
    already taken returns the stored run (`reused`)."""
    tenant = validate_tenant_id(tenant)
    at = as_of.astimezone(UTC).replace(tzinfo=None) if as_of.tzinfo else as_of
    since = lookback(config, at)
    done: list[DriftRunReport] = []
    for _ in range(_REPLANS):
        with store.transaction() as con:
            seen = _run_times(con, tenant, fingerprint, since)
        decisions = plan(config, at, seen)
        if not decisions:
            return done + [cast(DriftRunReport, _stored_run(store, tenant, run_id))  # listed just now: stored
                           for run_id in _runs_at(store, tenant, fingerprint, at)]
        table = judgment_table(store, tenant, fingerprint)
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


def _decide(store: StateStore, tenant: str, fingerprint: str, config: Drift, table, decision: Decision,
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
        report = config.detector(decision.alpha or config.alpha).detect(table.drop_columns(["attempt_id"]),
                                                        now=at.replace(tzinfo=UTC))
    except DriftInputError as exc:
        raise DaemonError("drift_input_error", f"fingerprint {fingerprint[:12]}: {exc}") from None
    signals = report_signals(report, tenant, decision.period) if decision.alpha else []
    naive = {name: getattr(report, name).astimezone(UTC).replace(tzinfo=None)
             for name in ("current_start", "baseline_start", "baseline_end")}
    now = datetime.now(UTC).replace(tzinfo=None)
    with store.transaction() as con:
        if _run_times(con, tenant, fingerprint, planned_on[0]) != planned_on[1]:
            return None  # compare-and-swap: another process took a run meanwhile, the plan is stale
        con.execute("INSERT INTO drift_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [tenant, run_id, fingerprint, at, naive["current_start"], naive["baseline_start"],
                     naive["baseline_end"], decision.alpha, report.pass_rate_gate, config.min_usable, table.num_rows,
                     len(report.cells), report.tested, len(signals), run_id, now])
        insert_rows(con, "drift_signals", _SIGNAL_COLUMNS,
                    [(tenant, run_id, s.signal_id, s.fingerprint, s.cluster, s.dimension, s.kind, s.baseline_level,
                      s.current_level, s.baseline_n, s.current_n, s.delta, s.delta_low, s.delta_high, s.p_value,
                      s.adjusted_p, json.dumps(list(s.examples))) for s in signals])
        # One delivery per signal id, however many runs raise it (INSERT OR IGNORE).
        insert_rows(con, "alert_deliveries", _ALERT_COLUMNS,
                    [(tenant, s.signal_id, run_id, "pending", 0, None, now, None) for s in signals])
    log.info("drift tenant=%s fingerprint=%s run=%s judgments=%d cells=%d tested=%d signals=%d",
             tenant, fingerprint[:12], run_id, table.num_rows, len(report.cells), report.tested, len(signals))
    return DriftRunReport(run_id, fingerprint, at, decision.alpha, table.num_rows, len(report.cells), report.tested,
                          tuple(signals), False)


def _stored_run(store: StateStore, tenant: str, run_id: str) -> DriftRunReport | None:
    with store.transaction() as con:
        run = con.execute("SELECT fingerprint, as_of, alpha, judgments, cells, tested FROM drift_runs "
                          "WHERE tenant_id = ? AND run_id = ?", [tenant, run_id]).fetchone()
        if run is None:
            return None
        rows = con.execute(f"SELECT {', '.join(_SIGNAL_COLUMNS[2:])} FROM drift_signals "
                           "WHERE tenant_id = ? AND run_id = ? ORDER BY cluster, dimension, kind",
                           [tenant, run_id]).fetchall()
    signals = tuple(Signal(*row[:-1], tuple(json.loads(row[-1]))) for row in rows)  # type: ignore[call-arg]  # the columns in field order
    return DriftRunReport(run_id, *run, signals, True)  # type: ignore[call-arg]  # the columns in field order


def latest_run(store: StateStore, tenant: str, fingerprint: str) -> DriftRunReport | None:
    """The latest completed run of this tenant and fingerprint (what readers report)."""
    tenant = validate_tenant_id(tenant)
    with store.transaction() as con:
        row = con.execute("SELECT run_id FROM drift_runs WHERE tenant_id = ? AND fingerprint = ? "
                          "ORDER BY completed_at DESC, as_of DESC LIMIT 1", [tenant, fingerprint]).fetchone()
    return _stored_run(store, tenant, row[0]) if row else None
