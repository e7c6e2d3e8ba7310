"""Read one tenant's monitoring state into a ReportData, aggregating in DuckDB SQL.

The tenant's `judgments`, `drift_runs` and `drift_signals` come from `add_state_views` (the same
tables `verdict sql` shows, so report figures match what an analyst queries). The few other things
a report needs (sampled traces per cluster, judge spend, sentinel checks, the content of signal
example traces) are read in a second read-only attach as small aggregates (`views.REPORT_TABLES`); the
SQL naming state tables lives in the store (verdict_daemon/store/). Rows never reach Python
except the handful of example traces; everything else arrives aggregated per cluster × dimension × day.
"""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

from collector.lake_union import LakeUnion
from verdict.cli_runner import checked_tenant
from verdict.drift.model import window_to_reach
from verdict_daemon.config import Drift
from verdict_daemon.errors import DaemonError
from verdict_daemon.report.model import (
    CoverageRow,
    DriftWindows,
    EvaluatorSection,
    ExampleTrace,
    HeatCell,
    Panel,
    RatePoint,
    RateSeries,
    ReportData,
    ReviewList,
    ReviewQueue,
    SentinelRow,
    SignalRow,
    SpendDay,
    SpendRow,
)
from verdict_daemon.store import views
from verdict_daemon.store.drift_runs import (
    RunCell,
    Signal,
    cells_in,
    evaluator_names_in,
    latest_runs_in,
    latest_weekly_in,
    signals_in,
)
from verdict_daemon.store.state import STATE_FILE
from verdict_daemon.tenant_data import require_data

UNASSIGNED = "(not assigned yet)"  # judged before the assign step gave the trace a cluster

# Binary verdict rows only (scores have no pass rate); UNCLEAR/ERROR are excluded from the denominator.
_DAILY = f"""
    SELECT fingerprint, coalesce(cluster, '{UNASSIGNED}') AS cluster, dimension, started_at::DATE AS day,
           count(*) FILTER (WHERE value = 'PASS') AS passed, count(*) FILTER (WHERE value IN ('PASS', 'FAIL')) AS usable
    FROM judgments WHERE value IN ('PASS', 'FAIL')
    GROUP BY ALL ORDER BY fingerprint, cluster, dimension, day"""

_HEAT = f"""
    SELECT coalesce(cluster, '{UNASSIGNED}') AS cluster, dimension,
           count(*) FILTER (WHERE value = 'PASS' AND started_at >= $lo AND started_at < $hi) AS passed,
           count(*) FILTER (WHERE value IN ('PASS', 'FAIL') AND started_at >= $lo AND started_at < $hi) AS usable,
           count(*) FILTER (WHERE value = 'PASS' AND started_at >= $small AND started_at < $hi) AS small_passed,
           count(*) FILTER (WHERE value IN ('PASS', 'FAIL') AND started_at >= $small AND started_at < $hi) AS small_usable
    FROM judgments WHERE fingerprint = $fp AND value IN ('PASS', 'FAIL', 'UNCLEAR')
    GROUP BY ALL ORDER BY cluster, dimension"""

_COVERAGE = f"""
    WITH per AS (
        SELECT coalesce(cluster, '{UNASSIGNED}') AS cluster, count(DISTINCT trace_id) AS judged,
               count(DISTINCT trace_id) FILTER (WHERE status = 'ERROR') AS error_traces,
               count(*) FILTER (WHERE dimension IS NOT NULL) AS verdicts,
               count(*) FILTER (WHERE value = 'UNCLEAR') AS unclear,
               count(*) FILTER (WHERE value IN ('PASS', 'FAIL') OR (dimension IS NOT NULL AND score IS NOT NULL)) AS usable,
               count(DISTINCT trace_id) FILTER (WHERE status = 'NO_CONTENT') AS no_content
        FROM judgments WHERE fingerprint = $fp GROUP BY ALL)
    SELECT coalesce(s.cluster, per.cluster) AS cluster, coalesce(s.sampled, 0), coalesce(per.judged, 0),
           coalesce(per.error_traces, 0), coalesce(per.verdicts, 0), coalesce(per.unclear, 0), coalesce(per.usable, 0),
           coalesce(per.no_content, 0)
    FROM (SELECT coalesce(cluster, '{UNASSIGNED}') AS cluster, sampled FROM sampled_per_cluster
          WHERE unit = (SELECT coalesce(any_value(unit), 'turn') FROM judgments WHERE fingerprint = $fp)) s
    FULL JOIN per USING (cluster) ORDER BY 1"""

_EXAMPLES = """
    SELECT x.trace_id, x.started_at, x.query, x.response, j.value, j.reason, j.error_code
    FROM (SELECT unnest($ids::VARCHAR[]) AS trace_id, generate_subscripts($ids::VARCHAR[], 1) AS pos) ids
    JOIN example_content x USING (trace_id)
    LEFT JOIN judgments j ON j.trace_id = x.trace_id AND j.fingerprint = $fp
         AND (j.dimension = $dim OR j.dimension IS NULL)
    ORDER BY ids.pos"""


def checked_data_dir(data_dir: Path | str | None) -> Path:
    if data_dir is None:
        raise DaemonError("invalid_config", "give --data-dir (the directory `verdict collector` and the daemon use)")
    path = Path(data_dir)
    if not path.is_dir():
        raise DaemonError("invalid_config", f"--data-dir: {path} is not an existing directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise DaemonError("storage_error", f"--data-dir: {path} is not readable (permission denied)")
    return path.resolve()


def gather(data_dir: Path | str, tenant: str, *, probes: Panel, review: ReviewQueue, lock_timeout: float = 10.0,
           generated_at: datetime | None = None, lake: LakeUnion | None = None) -> ReportData:
    """The tenant's ReportData; `unknown_tenant` naming the tenants with data when neither its lakes (`lake`,
    default the data dir's own) hold spans of it nor the data dir's state knows it (verdict_daemon.tenant_data)."""
    import duckdb

    tenant = checked_tenant(tenant)
    root = checked_data_dir(data_dir)
    at = generated_at or datetime.now(UTC)
    require_data(tenant, root, LakeUnion.of(root if lake is None else lake), lock_timeout)
    state = root / STATE_FILE
    if not state.exists():
        return ReportData(tenant, at, 0, (), (), (), (), probes, review)
    con = duckdb.connect()
    try:
        views.add_state_views(con, root, tenant, lock_timeout=lock_timeout)
        views.add_report_tables(con, state, tenant, lock_timeout)
        sampled = con.execute("SELECT coalesce(sum(sampled), 0) FROM sampled_per_cluster WHERE unit = 'turn'").fetchone()[0]  # type: ignore[index]  # an aggregate: one row
        return ReportData(tenant, at, int(sampled), _sections(con), _sentinel(con), _spend(con), _spend_days(con),
                          probes, _with_clusters(con, review))
    except duckdb.Error as exc:
        raise DaemonError("storage_error", f"{state}: {str(exc).splitlines()[0][:300]}") from None
    finally:
        con.close()


def _latest_runs(con) -> dict[str, tuple[DriftWindows, DriftWindows | None]]:
    """Per fingerprint: the run to headline (its latest closing decision, else its latest early look) and the
    latest early look taken after it, if any."""
    closing: dict[str, DriftWindows] = {}
    looks: dict[str, DriftWindows] = {}
    for fp, run in latest_runs_in(con):
        (closing if run.closing else looks)[fp] = run
    out: dict[str, tuple[DriftWindows, DriftWindows | None]] = {}
    for fp in closing.keys() | looks.keys():
        headline, look = closing.get(fp), looks.get(fp)
        if headline is None:
            out[fp] = (looks[fp], None)  # no closing decision: it has a look
        else:
            out[fp] = (headline, look if look is not None and look.as_of > headline.as_of else None)
    return out


def _sections(con) -> tuple[EvaluatorSection, ...]:
    runs = _latest_runs(con)
    weekly = latest_weekly_in(con)
    names = evaluator_names_in(con)
    series = daily_series(con)
    scored = _score_dimensions(con)
    out = []
    for fp, name in sorted(names.items(), key=lambda kv: (kv[1], kv[0])):
        run, look = runs.get(fp, (None, None))
        signals = _signals(con, fp, run, scored.get(fp, ())) if run else ()
        period, cells = _heatmap(con, fp, run, signals)
        week = weekly.get(fp)
        week = week if week is not None and run is not None and week.run_id != run.run_id else None
        out.append(EvaluatorSection(name, fp, run, series.get(fp, ()), cells, period, signals,
                                    _coverage(con, fp), scored.get(fp, ()), look,
                                    _signals(con, fp, look, scored.get(fp, ())) if look else (), week,
                                    _signals(con, fp, week, scored.get(fp, ())) if week else ()))
    return tuple(out)


def _with_clusters(con, review: ReviewQueue) -> ReviewQueue:
    """The review items' clusters, from the tenant's `judgments` (the review API does not carry them)."""
    traces = [i.summary.trace_id for i in (*review.pending.items, *review.labelled.items)]
    if not traces:
        return review
    clusters = dict(con.execute(f"SELECT DISTINCT trace_id, coalesce(cluster, '{UNASSIGNED}') FROM judgments "
                                "WHERE trace_id IN (SELECT unnest($ids::VARCHAR[]))", {"ids": traces}).fetchall())

    def placed(items: ReviewList) -> ReviewList:
        return ReviewList(items.total, tuple(dataclasses.replace(i, cluster=clusters.get(i.summary.trace_id, UNASSIGNED))
                                             for i in items.items))

    return dataclasses.replace(review, pending=placed(review.pending), labelled=placed(review.labelled))


def _score_dimensions(con) -> dict[str, tuple[str, ...]]:
    rows = con.execute("""
        SELECT fingerprint, dimension FROM judgments WHERE dimension IS NOT NULL GROUP BY ALL
        HAVING count(score) > 0 AND count(*) FILTER (WHERE value IN ('PASS', 'FAIL', 'UNCLEAR')) = 0
        ORDER BY ALL""").fetchall()
    out: dict[str, tuple[str, ...]] = {}
    for fp, dimension in rows:
        out[fp] = (*out.get(fp, ()), dimension)
    return out


def daily_series(con) -> dict[str, tuple[RateSeries, ...]]:
    import numpy as np

    from verdict.stats.proportions import wilson_bounds

    table = con.execute(_DAILY).fetchnumpy()
    if not len(table["day"]):
        return {}
    passed, usable = table["passed"].astype(np.int64), table["usable"].astype(np.int64)
    low, high = wilson_bounds(passed, usable, 0.95)  # verdict.stats' Wilson, vectorised over every day
    grouped: dict[tuple[str, str, str], list[RatePoint]] = {}
    for i, key in enumerate(zip(table["fingerprint"], table["cluster"], table["dimension"], strict=True)):
        day = table["day"][i].astype("datetime64[D]").item()
        grouped.setdefault(key, []).append(RatePoint(day, int(passed[i]), int(usable[i]), float(passed[i] / usable[i]),
                                                     float(low[i]), float(high[i])))
    out: dict[str, tuple[RateSeries, ...]] = {}
    for (fp, cluster, dimension), points in grouped.items():
        out[fp] = (*out.get(fp, ()), RateSeries(cluster, dimension, tuple(points)))
    return out


def _heatmap(con, fp: str, run: DriftWindows | None, signals: tuple[SignalRow, ...]):
    """Cells over the latest run's current window, or over the last day with verdicts when no run exists."""
    if run is not None:
        lo, hi = run.current_start, run.as_of
    else:
        last = con.execute("SELECT max(started_at)::DATE FROM judgments WHERE fingerprint = ? "
                           "AND value IN ('PASS', 'FAIL')", [fp]).fetchone()[0]
        if last is None:
            return None, ()
        lo = datetime(last.year, last.month, last.day)
        hi = lo + timedelta(days=1)
    flagged = {(s.signal.cluster, s.signal.dimension): s.signal.kind for s in signals}
    small = run.small_cell_start if run is not None and run.small_cell_start else lo
    rows = con.execute(_HEAT, {"fp": fp, "lo": lo, "hi": hi, "small": small}).fetchall()
    stored = cells_in(con, run.run_id) if run is not None else {}
    cells = tuple(_heat_cell(run, (lo, hi), cluster, dimension, counts, flagged.get((cluster, dimension)),
                             stored.get((cluster, dimension))) for cluster, dimension, *counts in rows)
    return (lo, hi), cells


def _heat_cell(run: DriftWindows | None, period: tuple[datetime, datetime], cluster: str, dimension: str,
               counts: list[int], signal: str | None, tested: RunCell | None) -> HeatCell:
    """A heatmap cell with the run's record of it (`tested`: its MDE, or why it was not tested and the window that
    would test it). Under a run stored before its cells were, one below `min_usable` is marked not tested with
    the window from verdict.drift's own extrapolation (as DriftReport.window_to_test). Under a run that tested
    small cells over a longer window (the weekly decision), such a cell shows its counts over that window."""
    passed, usable, small_passed, small_usable = counts
    lo, hi = period
    small = None
    if run is not None and run.small_cell_start is not None and usable < run.min_usable:
        passed, usable, lo, small = small_passed, small_usable, run.small_cell_start, hi - run.small_cell_start
    rate = passed / usable if usable else None
    if run is None:
        return HeatCell(cluster, dimension, passed, usable, rate, signal)
    window = None
    if tested is not None and tested.window_to_test_days is not None:
        window = timedelta(days=tested.window_to_test_days)
    elif tested is None and usable < run.min_usable:
        window = window_to_reach(run.min_usable, usable, hi - lo)
    return HeatCell(cluster, dimension, passed, usable, rate, signal, run.min_usable, window, small, tested)


def _signals(con, fp: str, run: DriftWindows, score_dimensions: tuple[str, ...]) -> tuple[SignalRow, ...]:
    out = []
    for signal in signals_in(con, run.run_id, fp):
        traces = con.execute(_EXAMPLES, {"ids": list(signal.examples), "fp": fp, "dim": signal.dimension}
                             ).fetchall() if signal.examples else []
        out.append(SignalRow(signal, mde(signal, run, score_dimensions), signal.dimension in score_dimensions,
                             tuple(ExampleTrace(*x) for x in traces)))
    return tuple(out)


def mde(signal: Signal, run: DriftWindows, score_dimensions: tuple[str, ...]) -> float | None:
    """Minimum detectable effect the detector had for this signal's cell: the detector's own figure, stored
    with the signal (DriftCell.mde_adjusted: at the quality share of the run's alpha corrected for its tested
    cells and the cell's comparisons, i.e. the level a lone change must reach; a drop in pass rate for
    PASS/FAIL dimensions, |Cliff's delta| for scores); none for coverage drops (their n counts every outcome).
    A signal stored before that column has it recomputed with verdict.stats.power from the stored sizes at
    the detector's default power (0.8), assuming two comparisons per cell (recent baseline and reference) and
    the configured default coverage share; with no reference that figure is somewhat larger than the
    detector's."""
    from verdict.stats.power import minimum_detectable_delta, minimum_detectable_drop

    if signal.mde is not None:
        return signal.mde
    base_n, cur_n = signal.baseline_n, signal.current_n
    if signal.kind == "coverage_drop" or not base_n or not cur_n:
        return None
    level = run.alpha * (1 - _COVERAGE_SHARE) / (max(run.tested, 1) * 2)
    if signal.dimension in score_dimensions:
        return float(minimum_detectable_delta(base_n, cur_n, alpha=level))
    baseline = cast(float, signal.baseline_level)  # a pass-rate signal has one
    return float(minimum_detectable_drop(baseline, base_n, cur_n, alpha=level))


_COVERAGE_SHARE = Drift.model_fields["coverage_alpha_share"].default


def _coverage(con, fp: str) -> tuple[CoverageRow, ...]:
    return tuple(CoverageRow(*row) for row in con.execute(_COVERAGE, {"fp": fp}).fetchall())


def _sentinel(con) -> tuple[SentinelRow, ...]:
    rows = con.execute("SELECT * FROM sentinel ORDER BY evaluator, checked_at DESC").fetchall()
    # Only the file's name: the stored path is the daemon host's layout, not something a reader needs.
    return tuple(SentinelRow(*row[:13], Path(row[13]).name, *row[14:]) for row in rows)  # type: ignore[call-arg]  # columns in order


def _spend(con) -> tuple[SpendRow, ...]:
    return tuple(SpendRow(*row) for row in con.execute("SELECT * FROM spend ORDER BY evaluator, fingerprint").fetchall())


def _spend_days(con) -> tuple[SpendDay, ...]:
    return tuple(SpendDay(*row) for row in con.execute("SELECT * FROM spend_days ORDER BY day").fetchall())
