"""Judgment attempts, their dimension verdicts and the evaluators they name, in state.duckdb: the only SQL
for them, rows as frozen dataclasses (the tables' columns, in order).

An attempt's id is derived from (tenant, trace, fingerprint, planned attempt number) and inserted with INSERT
OR IGNORE, so a rerun, a restart or a racing process never stores a judgment twice (service/judging.py). The
number itself is allocated again when the attempt is stored (`insert_attempts`), so two fingerprints of one
evaluator name judging one trace at once never both store attempt n.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields, replace
from datetime import datetime

from verdict_daemon.store.state import StateStore, insert_rows


@dataclass(frozen=True)
class Attempt:
    tenant_id: str
    attempt_id: str
    trace_id: str
    fingerprint: str
    attempt_no: int
    status: str  # OK, ERROR, NO_CONTENT
    error_code: str | None
    error_message: str | None
    judged_at: datetime  # naive UTC
    input_tokens: int
    output_tokens: int
    cost_usd: float
    judge_run_id: str
    requests: int  # model requests the attempt sent (0: no call, NO_CONTENT)


@dataclass(frozen=True)
class Verdict:
    tenant_id: str
    attempt_id: str
    dimension: str
    value: str | None  # None when the dimension is a score
    score: float | None
    reason: str | None
    votes: str | None  # JSON


@dataclass(frozen=True)
class PendingTrace:
    """A sampled trace to judge, with the number its next attempt takes."""

    trace_id: str
    started_at: datetime
    query: str
    response: str
    context: str
    attempt_no: int
    history: str | None = None  # sampled_traces.history (JSON); None: in no conversation


@dataclass(frozen=True)
class Coverage:
    sampled_traces: int
    usable: int  # latest attempt OK
    error: int  # latest attempt ERROR
    no_content: int  # latest attempt NO_CONTENT


_ATTEMPT_COLUMNS = tuple(f.name for f in fields(Attempt))
_VERDICT_COLUMNS = tuple(f.name for f in fields(Verdict))


def register_evaluator(store: StateStore, tenant: str, fingerprint: str, name: str, definition: str) -> None:
    """Record the evaluator a fingerprint stands for (its JSON definition), once."""
    with store.transaction() as con:
        con.execute("INSERT OR IGNORE INTO evaluators VALUES (?, ?, ?, ?, now()::TIMESTAMP)",
                    [tenant, fingerprint, name, definition])


def evaluator_definition(store: StateStore, tenant: str, fingerprint: str) -> str | None:
    """The JSON definition registered for a fingerprint; None when it was never registered."""
    with store.transaction() as con:
        row = con.execute("SELECT definition FROM evaluators WHERE tenant_id = ? AND fingerprint = ?",
                          [tenant, fingerprint]).fetchone()
    return None if row is None else str(row[0])


def pending_work(store: StateStore, tenant: str, fingerprint: str, max_attempts: int, limit: int,
                 uncounted_error: str, unit: str = "turn") -> list[PendingTrace]:
    """Sampled traces without an attempt by this fingerprint, or whose latest is ERROR with fewer than
    `max_attempts` counted attempts (`uncounted_error` attempts are not counted), of the evaluator's `unit` (a trace,
    or a closed conversation); newest traces first.
    The next attempt number follows every attempt on the trace by the evaluator's name, under any of its
    fingerprints (a changed model or rubric), so `judgments` never shows one evaluator's attempt 1 twice;
    retries and the latest attempt stay per fingerprint (the fingerprint is registered first)."""
    with store.transaction() as con:
        rows = con.execute("""
            WITH a AS (
                SELECT trace_id, arg_max(status, attempt_no) AS latest,
                       count(*) FILTER (WHERE coalesce(error_code, '') <> $uncounted) AS counted
                FROM judgment_attempts WHERE tenant_id = $t AND fingerprint = $fp GROUP BY trace_id),
            numbered AS (  -- this fingerprint's attempts and those of the other fingerprints of its name
                SELECT trace_id, max(attempt_no) AS last FROM judgment_attempts
                WHERE tenant_id = $t AND (fingerprint = $fp OR fingerprint IN (
                    SELECT other.fingerprint FROM evaluators own JOIN evaluators other USING (tenant_id, name)
                    WHERE own.tenant_id = $t AND own.fingerprint = $fp))
                GROUP BY trace_id)
            SELECT s.trace_id, s.started_at, s.query, s.response, s.context, s.history, coalesce(n.last, 0) + 1
            FROM sampled_traces s LEFT JOIN a USING (trace_id) LEFT JOIN numbered n USING (trace_id)
            WHERE s.tenant_id = $t AND s.unit = $unit AND (a.trace_id IS NULL OR (a.latest = 'ERROR' AND a.counted < $max))
            ORDER BY s.started_at DESC, s.trace_id LIMIT $limit""",
            {"t": tenant, "fp": fingerprint, "max": max_attempts, "limit": limit,
             "uncounted": uncounted_error, "unit": unit}).fetchall()
    return [PendingTrace(t, started, q or "", r or "", c or "", n, h) for t, started, q, r, c, h, n in rows]


def insert_attempts(store: StateStore, tenant: str, run_id: str, attempts: list[Attempt],
                    verdicts: list[Verdict]) -> None:
    """Store a run's finished attempts and their verdicts in one short transaction."""
    with store.transaction() as con:
        attempts = _numbered(con, tenant, attempts)
        insert_rows(con, "judgment_attempts", _ATTEMPT_COLUMNS, [astuple(a) for a in attempts])
        # Only under attempts this run stored: when a racing run stored the same attempt id
        # first, its verdicts stand and ours (perhaps an ERROR's none) must not mix in.
        insert_rows(con, "dimension_verdicts", _VERDICT_COLUMNS, [astuple(v) for v in verdicts], where=(
            "attempt_id IN (SELECT attempt_id FROM judgment_attempts WHERE tenant_id = ? AND judge_run_id = ?)"),
            params=[tenant, run_id])


def _numbered(con, tenant: str, attempts: list[Attempt]) -> list[Attempt]:
    """The attempts with numbers allocated under the state file's lock: a number planned by `pending_work` that
    another fingerprint of the evaluator's name has stored on the trace since (a run of it judged the trace at
    the same time) moves past the last stored one. An attempt whose id is stored already (a rerun or a racing
    run of the same fingerprint) keeps its number: INSERT OR IGNORE drops it."""
    if not attempts:
        return attempts
    stored = {aid for (aid,) in con.execute(
        "SELECT attempt_id FROM judgment_attempts WHERE tenant_id = ? AND attempt_id IN (SELECT unnest(?))",
        [tenant, [a.attempt_id for a in attempts]]).fetchall()}
    last: dict[tuple[str, str], int] = {}  # (fingerprint, trace) -> last number its name has on the trace
    for fingerprint in {a.fingerprint for a in attempts}:
        traces = [a.trace_id for a in attempts if a.fingerprint == fingerprint]
        last |= {(fingerprint, trace): no for trace, no in con.execute("""
            SELECT trace_id, max(attempt_no) FROM judgment_attempts
            WHERE tenant_id = $t AND trace_id IN (SELECT unnest($traces)) AND (fingerprint = $fp OR fingerprint IN (
                SELECT other.fingerprint FROM evaluators own JOIN evaluators other USING (tenant_id, name)
                WHERE own.tenant_id = $t AND own.fingerprint = $fp))
            GROUP BY trace_id""", {"t": tenant, "fp": fingerprint, "traces": traces}).fetchall()}
    numbered = []
    for attempt in attempts:
        if attempt.attempt_id not in stored:
            key = (attempt.fingerprint, attempt.trace_id)
            attempt = replace(attempt, attempt_no=max(attempt.attempt_no, last.get(key, 0) + 1))
            last[key] = attempt.attempt_no
        numbered.append(attempt)
    return numbered


def coverage(store: StateStore, tenant: str, fingerprint: str, unit: str = "turn") -> Coverage:
    """Sampled rows of the evaluator's unit by the status of their latest attempt by this fingerprint."""
    with store.transaction() as con:
        row = con.execute("""
            WITH latest AS (SELECT trace_id, arg_max(status, attempt_no) AS status FROM judgment_attempts
                            WHERE tenant_id = $t AND fingerprint = $fp GROUP BY trace_id)
            SELECT count(*), count(*) FILTER (WHERE l.status = 'OK'), count(*) FILTER (WHERE l.status = 'ERROR'),
                   count(*) FILTER (WHERE l.status = 'NO_CONTENT')
            FROM sampled_traces s LEFT JOIN latest l USING (trace_id) WHERE s.tenant_id = $t AND s.unit = $unit""",
            {"t": tenant, "fp": fingerprint, "unit": unit}).fetchone()
    return Coverage(*row)
