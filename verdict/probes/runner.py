"""Run a probe suite: ask the target, then judge each expectation one dimension at a time.

1. Every probe's conversation runs against the target (in parallel across probes): the prompt after
   an optional system message, then the follow-up turn if the probe has one. A failed or truncated
   target reply ends the probe: every declared expectation becomes ERROR (it stays in the denominators).
2. Each expected dimension is graded by its own one-dimension rubric `Judge` (verdict.judges), so a
   verdict on one dimension cannot lean on another; each expectation records that judge's fingerprint.
   The judge sees the conversation as the question, the final reply as the answer, and the probe's
   `reference` as the context.
Everything kept from the target, the judge and the providers is redacted (verdict.redact).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from verdict.judges.judge import GradingItem, Judge
from verdict.judges.rubric import Rubric
from verdict.models.base import Message, Model, ModelError, ModelRequest
from verdict.models.registry import resolve_model
from verdict.probes.artifact import JUDGE_METHOD_VERSION, METRIC_SCHEMA_VERSION, ProbeRun
from verdict.probes.results import ExpectationResult, Outcome, ProbeResult, probe_outcome
from verdict.probes.suite import Probe, ProbeSuite
from verdict.redact import redact_text

_ROLE_TITLES = {"system": "SYSTEM", "user": "USER", "assistant": "ASSISTANT"}


@dataclass(frozen=True, slots=True)
class Conversation:
    """A probe's exchange with the target; `error` set when a turn failed (then `answer` is None)."""

    messages: tuple[Message, ...]
    answer: str | None
    error: str | None = None


def converse(probe: Probe, target: Model, params: dict[str, Any]) -> Conversation:
    messages = ([Message("system", probe.system)] if probe.system else []) + [Message("user", probe.prompt)]
    reply = ""  # each stage's reply; the loop runs at least once
    for stage in ("target", "follow_up") if probe.follow_up else ("target",):
        if stage == "follow_up" and probe.follow_up:  # (always set at this stage: narrows its type)
            messages += [Message("assistant", reply), Message("user", probe.follow_up)]
        try:
            response = target.complete(ModelRequest(tuple(messages), params=params))
        except ModelError as exc:
            return Conversation(tuple(messages), None, f"{stage}: {exc}")
        except Exception as exc:  # a user-supplied Model's bug: its text may hold anything, keep the type
            return Conversation(tuple(messages), None, f"{stage}: internal: {type(exc).__name__}")
        if response.truncated:
            return Conversation(tuple(messages) + (Message("assistant", response.text),), None,
                                f"{stage}: the reply was cut off (finish_reason {response.finish_reason})")
        reply = response.text
    return Conversation(tuple(messages), reply)


def grading_item(probe: Probe, conversation: Conversation) -> GradingItem:
    """The final reply is the answer; the conversation before it is the question."""
    if len(conversation.messages) == 1:
        query = conversation.messages[0].content
    else:
        query = "\n\n".join(f"{_ROLE_TITLES[m.role]}:\n{m.content}" for m in conversation.messages)
    return GradingItem(conversation.answer or "", query, probe.reference)


def dimension_judges(suite: ProbeSuite, judge_model: Model, **judge_options: Any) -> dict[str, Judge]:
    """One single-dimension Judge per expected dimension (judge method 2)."""
    used = dict.fromkeys(e.dimension for p in suite.probes for e in p.expectations)
    return {name: Judge(judge_model, Rubric(suite.rubric.name, suite.rubric.version, (suite.rubric.dimension(name),)),
                        name=f"probe-judge-{name}", **judge_options) for name in used}


def run_suite(suite: ProbeSuite, target: str | Model, judge: str | Model, *, min_pass_rate: float = 1.0,
              min_category_pass_rate: float | None = None, max_workers: int = 8,
              progress: Callable[[str], None] | None = None, **judge_options: Any) -> ProbeRun:
    """Run every probe of `suite` against `target`, judged by `judge`; `judge_options` go to each Judge
    (temperature, max_tokens, retries, ...). `progress(message)` is told when each phase ends."""
    for label, value in (("min_pass_rate", min_pass_rate), ("min_category_pass_rate", min_category_pass_rate)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not 0.0 <= value <= 1.0):
            raise ValueError(f"{label} must be in [0, 1], got {value!r}")
    target_model, judge_model = resolve_model(target), resolve_model(judge)
    judges = dimension_judges(suite, judge_model, **judge_options)  # configuration errors before any call
    started = datetime.now(UTC)
    params = dict(suite.target_params)
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(suite.probes)))) as pool:
        conversations = list(pool.map(lambda p: converse(p, target_model, params), suite.probes))
    if progress is not None:
        failed = sum(c.error is not None for c in conversations)
        progress(f"target: {len(conversations)} probe(s) run, {failed} failed")
    verdicts = _judge(suite.probes, conversations, judges, max_workers)
    if progress is not None:
        progress(f"judge: {len(verdicts)} expectation(s) graded")
    results = tuple(_result(index, probe, conversation, judges, verdicts)
                    for index, (probe, conversation) in enumerate(zip(suite.probes, conversations, strict=True)))
    return ProbeRun(METRIC_SCHEMA_VERSION, JUDGE_METHOD_VERSION, uuid.uuid4().hex, started.isoformat(),
                    datetime.now(UTC).isoformat(), suite.name, suite.version, suite.fingerprint,
                    target_model.name, judge_model.name, float(min_pass_rate),
                    None if min_category_pass_rate is None else float(min_category_pass_rate), results)


def _judge(probes: Sequence[Probe], conversations: Sequence[Conversation], judges: dict[str, Judge],
           max_workers: int) -> dict[tuple[int, str], Any]:
    """(probe index, dimension) -> Judgment, one engine run per dimension over the probes that reached it."""
    verdicts: dict[tuple[int, str], Any] = {}
    for dimension, judge in judges.items():
        wanted = [i for i, (p, c) in enumerate(zip(probes, conversations, strict=True))
                  if c.error is None and any(e.dimension == dimension for e in p.expectations)]
        if not wanted:
            continue
        judgments = judge.grade_many([grading_item(probes[i], conversations[i]) for i in wanted],
                                     max_workers=max_workers)
        verdicts.update({(i, dimension): j for i, j in zip(wanted, judgments, strict=True)})
    return verdicts


def _result(index: int, probe: Probe, conversation: Conversation, judges: dict[str, Judge],
            verdicts: dict[tuple[int, str], Any]) -> ProbeResult:
    expectations = []
    for expectation in probe.expectations:
        fingerprint = judges[expectation.dimension].fingerprint
        if conversation.error is not None:
            expectations.append(ExpectationResult(expectation.dimension, expectation.label, Outcome.ERROR, None,
                                                  fingerprint, error=redact_text(conversation.error)))
            continue
        judgment = verdicts[(index, expectation.dimension)]
        if not judgment.is_usable:
            reason = f"judge: {judgment.error or judgment.status}"
            expectations.append(ExpectationResult(expectation.dimension, expectation.label, Outcome.ERROR, None,
                                                  fingerprint, error=redact_text(reason)))
            continue
        graded = judgment[expectation.dimension]
        outcome = Outcome.PASS if graded.verdict.value == expectation.label else Outcome.FAIL
        expectations.append(ExpectationResult(expectation.dimension, expectation.label, outcome,
                                              graded.verdict.value, fingerprint, redact_text(graded.rationale)))
    transcript = [(m.role, redact_text(m.content)) for m in conversation.messages]
    if conversation.answer is not None:
        transcript.append(("assistant", redact_text(conversation.answer)))
    error = None if conversation.error is None else redact_text(conversation.error)
    error = error or next((e.error for e in expectations if e.error), None)
    return ProbeResult(probe.name, probe.category, probe.weight, probe_outcome(expectations), tuple(expectations),
                       tuple(transcript), error)
