"""A drift signal's drill-down: the stored signal and its run, the cell's daily pass rate (the report's
series, verdict_daemon.report.gather.daily_series), its stored examples and more traces of the current
window with the verdict the signal is about."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from verdict_daemon.report.gather import UNASSIGNED, daily_series, mde
from verdict_daemon.report.model import RateSeries
from verdict_daemon.store.drift_runs import RUN_COLUMNS, SIGNAL_COLUMNS, DriftWindows, Signal

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
                        tuple(CellTrace(*w) for w in window))
