"""Drift over other evaluators' results: `[[imported_evaluations]]` series read from the lake's `evaluations` view.

A team's offline suite, human labelling tool or other judge sends `gen_ai.evaluation.result` log records to the
collector (docs/evaluations.md, "In"); a series names the records to track (`evaluator`, optionally one
`evaluator_version`, the evaluation names) and the drift step treats it as one more evaluator: its records become
the DriftDetector's rows (one dimension per evaluation name), its runs, signals, cells and alert deliveries are
stored under its fingerprint exactly as a judge's are (service/drift_runs.run_drift), so the report and the alerts
show it, with the tenant's alpha shared among judges and series alike.

The rows (one per evaluated trace and evaluation name, the latest record wins) land in the cells of the judgments of
the same traces: the trace's start and cluster are read as the sampler reads them for a judged trace. Its start is
that of its first eligible model call (the analysis index's `trace_rows`: neither judge workload nor failed; the
earliest span's without one). Its cluster, as the assign step gives a judged trace: with `--registry-mode off`, its
intent key by the intent rule (service/intent_rule.py: a call's own key, else its nearest keyed ancestor's, a
refused key carried; the trace's last keyed call's), `unassigned` without one; with `active`, the cluster the pinned
registry version gives it (clustering/active.version_clusters indexes and assigns it like a sampled trace;
`unassigned` when the version cannot). A record whose trace is not in the lake within a drift run's reach
(`Drift.reach`), or that names no trace, is left out. Values per `scale`: `label` reads the documented vocabulary (`pass`, `fail`,
`unclear`, `error`, any case; a record without a label but with a 1.0 / 0.0 score is PASS / FAIL, as Verdict's
own records carry both), anything else is ERROR (unusable: out of the pass rate, in coverage); `score` reads
`score.value` (none: ERROR).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from collector.lake_union import LakeUnion
from verdict.tenancy import TenantId
from verdict_daemon.clustering.analysis_index import trace_rows
from verdict_daemon.clustering.versions import UNASSIGNED
from verdict_daemon.config import Drift, ImportedEvaluation
from verdict_daemon.errors import DaemonError

if TYPE_CHECKING:
    import pyarrow

KIND = "imported"
LABELS = {"pass": "PASS", "fail": "FAIL", "unclear": "UNCLEAR", "error": "ERROR"}  # docs/evaluations.md


@dataclass(frozen=True)
class ImportedSeries:
    """One `[[imported_evaluations]]` entry as the drift step runs it (name, fingerprint, definition: what the
    `evaluators` table registers, so the report and alerts name it)."""

    config: ImportedEvaluation

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def definition(self) -> Mapping[str, Any]:
        c = self.config
        return {"kind": KIND, "evaluator": c.evaluator, "evaluator_version": c.evaluator_version,
                "evaluations": sorted(c.evaluations), "scale": c.scale}

    @property
    def fingerprint(self) -> str:
        """Which records and how they are read: another version or scale is another series, never pooled. The
        entry's `name` is not part of it (renaming keeps the history)."""
        from verdict.judges.fingerprint import combined_fingerprint

        return combined_fingerprint(KIND, [], self.definition)


# The series' records, the latest per (trace, evaluation name), from every date partition: a record's partition is
# its own time, which can be days after the trace it evaluates (an offline suite run the next week).
_CHOSEN = """
CREATE OR REPLACE TEMP TABLE chosen AS
SELECT trace_id, evaluation_id, name, score_value, score_label
FROM evaluations
WHERE evaluator_name = $evaluator AND ($version IS NULL OR evaluator_version = $version)
  AND list_contains($names, name) AND trace_id IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY trace_id, name ORDER BY time DESC, evaluation_id DESC) = 1
"""
# Their traces' start (an eligible call's, by `trace_rows` in TEMP TABLE todo; else the earliest span's) and key.
_ROWS = """
WITH traces AS (SELECT trace_id, min(start_time) AS started_at FROM spans SEMI JOIN chosen USING (trace_id)
                GROUP BY trace_id)
SELECT coalesce(k.started_at, t.started_at::TIMESTAMP) AS started_at, c.trace_id, k.intent_key,
       c.name AS dimension, c.score_label, c.score_value, c.evaluation_id AS attempt_id
FROM chosen c JOIN traces t USING (trace_id) LEFT JOIN todo k USING (trace_id)
ORDER BY attempt_id, dimension
"""
# What gives a trace its cluster under an active registry version: (trace_id, started_at) -> cluster per trace.
VersionClusters = Callable[[list[tuple[str, datetime]]], Mapping[str, str]]


def value_of(scale: str, label: str | None, score: float | None) -> tuple[str | None, float | None]:
    """(value, score) of one record as a drift row: a verdict for `label`, a score (value None) for `score`."""
    if scale == "score":
        return (None, score) if score is not None else ("ERROR", None)
    if label is not None:
        return LABELS.get(label.strip().lower(), "ERROR"), None
    return {1.0: "PASS", 0.0: "FAIL"}.get(score, "ERROR") if score is not None else "ERROR", None


def imported_table(lake: LakeUnion, tenant: TenantId, series: ImportedSeries, drift: Drift,
                   as_of: datetime, version_clusters: VersionClusters | None = None) -> pyarrow.Table:
    """The series' records as the DriftDetector's input (run_drift's `table`): the columns of
    store.drift_runs.judgment_table, the record's `evaluation_id` as `attempt_id`. Reads the date partitions a
    drift run at `as_of` can look at (`Drift.reach`). A trace's cluster is its intent key, or with
    `version_clusters` (`--registry-mode active`) the pinned version's cluster."""
    import duckdb
    import pyarrow

    from collector.lake_reads import LakeChanged, read_fresh
    from collector.views import view_statements

    c = series.config

    def read(snapshot: LakeUnion) -> list[tuple]:
        con = snapshot.connect({"threads": 2})
        try:
            for statement in view_statements(snapshot, tenant):
                con.execute(statement)
            con.execute(_CHOSEN, {"evaluator": c.evaluator, "version": c.evaluator_version,
                                  "names": list(c.evaluations)})
            for statement in view_statements(snapshot, tenant, _days(as_of - drift.reach - timedelta(days=1), as_of)):
                con.execute(statement)
            trace_rows(con, "SEMI JOIN chosen USING (trace_id)")
            rows: list[tuple] = con.execute(_ROWS).fetchall()
            return rows
        finally:
            con.close()

    try:  # a segment purged after the listing is read again from a fresh one
        kept = read_fresh(lake, read)
    except LakeChanged as exc:
        raise DaemonError("storage_error", f"lake of tenant {tenant}: {exc}") from None
    except duckdb.Error as exc:
        raise DaemonError("storage_error", f"lake of tenant {tenant}: {str(exc).splitlines()[0][:300]}") from None
    if version_clusters is not None:
        clusters = version_clusters(sorted({(r[1], r[0]) for r in kept}))
        kept = [(r[0], r[1], clusters.get(r[1]), *r[3:]) for r in kept]
    values = [value_of(c.scale, label, score) for *_, label, score, _ in kept]
    return pyarrow.table({
        "started_at": pyarrow.array([r[0] for r in kept], pyarrow.timestamp("us")),
        "trace_id": pyarrow.array([r[1] for r in kept], pyarrow.string()),
        "cluster": pyarrow.array([r[2] or UNASSIGNED for r in kept], pyarrow.string()),
        "dimension": pyarrow.array([r[3] for r in kept], pyarrow.string()),
        "value": pyarrow.array([v for v, _ in values], pyarrow.string()),
        "fingerprint": pyarrow.array([series.fingerprint] * len(kept), pyarrow.string()),
        "score": pyarrow.array([s for _, s in values], pyarrow.float64()),
        "attempt_id": pyarrow.array([r[6] for r in kept], pyarrow.string())})


def _days(start: datetime, end: datetime) -> list[date]:
    return [start.date() + timedelta(days=i) for i in range((end.date() - start.date()).days + 1)]


def register_series(store, tenant: TenantId, series: ImportedSeries) -> None:
    """The series in the `evaluators` table under its fingerprint (the report and alerts name it from there)."""
    from verdict_daemon.store import judgments

    judgments.register_evaluator(store, tenant, series.fingerprint, series.name,
                                 json.dumps(series.definition, sort_keys=True))
