"""The evaluation-export outbox in state.duckdb: judgment attempts not yet acknowledged by the OTLP endpoint
([export.evaluations]) and the record that they were. The only SQL for `evaluation_exports`.

An attempt is the unit acknowledged: all its records (one per dimension verdict; one for an ERROR attempt) go
in one request, and a row in `evaluation_exports` says the endpoint took them. No row: the next run sends
them again, so a crash between the endpoint's answer and the commit resends (at least once; receivers
deduplicate on the record id).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from verdict_daemon.store.state import StateStore, insert_rows


@dataclass(frozen=True)
class ExportableVerdict:
    """One dimension verdict of an attempt (dimension None: the attempt was ERROR and has none)."""

    dimension: str | None
    value: str | None
    score: float | None
    reason: str | None


@dataclass(frozen=True)
class ExportableAttempt:
    """A finished attempt to export, with the judged span and the evaluator's stored definition."""

    attempt_id: str
    trace_id: str
    span_id: str  # the judged call's span (sampled_traces.span_id)
    fingerprint: str
    attempt_no: int
    status: str  # OK or ERROR (NO_CONTENT attempts judged nothing and are not exported)
    error_code: str | None
    error_message: str | None
    judged_at: datetime  # naive UTC
    evaluator: str
    definition: dict[str, Any]
    verdicts: tuple[ExportableVerdict, ...]


def pending(store: StateStore, tenant: str, limit: int) -> list[ExportableAttempt]:
    """Up to `limit` OK or ERROR attempts without an acknowledged export, oldest first."""
    with store.transaction() as con:
        rows = con.execute("""
            WITH todo AS (
                SELECT a.* FROM judgment_attempts a
                WHERE a.tenant_id = $t AND a.status IN ('OK', 'ERROR') AND NOT EXISTS (
                    SELECT 1 FROM evaluation_exports x WHERE x.tenant_id = a.tenant_id AND x.attempt_id = a.attempt_id)
                ORDER BY a.judged_at, a.attempt_id LIMIT $limit)
            SELECT a.attempt_id, a.trace_id, s.span_id, a.fingerprint, a.attempt_no, a.status, a.error_code,
                   a.error_message, a.judged_at, e.name, e.definition,
                   list({'dimension': v.dimension, 'value': v.value, 'score': v.score, 'reason': v.reason}
                        ORDER BY v.dimension)
                       FILTER (WHERE v.dimension IS NOT NULL)
            FROM todo a
            JOIN sampled_traces s ON s.tenant_id = a.tenant_id AND s.trace_id = a.trace_id
            JOIN evaluators e ON e.tenant_id = a.tenant_id AND e.fingerprint = a.fingerprint
            LEFT JOIN dimension_verdicts v ON v.tenant_id = a.tenant_id AND v.attempt_id = a.attempt_id
            GROUP BY ALL ORDER BY a.judged_at, a.attempt_id""", {"t": tenant, "limit": limit}).fetchall()
    return [ExportableAttempt(attempt, trace, span, fingerprint, number, status, code, message, at, name,
                              json.loads(definition), tuple(ExportableVerdict(**v) for v in verdicts or ()))
            for attempt, trace, span, fingerprint, number, status, code, message, at, name, definition, verdicts in rows]


def acknowledge(store: StateStore, tenant: str, records: dict[str, int], at: datetime) -> None:
    """Mark attempts (attempt id -> records sent) as taken by the endpoint."""
    with store.transaction() as con:
        insert_rows(con, "evaluation_exports", ("tenant_id", "attempt_id", "records", "exported_at"),
                    [(tenant, attempt, n, at) for attempt, n in records.items()])


def unexported(store: StateStore, tenant: str) -> int:
    """OK or ERROR attempts still waiting for an acknowledged export."""
    with store.transaction() as con:
        return int(con.execute("""
            SELECT count(*) FROM judgment_attempts a WHERE a.tenant_id = ? AND a.status IN ('OK', 'ERROR')
              AND NOT EXISTS (SELECT 1 FROM evaluation_exports x
                              WHERE x.tenant_id = a.tenant_id AND x.attempt_id = a.attempt_id)""",
            [tenant]).fetchone()[0])
