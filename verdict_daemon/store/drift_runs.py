"""Drift runs, their signals and the signals' alert deliveries in state.duckdb: the only SQL for them,
returning frozen dataclasses.

A run, its signals and the pending alert deliveries of those signals are committed in one transaction
(`commit_run`), and only if the fingerprint's runs are still those the run was planned on
(compare-and-swap: service/drift_runs.py plans, this module stores). The drift input, the latest attempt
per trace with its verdicts, is read here too (`judgment_table`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, cast

from verdict.tenancy import validate_tenant_id
from verdict_daemon.store.state import StateStore, insert_rows

if TYPE_CHECKING:
    import pyarrow

_SIGNAL_COLUMNS = ("tenant_id", "run_id", "signal_id", "fingerprint", "cluster", "dimension", "kind",
                   "baseline_level", "current_level", "baseline_n", "current_n", "delta", "delta_low",
                   "delta_high", "p_value", "adjusted_p", "mde", "small_cell", "examples")
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
    mde: float | None  # the detector's MDE at the level a lone change had to reach; None for coverage drops
    small_cell: bool | None  # tested over the run's small-cell window (None: stored before that column)
    examples: tuple[str, ...]


# Why a cell was not tested (drift_cells.not_tested; NULL: tested).
CURRENT_TOO_SMALL = "current_below_min_usable"  # fewer than min_usable usable judgments in the current window
BASELINE_TOO_SMALL = "baseline_below_min_usable"  # enough now, but no window it is compared with has enough


@dataclass(frozen=True)
class RunCell:
    """A cell a drift run saw (`drift_cells`): tested or why not, and the detector's power when tested."""

    cluster: str
    dimension: str
    kind: str  # binary, continuous
    status: str  # verdict.drift.CellStatus
    baseline_n: int  # usable judgments of the window it was (or would be) compared with
    current_n: int  # usable judgments of its current window (a small cell's: the small-cell window)
    not_tested: str | None  # CURRENT_TOO_SMALL, BASELINE_TOO_SMALL; None: tested
    window_to_test_days: int | None  # CURRENT_TOO_SMALL: the current window that would reach min_usable
    mde: float | None  # tested at a level > 0: DriftCell.mde_adjusted, the MDE after correction
    small_cell: bool  # tested (or not) over the run's small-cell window


_CELL_COLUMNS = ("cluster", "dimension", "kind", "status", "baseline_n", "current_n", "not_tested",
                 "window_to_test_days", "mde", "small_cell")


@dataclass(frozen=True)
class DriftRunReport:
    run_id: str
    fingerprint: str
    as_of: datetime
    alpha: float  # the level this run decided at (its share of the period's budget)
    judgments: int
    cells: int
    tested: int
    min_usable: int  # usable judgments per window a cell needs to be tested (the others are not)
    signals: tuple[Signal, ...]
    reused: bool  # an identical run already existed (same inputs)


@dataclass(frozen=True)
class DriftWindows:
    """A stored drift run of one evaluator fingerprint (its windows and gates): a period's closing decision
    or an early look inside an open period (service/drift_runs.plan)."""

    run_id: str
    as_of: datetime
    baseline_start: datetime
    baseline_end: datetime
    current_start: datetime
    alpha: float
    effect_gate: float
    min_usable: int
    judgments: int
    cells: int
    tested: int
    signals: int
    closing: bool
    small_cell_start: datetime | None = None  # the small cells' current window started here (the weekly decision)

    def small_cell_windows(self) -> DriftWindows:
        """The windows a weekly decision tested its small cells over: from `small_cell_start` to `as_of`, against
        the window SMALL_CELL_BASELINE times as long that ends the run's gap before it (verdict.drift.windows)."""
        from verdict.drift.windows import SMALL_CELL_BASELINE

        start = cast(datetime, self.small_cell_start)
        end = start - (self.current_start - self.baseline_end)
        return dataclasses.replace(self, current_start=start, baseline_end=end,
                                   baseline_start=end - SMALL_CELL_BASELINE * (self.as_of - start))


@dataclass(frozen=True)
class RunRecord:
    """A `drift_runs` row as taken (times naive UTC)."""

    tenant_id: str
    run_id: str
    fingerprint: str
    as_of: datetime
    current_start: datetime
    baseline_start: datetime
    baseline_end: datetime
    alpha: float
    effect_gate: float
    min_usable: int
    judgments: int
    cells: int
    tested: int
    small_cell_start: datetime | None = None  # the weekly decision: small cells tested from here to as_of


def judgment_table(store: StateStore, tenant: str, fingerprint: str) -> pyarrow.Table:
    """Latest attempt per trace as the DriftDetector's columnar input (pyarrow)."""
    with store.transaction() as con:
        return cast("pyarrow.Table", con.sql("""
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
            ORDER BY r.attempt_id, r.dimension""", params={"t": tenant, "fp": fingerprint}).to_arrow_table())


def fingerprints(store: StateStore, tenant: str) -> list[str]:
    """The evaluator fingerprints with judgment attempts for this tenant."""
    with store.transaction() as con:
        return [r[0] for r in con.execute(
            "SELECT DISTINCT fingerprint FROM judgment_attempts WHERE tenant_id = ? ORDER BY 1", [tenant]).fetchall()]


_RUN_TIMES = """SELECT as_of FROM drift_runs WHERE tenant_id = $t AND fingerprint = $fp AND as_of >= $since
                UNION SELECT min(as_of) FROM drift_runs WHERE tenant_id = $t AND fingerprint = $fp ORDER BY 1"""


def _run_times(con, tenant: str, fingerprint: str, since: datetime) -> list[datetime]:
    return [r[0] for r in con.execute(_RUN_TIMES, {"t": tenant, "fp": fingerprint, "since": since}).fetchall()
            if r[0] is not None]


def run_times(store: StateStore, tenant: str, fingerprint: str, since: datetime) -> list[datetime]:
    """The `as_of` of the fingerprint's runs since `since`, and of its first run (what a plan reads)."""
    with store.transaction() as con:
        return _run_times(con, tenant, fingerprint, since)


def runs_at(store: StateStore, tenant: str, fingerprint: str, at: datetime) -> list[str]:
    """The ids of the fingerprint's runs as of `at`, in commit order."""
    with store.transaction() as con:
        return [r[0] for r in con.execute("SELECT run_id FROM drift_runs WHERE tenant_id = ? AND fingerprint = ? "
                                          "AND as_of = ? ORDER BY completed_at", [tenant, fingerprint, at]).fetchall()]


def commit_run(store: StateStore, run: RunRecord, signals: list[Signal], cells: list[RunCell],
               completed_at: datetime, planned_on: tuple[datetime, list[datetime]]) -> bool:
    """Store the run, its cells, its signals and one pending delivery per new signal id, in one transaction;
    False (nothing stored) when the fingerprint's runs since `planned_on[0]` are no longer `planned_on[1]`."""
    with store.transaction() as con:
        if _run_times(con, run.tenant_id, run.fingerprint, planned_on[0]) != planned_on[1]:
            return False  # compare-and-swap: another process took a run meanwhile, the plan is stale
        con.execute("INSERT INTO drift_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [run.tenant_id, run.run_id, run.fingerprint, run.as_of, run.current_start, run.baseline_start,
                     run.baseline_end, run.alpha, run.effect_gate, run.min_usable, run.judgments, run.cells,
                     run.tested, len(signals), run.run_id, completed_at, run.small_cell_start])
        insert_rows(con, "drift_signals", _SIGNAL_COLUMNS,
                    [(run.tenant_id, run.run_id, s.signal_id, s.fingerprint, s.cluster, s.dimension, s.kind,
                      s.baseline_level, s.current_level, s.baseline_n, s.current_n, s.delta, s.delta_low,
                      s.delta_high, s.p_value, s.adjusted_p, s.mde, s.small_cell, json.dumps(list(s.examples)))
                     for s in signals])
        insert_rows(con, "drift_cells", ("tenant_id", "run_id", "fingerprint", *_CELL_COLUMNS),
                    [(run.tenant_id, run.run_id, run.fingerprint, *(getattr(c, f) for f in _CELL_COLUMNS))
                     for c in cells])
        # One delivery per signal id, however many runs raise it (INSERT OR IGNORE).
        insert_rows(con, "alert_deliveries", _ALERT_COLUMNS,
                    [(run.tenant_id, s.signal_id, run.run_id, "pending", 0, None, completed_at, None)
                     for s in signals])
    return True


@dataclass(frozen=True)
class DueAlert:
    """A pending delivery whose next attempt is due, with its signal and the run that raised it."""

    signal_id: str
    run_id: str
    attempts: int
    fingerprint: str
    cluster: str
    dimension: str
    kind: str
    baseline_level: float | None
    current_level: float | None
    baseline_n: int
    current_n: int
    delta: float | None
    adjusted_p: float | None
    examples: str | None  # JSON
    as_of: datetime  # naive UTC
    current_start: datetime  # naive UTC; a small cell's signal: the start of the small-cell window it was tested over
    alpha: float


def due_alerts(store: StateStore, tenant: str, now: datetime) -> list[DueAlert]:
    """The tenant's pending deliveries due at `now` (naive UTC), oldest due first."""
    with store.transaction() as con:
        rows = con.execute("""
            SELECT d.signal_id, d.run_id, d.attempts, s.fingerprint, s.cluster, s.dimension, s.kind,
                   s.baseline_level, s.current_level, s.baseline_n, s.current_n, s.delta, s.adjusted_p, s.examples,
                   r.as_of, CASE WHEN s.small_cell THEN r.small_cell_start ELSE r.current_start END, r.alpha
            FROM alert_deliveries d
            JOIN drift_signals s ON s.tenant_id = d.tenant_id AND s.run_id = d.run_id AND s.signal_id = d.signal_id
            JOIN drift_runs r ON r.tenant_id = d.tenant_id AND r.run_id = d.run_id
            WHERE d.tenant_id = ? AND d.status = 'pending' AND d.next_attempt_at <= ?
            ORDER BY d.next_attempt_at, d.signal_id""", [tenant, now]).fetchall()
    return [DueAlert(*row) for row in rows]


def record_delivery(store: StateStore, tenant: str, signal_id: str, status: str, attempts: int,
                    error: str | None, next_attempt_at: datetime | None) -> None:
    """A delivery attempt's outcome: `delivered` (stamped now), `failed`, or `pending` until `next_attempt_at`."""
    with store.transaction() as con:
        con.execute("UPDATE alert_deliveries SET status = ?, attempts = ?, last_error = ?, next_attempt_at = ?, "
                    "delivered_at = CASE WHEN ? = 'delivered' THEN now()::TIMESTAMP END "
                    "WHERE tenant_id = ? AND signal_id = ?",
                    [status, attempts, error, next_attempt_at, status, tenant, signal_id])


def attempted_alerts(store: StateStore, tenant: str) -> int:
    """How many of the tenant's alerts have been tried at least once (delivered or not)."""
    with store.transaction() as con:
        return cast(int, con.execute("SELECT count(*) FROM alert_deliveries WHERE tenant_id = ? AND attempts > 0",
                                     [tenant]).fetchall()[0][0])


def stored_run(store: StateStore, tenant: str, run_id: str) -> DriftRunReport | None:
    with store.transaction() as con:
        run = con.execute("SELECT fingerprint, as_of, alpha, judgments, cells, tested, min_usable FROM drift_runs "
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
    return stored_run(store, tenant, row[0]) if row else None


# The tenant's snapshot (store/views.py: `add_state_views`, the tables `verdict sql` shows) as the report reads it.

# True for a closing decision, the one run whose as_of lies on its period grid (its current window is exactly
# one period); every other run is an early look.
IS_CLOSING = "epoch_us(as_of) % (epoch_us(as_of) - epoch_us(current_start)) = 0"
RUN_COLUMNS = ("run_id, as_of, baseline_start, baseline_end, current_start, alpha, effect_gate, min_usable, "
               f"judgments, cells, tested, signals, {IS_CLOSING} AS closing, small_cell_start")  # a DriftWindows
SIGNAL_COLUMNS = _SIGNAL_COLUMNS[2:]  # a Signal, examples as JSON
# Over `{runs}`: the snapshot's `drift_runs` (one tenant's), or the state file's rows of one tenant (prune_cells).
_LATEST_RUNS_OF = f"""
    SELECT fingerprint, {RUN_COLUMNS}
    FROM {{runs}} QUALIFY row_number() OVER (PARTITION BY fingerprint, closing ORDER BY as_of DESC, completed_at DESC) = 1"""
_LATEST_RUNS = _LATEST_RUNS_OF.format(runs="drift_runs")


def latest_runs_in(snapshot) -> list[tuple[str, DriftWindows]]:
    """Per fingerprint of the snapshot: its latest closing decision and its latest early look (if any)."""
    return [(fp, DriftWindows(*row)) for fp, *row in snapshot.execute(_LATEST_RUNS).fetchall()]


_LATEST_WEEKLY_OF = f"""
    SELECT fingerprint, {RUN_COLUMNS} FROM {{runs}} WHERE small_cell_start IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY fingerprint ORDER BY as_of DESC, completed_at DESC) = 1"""
_LATEST_WEEKLY = _LATEST_WEEKLY_OF.format(runs="drift_runs")

# The runs whose cells a report (and the UI, through it) reads (views.add_report_tables): per fingerprint its
# latest closing decision, latest early look and latest weekly decision. prune_cells keeps them whatever their age.
_LATEST_RUN_IDS_OF = "SELECT run_id FROM ({latest}) UNION SELECT run_id FROM ({weekly})"
LATEST_RUN_IDS = _LATEST_RUN_IDS_OF.format(latest=_LATEST_RUNS, weekly=_LATEST_WEEKLY)
_TENANT_RUNS = "(SELECT * FROM drift_runs WHERE tenant_id = $t) AS drift_runs"


def prune_cells(store: StateStore, tenant: str, before: datetime) -> int:
    """Delete the tenant's `drift_cells` rows of runs as of before `before` (naive UTC), except those of the runs a
    report reads (LATEST_RUN_IDS), in one transaction; the number of rows deleted."""
    kept = _LATEST_RUN_IDS_OF.format(latest=_LATEST_RUNS_OF.format(runs=_TENANT_RUNS),
                                     weekly=_LATEST_WEEKLY_OF.format(runs=_TENANT_RUNS))
    with store.transaction() as con:
        (deleted,) = con.execute(f"""
            DELETE FROM drift_cells WHERE tenant_id = $t
              AND run_id IN (SELECT run_id FROM drift_runs WHERE tenant_id = $t AND as_of < $before)
              AND run_id NOT IN ({kept})""", {"t": tenant, "before": before}).fetchone()
    return cast(int, deleted)


def latest_weekly_in(snapshot) -> dict[str, DriftWindows]:
    """Per fingerprint of the snapshot: its latest run that tested small cells over the small-cell window."""
    return {fp: DriftWindows(*row) for fp, *row in snapshot.execute(_LATEST_WEEKLY).fetchall()}


def evaluator_names_in(snapshot) -> dict[str, str]:
    """The evaluator name of every fingerprint with judgments or drift runs in the snapshot (else its prefix)."""
    return dict(snapshot.execute("""
        SELECT fingerprint, coalesce(any_value(evaluator), fingerprint[:12]) FROM judgments GROUP BY fingerprint
        UNION ALL SELECT fingerprint, coalesce(any_value(evaluator), fingerprint[:12]) FROM drift_runs
        WHERE fingerprint NOT IN (SELECT fingerprint FROM judgments) GROUP BY fingerprint""").fetchall())


def cells_in(snapshot, run_id: str) -> dict[tuple[str, str], RunCell]:
    """A run's cells in the snapshot's `run_cells` (views.REPORT_TABLES), by (cluster, dimension); empty for a
    run stored before cells were."""
    rows = snapshot.execute(f"SELECT {', '.join(_CELL_COLUMNS)} FROM run_cells WHERE run_id = ?", [run_id]).fetchall()
    return {(row[0], row[1]): RunCell(*row) for row in rows}


def signals_in(snapshot, run_id: str, fingerprint: str) -> tuple[Signal, ...]:
    """A run's signals in the snapshot, by kind, then adjusted p."""
    rows = snapshot.execute(f"""
        SELECT {", ".join(SIGNAL_COLUMNS)} FROM drift_signals WHERE run_id = ? AND fingerprint = ?
        ORDER BY kind, adjusted_p NULLS LAST, cluster, dimension""", [run_id, fingerprint]).fetchall()
    return tuple(Signal(*row[:-1], tuple(json.loads(row[-1]))) for row in rows)  # type: ignore[call-arg]  # the columns in field order
