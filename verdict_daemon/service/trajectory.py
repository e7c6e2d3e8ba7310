"""The tool trajectory of a judged agent run: the tool calls its graded model call saw or made, and their results.

An agent's last model call carries the run so far in its input messages: the assistant's `tool_call` parts (name,
id, arguments) and the `tool_call_response` parts answering them (by id; from a `tool` message, or a `user`
message in Anthropic's, Bedrock's and Strands' convention). Its output may end on a tool call nobody answered.
These steps, in order, are the trajectory (docs/conversations.md, "Judged-item shapes"): read from the messages
the sampler already reads (redacted as stored). Frameworks that record a tool execution as a span of its own
(GenAI `execute_tool`, OpenInference TOOL, OpenLLMetry tool spans: `ToolSpan`) add the executions no message shows
(matched by call id, else by name and arguments), before the message steps. A `final_answer` tool call is the
answer (material.final_answer), not a step.

Bounded: each argument or result text to `MAX_CHARS`, the newest `MAX_STEPS` steps stored, and of those the newest
`[conversations] trajectory_steps` shown (the judge is told how many were left out). The deterministic check
`unanswered` (tool calls without a result, and tool spans that ended in error) is taken over every step, shown or
not; a tool span that records no result but did not fail answered its call ("(result not recorded)"). Stored with the pick in
`sampled_traces.history` beside the conversation so far (material.py, `background_json`): no column of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verdict_daemon.config import (
    MAX_TRAJECTORY_STEPS as MAX_STEPS,  # the newest steps stored; older: counted
)

MAX_CHARS = 500  # of one step's arguments or result text
TOOL_CALL, TOOL_RESULT = "tool_call", "tool_result"
# Agents that answer by calling a tool (smolagents' ToolCallingAgent): that call's `answer` argument is the answer.
FINAL_ANSWER_TOOL = "final_answer"


@dataclass(frozen=True)
class Step:
    """One step: a tool call (its arguments) or a tool result (the called tool's name when matched by id)."""

    kind: str  # TOOL_CALL | TOOL_RESULT
    name: str  # the tool's name; "" for a result whose call is not in the messages
    call_id: str  # "" when the instrumentation recorded none
    content: str  # the arguments as JSON, or the result text; at most MAX_CHARS (cut with "…")

    def text(self, number: int) -> str:
        if self.kind == TOOL_CALL:
            return f"[step {number}] call {self.name or '(unnamed tool)'}: {self.content}"
        return f"[step {number}] result of {self.name or '(unknown call)'}: {self.content}"


@dataclass(frozen=True)
class Trajectory:
    """The steps shown (the newest, oldest first), how many older ones were left out, and the check."""

    steps: tuple[Step, ...]
    omitted: int = 0
    unanswered: tuple[str, ...] = ()  # the tool calls without a result (name, or name#id when ids repeat names)

    def within(self, max_steps: int) -> Trajectory:
        """The newest `max_steps` steps (the older ones counted as left out)."""
        if len(self.steps) <= max_steps:
            return self
        cut = len(self.steps) - max_steps
        return Trajectory(self.steps[cut:], self.omitted + cut, self.unanswered)

    def text(self) -> str:
        """The trajectory as the judge reads it: the steps, then the tool calls that got no result."""
        lines = [f"({self.omitted} earlier step{'s' if self.omitted != 1 else ''} not shown)"] if self.omitted else []
        lines += [step.text(self.omitted + i) for i, step in enumerate(self.steps, 1)]
        if self.unanswered:
            lines.append(f"(no result for: {', '.join(self.unanswered)})")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [[s.kind, s.name, s.call_id, s.content] for s in self.steps], "omitted": self.omitted,
                "unanswered": list(self.unanswered)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        """A stored trajectory (written by `to_dict`)."""
        return cls(tuple(Step(*step) for step in data["steps"]), data["omitted"], tuple(data["unanswered"]))


def trajectory_fingerprint(fingerprint: str, max_steps: int) -> str:
    """An evaluator's fingerprint when it is shown up to `max_steps` steps of a trajectory (the judge reads other
    material: results are never pooled with those judged without, or with another bound). 0 leaves it as it was."""
    if max_steps == 0:
        return fingerprint
    from verdict.judges.fingerprint import combined_fingerprint

    return combined_fingerprint("tool-trajectory", [fingerprint], {"trajectory_steps": max_steps,
                                                                   "max_chars": MAX_CHARS})


def _bounded(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def tool_response(part: dict) -> Any:
    """A `tool_call_response` part's result: `response` (the GenAI conventions), `result` (pydantic-ai) or
    `content`; "" when none."""
    return next((part[k] for k in ("response", "result", "content") if part.get(k) is not None), "")


def _parts(messages: list[dict], roles: tuple[str | None, ...] | None = None) -> list[dict]:
    return [p for m in messages if roles is None or m.get("role") in roles
            for p in _listed(m.get("parts")) if isinstance(p, dict)]


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# Where a tool span keeps each field, in order of preference: the GenAI conventions (`execute_tool` spans), then
# OpenInference (TOOL spans), then OpenLLMetry (traceloop tool spans).
_SPAN_FIELDS = {
    "name": ("gen_ai.tool.name", "tool.name", "traceloop.entity.name"),
    "call_id": ("gen_ai.tool.call.id", "tool.call_id"),
    "arguments": ("gen_ai.tool.call.arguments", "input.value", "traceloop.entity.input"),
    "result": ("gen_ai.tool.call.result", "output.value", "traceloop.entity.output"),
}
# Wrapper keys instrumentations put around a Python tool's keyword arguments (smolagents, LlamaIndex, Traceloop).
_WRAPPERS = {"args", "kwargs", "sanitize_inputs_outputs"}


@dataclass(frozen=True)
class ToolSpan:
    """One tool execution as a span recorded it (`execute_tool`, an OpenInference TOOL or an OpenLLMetry tool span):
    what `tool_span` read from its attributes, redacted as stored."""

    name: str
    call_id: str
    arguments: Any  # as recorded (JSON text or a value); None when not recorded
    result: Any  # None when not recorded
    failed: bool  # the span's status is ERROR: the call got no result


def tool_span(attributes: dict[str, Any], failed: bool) -> ToolSpan | None:
    """The tool execution a tool span's attributes describe (None without a tool name)."""
    def first(field: str) -> Any:
        return next((attributes[k] for k in _SPAN_FIELDS[field] if attributes.get(k) not in (None, "")), None)

    name = first("name")
    if not isinstance(name, str) or not name:
        return None
    call_id, result = first("call_id"), first("result")
    message = _langchain_tool_message(result)
    if message is not None:  # LangChain (OpenInference): the result is the ToolMessage, which names the call
        call_id, result = call_id or message.get("tool_call_id"), message.get("content")
    return ToolSpan(name, call_id if isinstance(call_id, str) else "", first("arguments"), result, failed)


def _langchain_tool_message(result: Any) -> dict | None:
    """A serialised LangChain ToolMessage (`{"type": "tool", "data": {"content", "tool_call_id", ...}}`), else None."""
    if not isinstance(result, str) or not result.startswith("{"):
        return None
    try:
        value = json.loads(result)
    except ValueError:
        return None
    data = value.get("data") if isinstance(value, dict) and value.get("type") == "tool" else None
    return data if isinstance(data, dict) and "tool_call_id" in data else None


def _unwrapped(arguments: Any) -> Any:
    """Recorded arguments as the tool got them: parsed JSON, a Python tool's wrapper removed."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    if isinstance(arguments, dict) and "kwargs" in arguments and set(arguments) <= _WRAPPERS:
        return arguments["kwargs"]
    return arguments


def _arguments_key(arguments: Any) -> str:
    """Arguments compared across messages and spans (canonical JSON of `_unwrapped`)."""
    return json.dumps(_unwrapped(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _span_steps(spans: list[ToolSpan], calls: list[Step]) -> tuple[list[Step], list[str]]:
    """The steps of the tool spans (in the order given: start time) that no message call already shows, matched by
    call id, else by name and arguments; and the names of those that failed (no result)."""
    keys = {(c.name, _arguments_key(c.content)) for c in calls}
    ids = {c.call_id for c in calls if c.call_id}
    steps: list[Step] = []
    failed: list[str] = []
    for span in spans:
        if span.name == FINAL_ANSWER_TOOL or (span.call_id in ids if span.call_id else
                                              (span.name, _arguments_key(span.arguments)) in keys):
            continue
        steps.append(Step(TOOL_CALL, span.name, span.call_id,
                          _bounded(_unwrapped(span.arguments)) if span.arguments is not None
                          else "(arguments not recorded)"))
        if span.failed:
            failed.append(span.name)
        else:
            steps.append(Step(TOOL_RESULT, span.name, span.call_id,
                              _bounded(span.result) if span.result is not None else "(result not recorded)"))
    return steps, failed


def trajectory_of(inputs: list[dict], outputs: list[dict], spans: Sequence[ToolSpan] = ()) -> Trajectory | None:
    """The trajectory of a model call from its input and output messages (parsed semconv messages) and the tool
    spans of its trace (start order); None when they hold no tool call or result (a plain chat call: the judged
    item has no trajectory). Span steps no message shows come first: the graded call's messages are the run's
    latest part."""
    steps: list[Step] = []
    pending: list[Step] = []  # calls without a result yet, in order
    for part in _parts(inputs) + _parts(outputs, ("assistant", None)):
        call_id = _text(part.get("id"))
        if part.get("type") == TOOL_CALL and part.get("name") != FINAL_ANSWER_TOOL:
            steps.append(step := Step(TOOL_CALL, _text(part.get("name")), call_id, _bounded(part.get("arguments", {}))))
            pending.append(step)
        elif part.get("type") == "tool_call_response":
            # Matched by id; a result without one answers the oldest call still waiting.
            answered = next((c for c in pending if c.call_id == call_id), None) if call_id else \
                (pending[0] if pending else None)
            if answered is not None:
                pending.remove(answered)
            steps.append(Step(TOOL_RESULT, answered.name if answered else "", call_id,
                              _bounded(tool_response(part))))
    from_spans, failed = _span_steps(list(spans), [s for s in steps if s.kind == TOOL_CALL])
    steps = from_spans + steps
    if not steps:
        return None
    names = [c.name for c in pending]
    unanswered = tuple(f"{c.name}#{c.call_id}" if names.count(c.name) > 1 and c.call_id else c.name for c in pending)
    return Trajectory(tuple(steps), 0, tuple(failed) + unanswered).within(MAX_STEPS)
