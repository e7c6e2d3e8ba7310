"""The tool trajectory of a judged agent run: the tool calls its graded model call saw or made, and their results.

An agent's last model call carries the run so far in its input messages: the assistant's `tool_call` parts (name,
id, arguments) and the `tool_call_response` parts answering them (by id; from a `tool` message, or a `user`
message in Anthropic's, Bedrock's and Strands' convention). Its output may end on a tool call nobody answered.
These steps, in order, are the trajectory (docs/conversations.md, "Judged-item shapes"): read from the messages
the sampler already reads (redacted as stored), no span tree walk. A `final_answer` tool call is the answer
(material.final_answer), not a step.

Bounded: each argument or result text to `MAX_CHARS`, the newest `MAX_STEPS` steps stored, and of those the newest
`[conversations] trajectory_steps` shown (the judge is told how many were left out). The deterministic check
`unanswered` (tool calls without a result) is taken over every step, shown or not. Stored with the pick in
`sampled_traces.history` beside the conversation so far (material.py, `background_json`): no column of its own.
"""

from __future__ import annotations

import json
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


def _parts(messages: list[dict], roles: tuple[str | None, ...] | None = None) -> list[dict]:
    return [p for m in messages if roles is None or m.get("role") in roles
            for p in _listed(m.get("parts")) if isinstance(p, dict)]


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def trajectory_of(inputs: list[dict], outputs: list[dict]) -> Trajectory | None:
    """The trajectory of a model call from its input and output messages (parsed semconv messages); None when
    they hold no tool call or result (a plain chat call: the judged item has no trajectory)."""
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
                              _bounded(part.get("response", part.get("content", "")))))
    if not steps:
        return None
    names = [c.name for c in pending]
    unanswered = tuple(f"{c.name}#{c.call_id}" if names.count(c.name) > 1 and c.call_id else c.name for c in pending)
    return Trajectory(tuple(steps), 0, unanswered).within(MAX_STEPS)
