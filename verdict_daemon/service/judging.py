"""Judging: run an evaluator over sampled traces with bounded concurrency and a per-run budget.

Work is every sampled trace without an attempt by this evaluator fingerprint, or whose latest
attempt is ERROR and that has fewer than `max_attempts` counted attempts (provider outages are
not counted). A trace whose graded call carries no content (`Material.has_content`) gets one
NO_CONTENT attempt instead: never sent to the judge, never paid, never retried, counted in coverage.
A run whose first `early_stop_after` results all failed with the same error class stops submitting
work (no money for nothing): an outage raises `provider_unavailable`, any other class (a refused
parameter, unusable replies) ends the evaluator's run with `JudgeReport.early_stop` saying why.
Model calls run in a thread pool while state.duckdb is closed; finished attempts are
written in short batched transactions. An attempt's id is derived from (tenant, trace, fingerprint,
attempt number) and inserted with INSERT OR IGNORE, so a rerun, a restart after a crash, or a second
process racing on the same trace never stores a judgment twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime

from verdict.models.base import Usage
from verdict.tenancy import TenantId
from verdict_daemon.config import Judging
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.conversation import TURN
from verdict_daemon.service.evaluators import (
    JUDGE_WORKLOAD,
    PROVIDER_UNAVAILABLE,
    Evaluator,
    Outcome,
)
from verdict_daemon.service.material import Material, read_background
from verdict_daemon.store import judgments
from verdict_daemon.store.judgments import Attempt, Verdict
from verdict_daemon.store.state import StateStore

log = logging.getLogger("verdict.daemon")

FLUSH_EVERY_SECONDS = 0.5
NO_CONTENT = "no_content"  # the attempt's error_code; its status is NO_CONTENT
# The model error kind inside an engine error text ("judge: model: unsupported_parameter: HTTP 500 ...").
_MODEL_KIND = re.compile(r"\bmodel: (\w+)")


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
    # Why the run stopped before its work was done: its first results all failed with one error class.
    early_stop: str | None = None
    unit: str = TURN  # what the evaluator judges: sampled traces, or closed conversations

    @property
    def requests_per_judgment(self) -> float | None:
        """Model requests (retries included) per attempt that called the judge; None when none did."""
        called = self.judged + self.errors
        return round(self.usage.requests / called, 2) if called else None

    def low_coverage(self, config: Judging) -> str | None:
        """Why this run's coverage is below the floor of `config` ([judging] low_coverage_*), or None. A run asked
        to stop is not judged by it: its traces are judged again later."""
        to_judge = self.pending - self.no_content
        if self.stopped or to_judge < config.low_coverage_min_traces or \
                self.judged > config.low_coverage_share * to_judge:
            return None
        why = f"; {self.early_stop}" if self.early_stop else ""
        return (f"evaluator {self.evaluator!r}: {self.judged} usable judgment(s) of {to_judge} trace(s) to judge, "
                f"at most {config.low_coverage_share:.0%} of at least {config.low_coverage_min_traces} "
                f"([judging] low_coverage_share, low_coverage_min_traces){why}")


def error_class(outcome: Outcome) -> str | None:
    """What kind of failure an outcome is, finer than its error code: the model error kind when a model
    call failed (server_error, unsupported_parameter, ...), else the code (invalid_reply, ...); None if OK."""
    if outcome.error_code is None:
        return None
    kind = _MODEL_KIND.search(outcome.error_message or "")
    return f"{outcome.error_code}/{kind.group(1)}" if kind else outcome.error_code


class _EarlyStop:
    """Watches a run's first results: all failed, with one error class -> the run should stop."""

    def __init__(self, after: int, work: int) -> None:
        self.after = min(after, work)
        self.classes: set[str | None] = set()
        self.seen = 0
        self.last_message: str | None = None

    def add(self, outcome: Outcome) -> None:
        if self.seen < self.after:
            self.seen += 1
            self.classes.add(error_class(outcome))
            self.last_message = outcome.error_message

    @property
    def triggered(self) -> str | None:
        """The one error class of the first results when they all failed with it, else None."""
        if self.after == 0 or self.seen < self.after or len(self.classes) != 1:
            return None
        (cls,) = self.classes
        return cls


def attempt_id(tenant: str, trace_id: str, fingerprint: str, attempt_no: int) -> str:
    return hashlib.sha256(f"{tenant}\0{trace_id}\0{fingerprint}\0{attempt_no}".encode()).hexdigest()[:32]


def register_evaluator(store: StateStore, tenant: TenantId, evaluator: Evaluator) -> None:
    judgments.register_evaluator(store, tenant, evaluator.fingerprint, evaluator.name,
                                 json.dumps(evaluator.definition, sort_keys=True, default=str))


def pending_work(store: StateStore, tenant: TenantId, fingerprint: str, max_attempts: int,
                 limit: int, unit: str = TURN) -> list[tuple[Material, int]]:
    """(material, attempt number) of the evaluator's unit to judge, newest first (the current drift window matters
    most); a turn of a conversation carries the conversation so far, an agent run its tool trajectory, a closed
    conversation its turns, as stored when sampled."""
    return [(Material(p.trace_id, p.started_at, p.query, p.response, p.context, *read_background(p.history)),
             p.attempt_no)
            for p in judgments.pending_work(store, tenant, fingerprint, max_attempts, limit, PROVIDER_UNAVAILABLE,
                                            unit)]


class _Budget:
    """A run's spend: model requests (retries included) and tokens of finished evaluations, and the
    evaluations in flight, each counted as one request until it finishes."""

    def __init__(self, config: Judging) -> None:
        self.limits = config.budget
        self.in_flight = 0
        self.usage = Usage()

    def allows_another(self) -> bool:
        b = self.limits
        return not ((b.max_calls is not None and self.usage.requests + self.in_flight >= b.max_calls)
                    or (b.max_tokens is not None and self.usage.input_tokens + self.usage.output_tokens >= b.max_tokens)
                    or (b.max_cost_usd is not None and self.usage.cost_usd >= b.max_cost_usd))


class _Writer:
    """Buffers finished attempts; a background thread writes them in short transactions, so the
    submitting loop never waits for state.duckdb and the judge pool stays full."""

    def __init__(self, store: StateStore, tenant: TenantId, fingerprint: str, run_id: str) -> None:
        self.store, self.tenant, self.fingerprint, self.run_id = store, tenant, fingerprint, run_id
        self._attempts: list[Attempt] = []
        self._verdicts: list[Verdict] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._failure: DaemonError | None = None
        self._thread = threading.Thread(target=self._loop, name="verdict-judge-writer", daemon=True)
        self._thread.start()

    def add(self, material: Material, attempt_no: int, outcome: Outcome) -> None:
        aid = attempt_id(self.tenant, material.trace_id, self.fingerprint, attempt_no)
        status = "NO_CONTENT" if outcome.error_code == NO_CONTENT else "ERROR" if outcome.error_code else "OK"
        attempt = Attempt(self.tenant, aid, material.trace_id, self.fingerprint, attempt_no, status,
                          outcome.error_code, outcome.error_message, datetime.now(UTC).replace(tzinfo=None),
                          outcome.usage.input_tokens, outcome.usage.output_tokens, outcome.usage.cost_usd, self.run_id,
                          outcome.usage.requests)
        verdicts = [Verdict(self.tenant, aid, v.dimension, v.value, v.score, v.reason,
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
            judgments.insert_attempts(self.store, self.tenant, self.run_id, attempts, verdicts)

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


def judge(store: StateStore, tenant: TenantId, evaluator: Evaluator, config: Judging, run_id: str,
          should_stop: Callable[[], bool] = lambda: False) -> JudgeReport:
    register_evaluator(store, tenant, evaluator)
    limit = config.budget.max_calls or 1_000_000
    work = pending_work(store, tenant, evaluator.fingerprint, config.max_attempts, limit, evaluator.unit)
    if work:
        log.info("judge tenant=%s evaluator=%s started pending=%d", tenant, evaluator.name, len(work))
    budget = _Budget(config)
    writer = _Writer(store, tenant, evaluator.fingerprint, run_id)
    no_content = _record_no_content(writer, work, evaluator)
    judged = errors = 0
    probe = _EarlyStop(config.early_stop_after, len(work))
    in_flight: dict[Future, tuple[Material, int]] = {}
    queue = iter(work)
    exhausted = stopped = False
    abandon_at = float("inf")
    pool = ThreadPoolExecutor(config.concurrency, thread_name_prefix="verdict-judge")
    try:
        while True:
            stopped = stopped or should_stop()  # checked even while the pool is full
            while len(in_flight) < config.concurrency and not (exhausted or stopped or probe.triggered):
                if not budget.allows_another():
                    exhausted = True
                    break
                item = next(queue, None)
                if item is None:
                    break
                budget.in_flight += 1
                in_flight[pool.submit(_evaluate, evaluator, item[0])] = item
            if stopped and abandon_at == float("inf"):
                abandon_at = time.monotonic() + config.stop_grace_seconds
            if not in_flight or time.monotonic() >= abandon_at:
                break
            done, _ = wait(in_flight, timeout=FLUSH_EVERY_SECONDS, return_when=FIRST_COMPLETED)
            for future in done:
                material, attempt_no = in_flight.pop(future)
                outcome = future.result()
                budget.in_flight -= 1
                budget.usage += outcome.usage
                judged += outcome.error_code is None
                errors += outcome.error_code is not None
                probe.add(outcome)
                writer.add(material, attempt_no, outcome)
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
    early_stop = None
    failed_as = probe.triggered
    if failed_as is not None:
        early_stop = (f"stopped early: the first {probe.after} result(s) all failed with {failed_as} "
                      f"(last: {(probe.last_message or '')[:300]})")
        log.warning("judge tenant=%s evaluator=%s %s", tenant, evaluator.name, early_stop)
        if failed_as == PROVIDER_UNAVAILABLE or failed_as.startswith(f"{PROVIDER_UNAVAILABLE}/"):
            raise DaemonError(PROVIDER_UNAVAILABLE, f"evaluator {evaluator.name!r}: the judge model could not be "
                              f"reached ({early_stop})")
    return JudgeReport(evaluator.name, evaluator.fingerprint, len(work), judged, errors, no_content, exhausted,
                       stopped, budget.usage, early_stop, evaluator.unit)


def _record_no_content(writer: _Writer, work: list[tuple[Material, int]], evaluator: Evaluator) -> int:
    """Write a NO_CONTENT attempt for every work item without content (or, for an evaluator of agent runs only,
    without a tool trajectory) and drop it from `work`."""
    def missing(material: Material) -> str | None:
        if not material.has_content:
            return ("the graded call has no question or no answer text (content not captured, or a dialect the "
                    "collector does not map)")
        if evaluator.needs_trajectory and material.trajectory is None:
            return "the trace has no tool trajectory (no tool call or result): not an agent run this rubric grades"
        return None

    kept = []
    for material, attempt_no in work:
        why = missing(material)
        if why is None:
            kept.append((material, attempt_no))
        else:
            writer.add(material, attempt_no, Outcome(error_code=NO_CONTENT, error_message=why))
    empty = len(work) - len(kept)
    work[:] = kept
    return empty


def coverage(store: StateStore, tenant: TenantId, fingerprint: str, unit: str = TURN) -> dict[str, float | int]:
    """Sampled rows of the evaluator's unit and how many have a usable (latest OK) judgment by this fingerprint;
    `no_content` ones had nothing to judge (they stay in the denominator: coverage is what monitoring sees)."""
    c = judgments.coverage(store, tenant, fingerprint, unit)
    return {"sampled_traces": c.sampled_traces, "usable": c.usable, "error": c.error, "no_content": c.no_content,
            "rate": round(c.usable / c.sampled_traces, 4) if c.sampled_traces else 0.0}
