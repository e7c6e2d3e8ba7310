"""Judging: run an evaluator over sampled traces with bounded concurrency and a per-run budget.

Work is every sampled trace without an attempt by this evaluator fingerprint, or whose latest
attempt is ERROR and that has fewer than `max_attempts` counted attempts (provider outages are
not counted). A trace whose graded call carries no content (`Material.has_content`) gets one
NO_CONTENT attempt instead: never sent to the judge, never paid, never retried, counted in coverage.
Model calls run in a thread pool while state.duckdb is closed; finished attempts are
written in short batched transactions. An attempt's id is derived from (tenant, trace, fingerprint,
attempt number) and inserted with INSERT OR IGNORE, so a rerun, a restart after a crash, or a second
process racing on the same trace never stores a judgment twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime

from verdict.models.base import Usage
from verdict.tenancy import validate_tenant_id
from verdict_daemon.config import Judging
from verdict_daemon.errors import DaemonError
from verdict_daemon.evaluators import JUDGE_WORKLOAD, PROVIDER_UNAVAILABLE, Evaluator, Outcome
from verdict_daemon.material import Material
from verdict_daemon.state import StateStore, insert_rows

log = logging.getLogger("verdict.daemon")

FLUSH_EVERY_SECONDS = 0.5
# A run whose first results are all provider outages stops early instead of burning the budget.
OUTAGE_PROBE = 8
NO_CONTENT = "no_content"  # the attempt's error_code; its status is NO_CONTENT
_ATTEMPT_COLUMNS = ("tenant_id", "attempt_id", "trace_id", "fingerprint", "attempt_no", "status", "error_code",
                    "error_message", "judged_at", "input_tokens", "output_tokens", "cost_usd", "judge_run_id")
_VERDICT_COLUMNS = ("tenant_id", "attempt_id", "dimension", "value", "score", "reason", "votes")


@dataclass(frozen=True)
class JudgeReport:
    evaluator: str
    fingerprint: str
    pending: int  # work found at the start of the run
    judged: int  # attempts with verdicts
    errors: int  # ERROR attempts
    no_content: int  # NO_CONTENT attempts (not judged, not paid)
    budget_exhausted: bool
    stopped: bool  # asked to stop (SIGTERM) before the work was done
    usage: Usage


def attempt_id(tenant: str, trace_id: str, fingerprint: str, attempt_no: int) -> str:
    return hashlib.sha256(f"{tenant}\0{trace_id}\0{fingerprint}\0{attempt_no}".encode()).hexdigest()[:32]


def register_evaluator(store: StateStore, tenant: str, evaluator: Evaluator) -> None:
    with store.transaction() as con:
        con.execute("INSERT OR IGNORE INTO evaluators VALUES (?, ?, ?, ?, now()::TIMESTAMP)",
                    [tenant, evaluator.fingerprint, evaluator.name,
                     json.dumps(evaluator.definition, sort_keys=True, default=str)])


def pending_work(store: StateStore, tenant: str, fingerprint: str, max_attempts: int,
                 limit: int) -> list[tuple[Material, int]]:
    """(material, attempt number) to judge, newest traces first (the current drift window matters most)."""
    with store.transaction() as con:
        rows = con.execute(f"""
            WITH a AS (
                SELECT trace_id, count(*) AS n, arg_max(status, attempt_no) AS latest,
                       count(*) FILTER (WHERE coalesce(error_code, '') <> '{PROVIDER_UNAVAILABLE}') AS counted
                FROM judgment_attempts WHERE tenant_id = $t AND fingerprint = $fp GROUP BY trace_id)
            SELECT s.trace_id, s.started_at, s.query, s.response, s.context, coalesce(a.n, 0) + 1
            FROM sampled_traces s LEFT JOIN a USING (trace_id)
            WHERE s.tenant_id = $t AND (a.trace_id IS NULL OR (a.latest = 'ERROR' AND a.counted < $max))
            ORDER BY s.started_at DESC, s.trace_id LIMIT $limit""",
            {"t": tenant, "fp": fingerprint, "max": max_attempts, "limit": limit}).fetchall()
    return [(Material(t, started, q or "", r or "", c or ""), n) for t, started, q, r, c, n in rows]


class _Budget:
    def __init__(self, config: Judging) -> None:
        self.limits = config.budget
        self.calls = 0
        self.usage = Usage()

    def allows_another(self) -> bool:
        b = self.limits
        return not ((b.max_calls is not None and self.calls >= b.max_calls)
                    or (b.max_tokens is not None and self.usage.input_tokens + self.usage.output_tokens >= b.max_tokens)
                    or (b.max_cost_usd is not None and self.usage.cost_usd >= b.max_cost_usd))


class _Writer:
    """Buffers finished attempts; a background thread writes them in short transactions, so the
    submitting loop never waits for state.duckdb and the judge pool stays full."""

    def __init__(self, store: StateStore, tenant: str, fingerprint: str, run_id: str) -> None:
        self.store, self.tenant, self.fingerprint, self.run_id = store, tenant, fingerprint, run_id
        self._attempts: list[tuple] = []
        self._verdicts: list[tuple] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._failure: DaemonError | None = None
        self._thread = threading.Thread(target=self._loop, name="verdict-judge-writer", daemon=True)
        self._thread.start()

    def add(self, material: Material, attempt_no: int, outcome: Outcome) -> None:
        aid = attempt_id(self.tenant, material.trace_id, self.fingerprint, attempt_no)
        status = "NO_CONTENT" if outcome.error_code == NO_CONTENT else "ERROR" if outcome.error_code else "OK"
        attempt = (self.tenant, aid, material.trace_id, self.fingerprint, attempt_no, status, outcome.error_code,
                   outcome.error_message, datetime.now(UTC).replace(tzinfo=None), outcome.usage.input_tokens,
                   outcome.usage.output_tokens, outcome.usage.cost_usd, self.run_id)
        verdicts = [(self.tenant, aid, v.dimension, v.value, v.score, v.reason,
                     None if v.votes is None else json.dumps(v.votes, sort_keys=True)) for v in outcome.verdicts]
        with self._lock:
            self._attempts.append(attempt)
            self._verdicts += verdicts
        if self._failure is not None:
            raise self._failure

    def _flush(self) -> None:
        with self._lock:
            attempts, verdicts = self._attempts, self._verdicts
            self._attempts, self._verdicts = [], []
        if attempts:
            with self.store.transaction() as con:
                insert_rows(con, "judgment_attempts", _ATTEMPT_COLUMNS, attempts)
                # Only under attempts this run stored: when a racing run stored the same attempt id
                # first, its verdicts stand and ours (perhaps an ERROR's none) must not mix in.
                insert_rows(con, "dimension_verdicts", _VERDICT_COLUMNS, verdicts, where=(
                    "attempt_id IN (SELECT attempt_id FROM judgment_attempts WHERE tenant_id = ? AND judge_run_id = ?)"),
                    params=[self.tenant, self.run_id])

    def _loop(self) -> None:
        while not self._closed.wait(FLUSH_EVERY_SECONDS):
            try:
                self._flush()
            except DaemonError as exc:  # e.g. storage_locked: surfaced to the run by add()/close()
                self._failure = exc
                return

    def close(self) -> None:
        """Stop the background writer and write what is left (raises the writer's failure, if any)."""
        self._closed.set()
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        self._flush()


def _evaluate(evaluator: Evaluator, material: Material) -> Outcome:
    """One evaluation, inside `workload_context("judge")` so every model call it makes (the engine
    carries context into its worker threads) is stamped as the daemon's own and excluded from analysis."""
    from verdict.tracing import workload_context

    try:
        with workload_context(JUDGE_WORKLOAD):
            return evaluator.evaluate(material)
    except Exception as exc:  # a user graph or judge that raises must not take the run down
        return Outcome(error_code="evaluator_error", error_message=f"{type(exc).__name__}: {str(exc)[:300]}")


def judge(store: StateStore, tenant: str, evaluator: Evaluator, config: Judging, run_id: str,
          should_stop: Callable[[], bool] = lambda: False) -> JudgeReport:
    tenant = validate_tenant_id(tenant)
    register_evaluator(store, tenant, evaluator)
    limit = config.budget.max_calls or 1_000_000
    work = pending_work(store, tenant, evaluator.fingerprint, config.max_attempts, limit)
    if work:
        log.info("judge tenant=%s evaluator=%s started pending=%d", tenant, evaluator.name, len(work))
    budget = _Budget(config)
    writer = _Writer(store, tenant, evaluator.fingerprint, run_id)
    judged = errors = outages = 0
    in_flight: dict[Future, tuple[Material, int]] = {}
    queue = iter(work)
    no_content = _record_no_content(writer, work)
    exhausted = stopped = outage = False
    abandon_at = float("inf")
    pool = ThreadPoolExecutor(config.concurrency, thread_name_prefix="verdict-judge")
    try:
        while True:
            stopped = stopped or should_stop()  # checked even while the pool is full
            while len(in_flight) < config.concurrency and not (exhausted or stopped or outage):
                if not budget.allows_another():
                    exhausted = True
                    break
                item = next(queue, None)
                if item is None:
                    break
                budget.calls += 1
                in_flight[pool.submit(_evaluate, evaluator, item[0])] = item
            if stopped and abandon_at == float("inf"):
                abandon_at = time.monotonic() + config.stop_grace_seconds
            if not in_flight or time.monotonic() >= abandon_at:
                break
            done, _ = wait(in_flight, timeout=FLUSH_EVERY_SECONDS, return_when=FIRST_COMPLETED)
            for future in done:
                material, attempt_no = in_flight.pop(future)
                outcome = future.result()
                budget.usage += outcome.usage
                judged += outcome.error_code is None
                errors += outcome.error_code is not None
                outages += outcome.error_code == PROVIDER_UNAVAILABLE
                writer.add(material, attempt_no, outcome)
            if judged == 0 and outages and outages >= min(OUTAGE_PROBE, len(work)):
                outage = True
    finally:
        # On stop, calls still running after the grace are abandoned (never written: their traces
        # are judged again later, under the same attempt ids); otherwise this waits for nothing.
        pool.shutdown(wait=False, cancel_futures=True)
        writer.close()  # what finished is written, also when the run fails
    if in_flight:
        log.warning("judge tenant=%s evaluator=%s: abandoned %d call(s) still running %g s after the stop request",
                    tenant, evaluator.name, len(in_flight), config.stop_grace_seconds)
    log.info("judge tenant=%s evaluator=%s pending=%d judged=%d errors=%d no_content=%d budget_exhausted=%s "
             "stopped=%s", tenant, evaluator.name, len(work), judged, errors, no_content, exhausted, stopped)
    if outage:
        raise DaemonError(PROVIDER_UNAVAILABLE, f"evaluator {evaluator.name!r}: the judge model could not be "
                          f"reached ({outages} call(s) failed, none succeeded)")
    return JudgeReport(evaluator.name, evaluator.fingerprint, len(work), judged, errors, no_content, exhausted,
                       stopped, budget.usage)


def _record_no_content(writer: _Writer, work: list[tuple[Material, int]]) -> int:
    """Write a NO_CONTENT attempt for every work item without content and drop it from `work`."""
    empty = [item for item in work if not item[0].has_content]
    for material, attempt_no in empty:
        writer.add(material, attempt_no, Outcome(error_code=NO_CONTENT, error_message=(
            "the graded call has no question or no answer text (content not captured, or a dialect the "
            "collector does not map)")))
    work[:] = [item for item in work if item[0].has_content]
    return len(empty)


def coverage(store: StateStore, tenant: str, fingerprint: str) -> dict[str, float | int]:
    """Sampled traces and how many have a usable (latest OK) judgment by this fingerprint; `no_content`
    traces had nothing to judge (they stay in the denominator: coverage is what monitoring sees)."""
    with store.transaction() as con:
        sampled, usable, error, no_content = con.execute("""
            WITH latest AS (SELECT trace_id, arg_max(status, attempt_no) AS status FROM judgment_attempts
                            WHERE tenant_id = $t AND fingerprint = $fp GROUP BY trace_id)
            SELECT count(*), count(*) FILTER (WHERE l.status = 'OK'), count(*) FILTER (WHERE l.status = 'ERROR'),
                   count(*) FILTER (WHERE l.status = 'NO_CONTENT')
            FROM sampled_traces s LEFT JOIN latest l USING (trace_id) WHERE s.tenant_id = $t""",
            {"t": validate_tenant_id(tenant), "fp": fingerprint}).fetchone()
    return {"sampled_traces": sampled, "usable": usable, "error": error, "no_content": no_content,
            "rate": round(usable / sampled, 4) if sampled else 0.0}
