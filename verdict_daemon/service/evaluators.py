"""Evaluators the daemon runs: a rubric `Judge`, a `JudgeEnsemble` (judge_evaluators.py), or any judge graph
(`module:attribute`, GraphEvaluator below); `cycle.build_evaluator` picks one from the config.

Each is wrapped as an `Evaluator`: a name, a fingerprint (the evaluator identity every judgment
carries; different fingerprints are never pooled), the full definition stored under that
fingerprint, and `evaluate(material) -> Outcome` with one verdict per dimension. An outcome with an
`error_code` is an ERROR attempt: excluded from PASS/FAIL, retried on a later run up to a limit.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from verdict.models.base import CONFIGURATION_KINDS, Model, Usage
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.conversation import CONVERSATION, TURN, conversation_fingerprint
from verdict_daemon.service.history import history_fingerprint
from verdict_daemon.service.material import Material, bound_entries
from verdict_daemon.service.trajectory import trajectory_fingerprint

VERDICTS = ("PASS", "FAIL", "UNCLEAR", "ERROR")
JUDGE_WORKLOAD = "judge"  # verdict.workload of the daemon's own judge calls; sampling excludes it
# Attempt error codes (judgment_attempts.error_code). `provider_unavailable` attempts do not count
# towards the retry limit: an outage says nothing about the trace. `model_config_error` is a server that
# is up but refuses what the judge asks of it (a parameter it does not support, the same refusal twice):
# no amount of waiting fixes it, the judge's model options do.
PROVIDER_UNAVAILABLE: Final = "provider_unavailable"
MODEL_CONFIG_ERROR = "model_config_error"
_OUTAGE_KINDS = ("connection", "timeout", "server_error", "rate_limited", "auth")


@dataclass(frozen=True)
class DimensionVerdict:
    dimension: str
    value: str | None  # PASS / FAIL / UNCLEAR / ERROR; None when the dimension is a score
    score: float | None = None
    reason: str | None = None
    # An ensemble's tally, verdict -> components that gave it (only verdicts that got a vote); None
    # for a single judge or a graph. Stored as dimension_verdicts.votes; review routing reads it.
    votes: Mapping[str, int] | None = None


@dataclass(frozen=True)
class Outcome:
    verdicts: tuple[DimensionVerdict, ...] = ()
    error_code: str | None = None  # provider_unavailable, model_config_error, model_error, invalid_reply, evaluator_error
    error_message: str | None = None
    usage: Usage = field(default_factory=Usage)


class Evaluator(Protocol):
    name: str
    fingerprint: str
    definition: Mapping[str, Any]
    needs_trajectory: bool  # grades agent runs only: a trace without a tool trajectory is NO_CONTENT for it
    unit: str  # what it judges: "turn" (each sampled trace) or "conversation" (each closed conversation)

    def evaluate(self, material: Material) -> Outcome: ...


def load_target(target: str) -> Any:
    """The object named by 'package.module:attribute'."""
    module_name, _, attribute = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # user code: ImportError, AttributeError, or whatever its import raises
        raise DaemonError("evaluator_error", f"cannot load {target!r}: {type(exc).__name__}: {str(exc)[:300]}") from None
    return obj


def resolve_judge_model(spec: str) -> Model:
    """A model string ("openai/gpt-4o-mini") or 'module:attribute' naming a Model or a factory of one.
    (Its calls carry the judge workload: `judging._evaluate` runs every evaluation inside it.)"""
    if ":" in spec and "/" not in spec.partition(":")[0]:
        obj = load_target(spec)
        model = obj if isinstance(obj, Model) else obj()
        if not isinstance(model, Model):
            raise DaemonError("evaluator_error", f"{spec!r} is not a verdict Model (or a function returning one)")
        return model
    from verdict.models.registry import resolve_model

    try:
        return resolve_model(spec)
    except ValueError as exc:  # an unknown model string, or no API key in the environment
        raise DaemonError("invalid_config", str(exc)) from None


_MODEL_ERROR = re.compile(r"\bmodel: (\w+)")


MAX_REPLY_KEPT = 2000  # characters of an unusable reply kept in the attempt's error message


def error_outcome(message: str, usage: Usage, reply: str | None = None) -> Outcome:
    """Classify an engine error text ('judge: model: connection: ...') as an attempt error; the unusable
    reply, when there was one, follows the reason, redacted (it becomes `judgments.reason` and the UI's)."""
    model_error = _MODEL_ERROR.search(message)
    if model_error:
        kind = model_error.group(1)
        code = PROVIDER_UNAVAILABLE if kind in _OUTAGE_KINDS \
            else MODEL_CONFIG_ERROR if kind in CONFIGURATION_KINDS else "model_error"
    elif "extraction: " in message:
        code = "invalid_reply"
    else:
        code = "evaluator_error"
    text = message[:500]
    if reply is not None:
        from verdict.redact import redact_text

        text += f" | the reply (redacted): {redact_text(reply)[:MAX_REPLY_KEPT]}"
    return Outcome(error_code=code, error_message=text, usage=usage)


class GraphEvaluator:
    """A user judge graph. Every field of the final unit's output is a dimension: booleans become
    PASS/FAIL, the strings PASS/FAIL/UNCLEAR are kept, numbers are scores; other fields (explanations)
    are reasons. The sample is `Material.as_sample()`; with `history_tokens` > 0 its `history` is the conversation
    so far within that budget (`{source.history}`), else ""; with `trajectory_steps` > 0 its `trajectory` the newest
    steps of an agent run's tool trajectory (`{source.trajectory}`), else "". With `conversation_tokens` > 0 it
    judges closed conversations: `{source.conversation}` is the conversation's turns within that budget."""

    def __init__(self, name: str, target: str, pipeline: Any, history_tokens: int = 0,
                 trajectory_steps: int = 0, conversation_tokens: int = 0) -> None:
        from verdict.graph import Pipeline
        from verdict.graph.errors import ConfigurationError

        if not isinstance(pipeline, Pipeline):
            raise DaemonError("evaluator_error", f"{target!r} is not a verdict Pipeline")
        try:
            graph = pipeline.build()
        except ConfigurationError as exc:
            raise DaemonError("evaluator_error", f"{target!r}: {exc}") from None
        self.name = name
        self._pipeline = pipeline
        self.needs_trajectory = False
        self.unit = CONVERSATION if conversation_tokens else TURN
        self.history_tokens = 0 if conversation_tokens else history_tokens
        self.trajectory_steps = 0 if conversation_tokens else trajectory_steps
        self.conversation_tokens = conversation_tokens
        self.definition: Mapping[str, Any] = {
            "kind": "graph", "target": target, "units": [_describe(node) for node in graph.nodes],
            **({"unit": CONVERSATION} if conversation_tokens else {}),
            **bound_entries(self.history_tokens, self.trajectory_steps, conversation_tokens)}
        self.fingerprint = evaluator_fingerprint(_graph_fingerprint(self.definition), history_tokens,
                                                 trajectory_steps, conversation_tokens)

    def evaluate(self, material: Material) -> Outcome:
        from pydantic import BaseModel

        row = self._pipeline.run(material.as_sample(self.history_tokens, self.trajectory_steps,
                                                    self.conversation_tokens), max_workers=1)
        if not row.ok or not isinstance(row.output, BaseModel):
            reply = next((e.reply for e in row.errors.values() if e.reply is not None), None)
            return error_outcome(row.error or "the graph produced no output", row.usage, reply)
        verdicts, reason = [], None
        for key, value in row.output.model_dump().items():
            if isinstance(value, bool):
                verdicts.append(DimensionVerdict(key, "PASS" if value else "FAIL"))
            elif isinstance(value, str) and value.upper() in VERDICTS:
                verdicts.append(DimensionVerdict(key, value.upper()))
            elif isinstance(value, int | float):
                verdicts.append(DimensionVerdict(key, None, float(value)))
            elif isinstance(value, str):
                reason = value[:1000]
        if not verdicts:
            return Outcome(error_code="evaluator_error", usage=row.usage,
                           error_message="the graph's output has no verdict or score field")
        return Outcome(tuple(DimensionVerdict(v.dimension, v.value, v.score, reason) for v in verdicts)
                       + tool_call_check(material, self.trajectory_steps), usage=row.usage)


def evaluator_fingerprint(base: str, history_tokens: int, trajectory_steps: int, conversation_tokens: int) -> str:
    """An evaluator's fingerprint from its judge's or graph's: a conversation evaluator's under its transcript budget,
    a turn evaluator's under its history budget and trajectory bound (each leaves it as it was at 0)."""
    if conversation_tokens:
        return conversation_fingerprint(base, conversation_tokens)
    return trajectory_fingerprint(history_fingerprint(base, history_tokens), trajectory_steps)


TOOL_CALL_CHECK = "tool_calls_answered"  # the deterministic dimension of an agent run (docs/conversations.md)


def tool_call_check(material: Material, trajectory_steps: int) -> tuple[DimensionVerdict, ...]:
    """The deterministic check of an agent run, as a dimension verdict: PASS when every tool call of its trajectory
    got a result, FAIL naming those that did not. Only for an evaluator shown trajectories (`trajectory_steps` > 0)
    and an item that has one; none otherwise."""
    trajectory = material.trajectory
    if trajectory is None or trajectory_steps == 0:
        return ()
    if not trajectory.unanswered:
        return (DimensionVerdict(TOOL_CALL_CHECK, "PASS", None, "every tool call got a result"),)
    return (DimensionVerdict(TOOL_CALL_CHECK, "FAIL", None, f"no result for: {', '.join(trajectory.unanswered)}"),)


def _describe(node: Any) -> dict[str, Any]:
    from verdict.judges.fingerprint import model_identity

    template = None
    if node.template is not None:
        template = [[s.role, "".join(p if isinstance(p, str) else "{" + p.source + "}" for p in s.pieces)]
                    for s in node.template.sections]
    schema = node.output_schema.model_json_schema() if node.output_schema is not None else None
    return {"path": node.path, "unit": type(node.unit).__name__, "model": node.model.name if node.model else None,
            "endpoint": model_identity(node.model) if node.model else None,
            "params": dict(node.params), "prompt": template, "output_schema": schema}


def _graph_fingerprint(definition: Mapping[str, Any]) -> str:
    from verdict.judges.fingerprint import evaluator_fingerprint

    units = definition["units"]
    return evaluator_fingerprint(
        kind="graph", models=[u["model"] for u in units if u["model"]], rubric=None,
        identities=[u["endpoint"] for u in units if u["model"]],
        prompts={u["path"]: str(u["prompt"]) for u in units if u["prompt"]},
        params={u["path"]: u["params"] for u in units if u["params"]},
        contract={"target": definition["target"], "outputs": {u["path"]: u["output_schema"] for u in units}})
