"""Drift runs: DriftDetector per tenant × evaluator fingerprint, persisted atomically.

The input is the latest attempt per (trace, fingerprint): its dimension verdicts, or, for a latest
ERROR, one ERROR row per dimension the fingerprint grades (so coverage analysis sees it while
PASS/FAIL rates exclude it). A run row, its exact signal set (possibly empty) and the pending alert
deliveries are committed in one transaction: a reader sees a whole run or none of it, and readers
take the latest completed run. The run id hashes the inputs, so rerunning on the same judgments with
the same `as_of` finds the same run instead of adding one.

Signal ids hash (tenant, fingerprint, cluster, dimension, kind, current-window period): the same
regression seen by every run within one period is one signal, alerted once.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from verdict.tenancy import validate_tenant_id
from verdict_daemon.config import Drift
from verdict_daemon.errors import DaemonError
from verdict_daemon.state import StateStore, insert_rows

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


def _signals(report, tenant: str, period: int) -> list[Signal]:
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


def run_drift(store: StateStore, tenant: str, fingerprint: str, config: Drift, as_of: datetime) -> DriftRunReport:
    from verdict.drift import DriftInputError

    tenant = validate_tenant_id(tenant)
    at = as_of.astimezone(UTC).replace(tzinfo=None) if as_of.tzinfo else as_of
    table = judgment_table(store, tenant, fingerprint)
    params = config.model_dump()
    # The clusters are part of the input: the same attempts under another registry version are another run.
    run_id = _digest(tenant, fingerprint, at.isoformat(), params, table.column("attempt_id").to_pylist(),
                     table.column("cluster").to_pylist())
    existing = _stored_run(store, tenant, run_id)
    if existing is not None:
        return existing
    try:
        report = config.detector().detect(table.drop_columns(["attempt_id"]), now=at.replace(tzinfo=UTC))
    except DriftInputError as exc:
        raise DaemonError("drift_input_error", f"fingerprint {fingerprint[:12]}: {exc}") from None
    period = int((at - datetime(1970, 1, 1)) / timedelta(hours=config.current_window_hours))
    signals = _signals(report, tenant, period)
    naive = {name: getattr(report, name).astimezone(UTC).replace(tzinfo=None)
             for name in ("current_start", "baseline_start", "baseline_end")}
    now = datetime.now(UTC).replace(tzinfo=None)
    with store.transaction() as con:
        # OR IGNORE: a process that computed the same run concurrently already stored it and its signals.
        con.execute("INSERT OR IGNORE INTO drift_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [tenant, run_id, fingerprint, at, naive["current_start"], naive["baseline_start"],
                     naive["baseline_end"], config.alpha, config.effect_gate, config.min_usable, table.num_rows,
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
    return DriftRunReport(run_id, fingerprint, at, table.num_rows, len(report.cells), report.tested,
                          tuple(signals), False)


def _stored_run(store: StateStore, tenant: str, run_id: str) -> DriftRunReport | None:
    with store.transaction() as con:
        run = con.execute("SELECT fingerprint, as_of, judgments, cells, tested FROM drift_runs "
                          "WHERE tenant_id = ? AND run_id = ?", [tenant, run_id]).fetchone()
        if run is None:
            return None
        rows = con.execute(f"SELECT {', '.join(_SIGNAL_COLUMNS[2:])} FROM drift_signals "
                           "WHERE tenant_id = ? AND run_id = ? ORDER BY cluster, dimension, kind",
                           [tenant, run_id]).fetchall()
    signals = tuple(Signal(*row[:-1], tuple(json.loads(row[-1]))) for row in rows)
    return DriftRunReport(run_id, run[0], run[1], run[2], run[3], run[4], signals, True)


def latest_run(store: StateStore, tenant: str, fingerprint: str) -> DriftRunReport | None:
    """The latest completed run of this tenant and fingerprint (what readers report)."""
    tenant = validate_tenant_id(tenant)
    with store.transaction() as con:
        row = con.execute("SELECT run_id FROM drift_runs WHERE tenant_id = ? AND fingerprint = ? "
                          "ORDER BY completed_at DESC, as_of DESC LIMIT 1", [tenant, fingerprint]).fetchone()
    return _stored_run(store, tenant, row[0]) if row else None
