"""The judge sentinel health check (verdict.sentinel) in front of production judging.

Each rubric or ensemble evaluator grades the human-labelled sentinel set with its raw Judge or
JudgeEnsemble before it judges traffic; the result is stored in `sentinel_health` and anything but
`healthy` is a `judge_unhealthy` error, so neither judging nor drift runs on an untrusted judge.
Graph evaluators have no rubric to label a sentinel set against, and an evaluator of agent runs only (the tool-use
rubric) is not checked: the check does not apply to them. An example is graded with the conversation so far and the
tool trajectory it was labelled with (`verdict review export-sentinel` writes what the item's judge was shown), so the
judge grades the input the reviewer labelled; an evaluator not shown one of them refuses such a set at start.
The state file is not held open while the judge is called (one short transaction afterwards).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any, cast

from verdict_daemon.config import Sentinel
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.conversation import TURN
from verdict_daemon.service.evaluators import JUDGE_WORKLOAD, Evaluator
from verdict_daemon.service.judge_evaluators import JudgeEvaluator
from verdict_daemon.store.sentinel_health import HealthCheck, insert_check
from verdict_daemon.store.state import StateStore


def load_sets(settings: Sentinel, evaluators: list[Evaluator]) -> dict[str, Any]:
    """evaluator name -> its SentinelSet (parsed against that evaluator's rubric); empty when the
    check is off. A bad file is `invalid_config` naming the file and line, before anything is written. Conversation
    evaluators have none: a sentinel item is one graded answer, not a conversation."""
    from verdict.judges.rubric import DEFAULT_RUBRIC
    from verdict.sentinel import SentinelError, load_sentinel_set

    if settings.file is None:
        return {}
    sets: dict[str, Any] = {}
    for evaluator in evaluators:
        if isinstance(evaluator, JudgeEvaluator) and evaluator.unit == TURN and not evaluator.needs_trajectory:
            try:
                sets[evaluator.name] = load_sentinel_set(settings.file, rubric=evaluator.rubric or DEFAULT_RUBRIC)
            except SentinelError as exc:
                raise DaemonError("invalid_config", f"sentinel.file (evaluator {evaluator.name!r}): {exc}") from None
            _check_readable(evaluator, sets[evaluator.name])
    return sets


def _check_readable(evaluator: JudgeEvaluator, sentinel_set: Any) -> None:
    """An example is graded with the conversation so far and tool trajectory it was labelled with (the judge's input
    the reviewer saw): an evaluator not built to read one would grade another input than the one labelled, so such
    a set is `invalid_config` for it."""
    for example in sentinel_set:
        for what, given, bound in (("history", example.history, evaluator.history_tokens),
                                   ("trajectory", example.trajectory, evaluator.trajectory_steps)):
            if given and given.strip() and not bound:
                setting = ("[conversations] history_tokens is 0" if what == "history" else
                           "it has no trajectory = true")
                raise DaemonError("invalid_config", f"sentinel.file (evaluator {evaluator.name!r}): "
                                  f"{sentinel_set.source}: example {example.id!r} was labelled with its {what}, "
                                  f"which this evaluator is not shown ({setting}); export its own set "
                                  f"(verdict review export-sentinel --evaluator {evaluator.name})")


class HealthGate:
    """Runs and records the sentinel check; `require` raises `judge_unhealthy` unless healthy. A healthy
    result is reused for `recheck_seconds` per (tenant, evaluator); an unhealthy one never is."""

    def __init__(self, settings: Sentinel, evaluators: list[Evaluator], concurrency: int = 16) -> None:
        self.settings = settings
        self.sets = load_sets(settings, evaluators)
        self.concurrency = concurrency
        self._healthy_until: dict[tuple[str, str], float] = {}
        self._guard = threading.Lock()

    def require(self, store: StateStore, tenant: str, evaluator: Evaluator) -> dict[str, Any] | None:
        """The stored health record (None when the check does not apply or a healthy one is fresh)."""
        sentinel_set = self.sets.get(evaluator.name)
        key = (tenant, evaluator.fingerprint)
        with self._guard:
            if sentinel_set is None or self._healthy_until.get(key, -1.0) > time.monotonic():
                return None
        record = self.check(store, tenant, cast(JudgeEvaluator, evaluator), sentinel_set)  # only those have sets
        if record["status"] != "healthy":
            raise unhealthy_error([record])
        with self._guard:
            self._healthy_until[key] = time.monotonic() + self.settings.recheck_seconds
        return record

    def require_all(self, store: StateStore, tenant: str, evaluators: list[Evaluator]) -> list[dict[str, Any]]:
        """Check every evaluator (each record is stored), then fail naming every unhealthy one."""
        records = [self.check(store, tenant, cast(JudgeEvaluator, e), self.sets[e.name])  # only those have sets
                   for e in evaluators if e.name in self.sets]
        unhealthy = [r for r in records if r["status"] != "healthy"]
        if unhealthy:
            raise unhealthy_error(unhealthy)
        return records

    def check(self, store: StateStore, tenant: str, evaluator: JudgeEvaluator, sentinel_set: Any) -> dict[str, Any]:
        from verdict.sentinel import evaluate_judge_health
        from verdict.tracing import workload_context

        with workload_context(JUDGE_WORKLOAD):  # the judge's own calls are never sampled as traffic
            health = evaluate_judge_health(evaluator.judge, sentinel_set, minimum_examples=self.settings.minimum_examples,
                                           threshold=self.settings.threshold, max_workers=self.concurrency)
        # The evaluator's fingerprint, not its raw judge's: with conversation history on, the evaluator's wraps the
        # judge's with the history budget, and judgments carry the evaluator's.
        record = {**health.to_dict(), "evaluator": evaluator.name, "evaluator_fingerprint": evaluator.fingerprint,
                  "sentinel_file": sentinel_set.source, "checked_at": datetime.now(UTC).replace(tzinfo=None)}
        insert_check(store, HealthCheck(
            tenant, uuid.uuid4().hex, evaluator.name, evaluator.fingerprint, health.sentinel_fingerprint,
            sentinel_set.source, record["status"], record["reason"], record["examples"], record["usable"],
            record["errors"], record["passed"], record["pass_rate"], record["pass_rate_low"], record["pass_rate_high"],
            record["threshold"], record["minimum_examples"], json.dumps(record["dimensions"]),
            json.dumps(record["results"]), record["checked_at"]))
        return record


def unhealthy_error(records: list[dict[str, Any]]) -> DaemonError:
    described = "; ".join(f"evaluator {r['evaluator']!r} is {r['status']} ({r['reason']})" for r in records)
    return DaemonError("judge_unhealthy", f"{described} on sentinel set {records[0]['sentinel_file']}",
                       {"unhealthy": [{"evaluator": r["evaluator"], "fingerprint": r["evaluator_fingerprint"],
                                       "status": r["status"], "reason": r["reason"]} for r in records]})


def summary(record: dict[str, Any]) -> dict[str, Any]:
    """The health fields the pipeline's JSON summary shows (the full record is in state.duckdb)."""
    return {k: record[k] for k in ("evaluator", "evaluator_fingerprint", "sentinel_fingerprint", "status", "reason",
                                   "examples", "usable", "errors", "passed", "pass_rate", "pass_rate_low",
                                   "pass_rate_high", "threshold", "minimum_examples")}
