"""A drift signal's drill-down: the stored signal and its run, the cell's daily pass rate (the report's
series, verdict_daemon.report.gather.daily_series), its stored examples and more traces of the current
window with the verdict the signal is about."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from verdict_daemon.report.gather import UNASSIGNED, daily_series, mde
from verdict_daemon.report.model import AlarmPeriod, RateSeries
from verdict_daemon.store.drift_runs import (
    IS_CLOSING,
    RUN_COLUMNS,
    SIGNAL_COLUMNS,
    DriftWindows,
    Signal,
)

MORE_EXAMPLES = 25


@dataclass(frozen=True)
class CellTrace:
    trace_id: str
    started_at: datetime
    value: str | None
    reason: str | None


@dataclass(frozen=True)
class SignalDetail:
    signal: Signal
    evaluator: str | None
    run: DriftWindows
    tested: DriftWindows  # the windows the signal's cell was tested over: a small cell's are the weekly ones
    mde: float | None
    series: RateSeries | None  # None for a score dimension (no pass rate)
    examples: tuple[CellTrace, ...]  # the signal's stored examples, in their order
    window: tuple[CellTrace, ...]  # more traces of the current window with the values the signal counts
    alarms: tuple[AlarmPeriod, ...]  # every run that raised this cell and kind, oldest first


def signal_detail(cur, signal_id: str) -> SignalDetail | None:
    row = cur.execute(f"SELECT {', '.join(SIGNAL_COLUMNS)}, evaluator, run_id FROM drift_signals "
                      "WHERE signal_id = $s ORDER BY as_of DESC LIMIT 1", {"s": signal_id}).fetchone()
    if row is None:
        return None
    *fields, ids, evaluator, run_id = row
    signal = Signal(*fields, tuple(json.loads(ids or "[]")))  # type: ignore[call-arg]  # the columns in field order
    run = DriftWindows(*cur.execute(f"SELECT {RUN_COLUMNS} FROM drift_runs WHERE run_id = $r",
                                    {"r": run_id}).fetchone())
    scored = cur.execute("""SELECT count(score) > 0 AND count(*) FILTER (WHERE value IN ('PASS', 'FAIL', 'UNCLEAR')) = 0
                            FROM judgments WHERE fingerprint = $fp AND dimension = $d""",
                         {"fp": signal.fingerprint, "d": signal.dimension}).fetchone()[0]
    series = next((s for s in daily_series(cur).get(signal.fingerprint, ())
                   if s.cluster == signal.cluster and s.dimension == signal.dimension), None)
    cell = ("coalesce(cluster, $unassigned) = $c AND fingerprint = $fp "
            "AND (dimension = $d OR dimension IS NULL)")
    args = {"unassigned": UNASSIGNED, "c": signal.cluster, "fp": signal.fingerprint, "d": signal.dimension}
    examples = cur.execute(f"""
        SELECT x.trace_id, j.started_at, j.value, j.reason
        FROM (SELECT unnest($ids::VARCHAR[]) AS trace_id, generate_subscripts($ids::VARCHAR[], 1) AS pos) x
        JOIN judgments j ON j.trace_id = x.trace_id AND {cell} ORDER BY x.pos""",
                           {**args, "ids": list(signal.examples)}).fetchall()
    counted = ("'UNCLEAR', 'ERROR'" if signal.kind == "coverage_drop" else
               "'PASS'" if signal.kind == "improvement" else "'FAIL'")
    # A small cell's signal was tested over the weekly decision's small-cell windows, not the run's period.
    tested = run.small_cell_windows() if signal.small_cell and run.small_cell_start else run
    window = cur.execute(f"""
        SELECT trace_id, started_at, value, reason FROM judgments
        WHERE {cell} AND started_at >= $lo AND started_at < $hi AND value IN ({counted})
          AND NOT list_contains($ids::VARCHAR[], trace_id)
        ORDER BY started_at DESC, trace_id LIMIT {MORE_EXAMPLES}""",
                         {**args, "lo": tested.current_start, "hi": run.as_of, "ids": list(signal.examples)}).fetchall()
    return SignalDetail(signal, evaluator, run, tested, mde(signal, run, (signal.dimension,) if scored else ()),
                        None if scored else series, tuple(CellTrace(*e) for e in examples),
                        tuple(CellTrace(*w) for w in window), _alarms(cur, signal))


def _alarms(cur, signal: Signal) -> tuple[AlarmPeriod, ...]:
    """The windows each run that raised the signal's cell (and kind) tested it over: a small cell's, the week."""
    return tuple(AlarmPeriod(*row) for row in cur.execute(f"""
        SELECT DISTINCT CASE WHEN s.small_cell AND r.small_cell_start IS NOT NULL THEN r.small_cell_start
                             ELSE r.current_start END, r.as_of, r.closing
        FROM drift_signals s
        JOIN (SELECT run_id, as_of, current_start, small_cell_start, {IS_CLOSING} AS closing FROM drift_runs) r
          USING (run_id)
        WHERE s.fingerprint = $fp AND s.cluster = $c AND s.dimension = $d AND s.kind = $k ORDER BY 2, 1""",
        {"fp": signal.fingerprint, "c": signal.cluster, "d": signal.dimension, "k": signal.kind}).fetchall())


def signal_examples(cur, signal_id: str) -> tuple[str, ...] | None:
    """The trace ids stored as the signal's examples (its latest row); None for an unknown signal."""
    row = cur.execute("SELECT examples FROM drift_signals WHERE signal_id = $s ORDER BY as_of DESC LIMIT 1",
                      {"s": signal_id}).fetchone()
    return None if row is None else tuple(json.loads(row[0] or "[]"))


# --- every signal, by cell ----------------------------------------------------------------------------
OPEN, EARLY, CLEARED = "open", "early look only", "no longer raised"


@dataclass(frozen=True)
class CellHistory:
    """A cell's signals of one kind over every stored run: when first and last raised, by how many runs, and
    its status against its evaluator's latest closing decision: `open` (that decision raised it), `early
    look only` (raised only by runs after it), `no longer raised` (that decision, later, did not: the cell
    recovered or its level became the baseline; there is no manual accept)."""

    fingerprint: str
    evaluator: str | None
    cluster: str
    dimension: str
    kind: str
    first_raised: datetime
    last_raised: datetime
    runs: int
    latest_signal: str
    status: str


_HISTORY = f"""
    WITH closing AS (SELECT fingerprint, max(as_of) AS as_of FROM drift_runs WHERE {IS_CLOSING} GROUP BY fingerprint)
    SELECT s.fingerprint, any_value(s.evaluator), s.cluster, s.dimension, s.kind, min(s.as_of), max(s.as_of),
           count(DISTINCT s.run_id), arg_max(s.signal_id, s.as_of),
           CASE WHEN bool_or(s.as_of = c.as_of) THEN '{OPEN}'
                WHEN max(s.as_of) > coalesce(any_value(c.as_of), TIMESTAMP '1970-01-01') THEN '{EARLY}'
                ELSE '{CLEARED}' END AS status
    FROM drift_signals s LEFT JOIN closing c USING (fingerprint)
    GROUP BY s.fingerprint, s.cluster, s.dimension, s.kind
    ORDER BY status = '{OPEN}' DESC, max(s.as_of) DESC, s.cluster, s.dimension, s.kind"""


def signal_history(cur) -> tuple[CellHistory, ...]:
    return tuple(CellHistory(*row) for row in cur.execute(_HISTORY).fetchall())


# --- what links to one trace --------------------------------------------------------------------------
@dataclass(frozen=True)
class TraceSignal:
    signal_id: str
    kind: str
    cluster: str
    dimension: str
    as_of: datetime
    example: bool  # stored with the signal as one of its examples


def trace_signals(cur, trace_id: str) -> tuple[TraceSignal, ...]:
    """Signals that store the trace as an example, or whose cell and tested window hold one of its judgments."""
    example = "list_contains(from_json(s.examples, '[\"VARCHAR\"]'), $t)"
    return tuple(TraceSignal(*row) for row in cur.execute(f"""
        SELECT s.signal_id, s.kind, s.cluster, s.dimension, s.as_of, {example}
        FROM drift_signals s JOIN drift_runs r USING (run_id)
        WHERE {example} OR EXISTS (
            SELECT 1 FROM judgments j WHERE j.trace_id = $t AND j.fingerprint = s.fingerprint
              AND coalesce(j.cluster, $unassigned) = s.cluster AND (j.dimension = s.dimension OR j.dimension IS NULL)
              AND j.started_at >= CASE WHEN s.small_cell AND r.small_cell_start IS NOT NULL THEN r.small_cell_start
                                       ELSE r.current_start END AND j.started_at < r.as_of)
        QUALIFY row_number() OVER (PARTITION BY s.signal_id ORDER BY s.as_of DESC) = 1
        ORDER BY s.as_of DESC, s.signal_id LIMIT 20""", {"t": trace_id, "unassigned": UNASSIGNED}).fetchall())
