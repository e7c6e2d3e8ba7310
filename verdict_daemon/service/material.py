"""What a judge grades, taken from one LLM span: the user's query, the response, and any context; for a turn of a
conversation, also the conversation so far (service/history.py), and for an agent run its tool trajectory
(service/trajectory.py), each shown apart from the graded answer; for a closed conversation judged as a whole, its
turns (service/conversation.py).

Span content columns hold GenAI semantic-convention messages (already redacted by the SDK and the
collector): `[{"role": ..., "parts": [{"type": "text", "content": ...}, ...]}, ...]`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from verdict_daemon.service.conversation import Transcript
from verdict_daemon.service.history import History
from verdict_daemon.service.trajectory import (
    FINAL_ANSWER_TOOL,
    ToolSpan,
    Trajectory,
    tool_response,
    trajectory_of,
)


@dataclass(frozen=True)
class Material:
    trace_id: str
    started_at: datetime  # trace start, naive UTC
    query: str
    response: str
    context: str  # system instructions and tool results the answer could rely on; "" when none
    history: History | None = None  # its conversation's earlier turns, as sampled; None: in no conversation
    trajectory: Trajectory | None = None  # its tool calls and results, as sampled; None: no tool step
    conversation: Transcript | None = None  # a conversation unit's turns, as sampled; None: a trace

    def history_text(self, budget_tokens: int) -> str:
        """The conversation so far within `budget_tokens` ("" without a conversation, for a first turn, or at 0)."""
        return self.history.within(budget_tokens).text() if self.history and budget_tokens > 0 else ""

    def trajectory_text(self, max_steps: int) -> str:
        """The newest `max_steps` steps of the tool trajectory ("" without one, or at 0)."""
        return self.trajectory.within(max_steps).text() if self.trajectory and max_steps > 0 else ""

    def conversation_text(self, budget_tokens: int) -> str:
        """A conversation unit's turns within `budget_tokens` ("" for a trace)."""
        return self.conversation.within(budget_tokens).text() if self.conversation else ""

    @property
    def has_content(self) -> bool:
        """Whether a judge has something to grade: an answer, and a question or context it answers (a conversation:
        a turn with text). Without (content capture off, an unrecognised dialect) it is `no_content`, never judged."""
        if self.conversation is not None:
            return bool(self.conversation.turns)
        return bool(self.response.strip()) and bool(self.query.strip() or self.context.strip())

    def as_sample(self, history_tokens: int = 0, trajectory_steps: int = 0,
                  conversation_tokens: int = 0) -> dict[str, str]:
        """The sample a judge graph receives (`{source.query}`, `{source.response}`, `{source.context}`,
        `{source.history}`: the conversation so far within `history_tokens`, `{source.trajectory}`: the newest
        `trajectory_steps` steps of the tool trajectory, `{source.conversation}`: a conversation unit's turns within
        `conversation_tokens`; "" when none)."""
        return {"trace_id": self.trace_id, "query": self.query, "response": self.response, "context": self.context,
                "history": self.history_text(history_tokens), "trajectory": self.trajectory_text(trajectory_steps),
                "conversation": self.conversation_text(conversation_tokens)}


# An evaluator's bounds on what of its material it shows the judge (Material.as_sample's arguments), recorded under
# these keys in its registered definition (absent: 0) and part of its fingerprint.
BOUNDS = ("history_tokens", "trajectory_steps", "conversation_tokens")
UNBOUNDED = 1 << 62  # the bound of an evaluator whose definition is not on record: everything stored is shown


def bound_entries(history_tokens: int, trajectory_steps: int, conversation_tokens: int) -> dict[str, int]:
    """An evaluator's bounds as its definition records them: the ones above 0."""
    return {k: v for k, v in zip(BOUNDS, (history_tokens, trajectory_steps, conversation_tokens), strict=True) if v}


def judged_sample(query: str | None, response: str | None, context: str | None, background: str | None,
                  definition: Mapping[str, Any] | None) -> dict[str, str]:
    """What an evaluator showed its judge of a stored pick (its `sampled_traces` texts and `history` JSON): the
    sample judging built, `Material.as_sample` under the bounds the evaluator's registered definition records (they
    are in its fingerprint, so a definition stands for one set of bounds for good). Everything stored when the
    definition is not on record. The review queue shows this and exports it to sentinel sets."""
    bounds = {k: UNBOUNDED for k in BOUNDS} if definition is None else {k: int(definition.get(k, 0)) for k in BOUNDS}
    material = Material("", datetime.min, query or "", response or "", context or "", *read_background(background))
    return material.as_sample(**bounds)


def parse_messages(raw: str | None) -> list[dict]:
    """A span's message JSON as a list of message dicts ([] when absent or malformed)."""
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def final_answer(part: dict) -> str | None:
    """The answer a `final_answer` tool-call part carries (arguments as an object or its JSON text), else None."""
    if part.get("type") != "tool_call" or part.get("name") != FINAL_ANSWER_TOOL:
        return None
    arguments = part.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    answer = arguments.get("answer") if isinstance(arguments, dict) else None
    return answer if isinstance(answer, str) else None


def message_text(message: dict) -> str:
    """The text of one message: its text, tool-response and final-answer parts, or a plain string `content`."""
    parts = message.get("parts")
    if not isinstance(parts, list):
        content = message.get("content")
        return content if isinstance(content, str) else ""
    texts = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") in ("text", "tool_call_response"):
            content = part.get("content") if part.get("type") == "text" else tool_response(part)
            texts.append(content if isinstance(content, str) else json.dumps(content))
        elif isinstance(part, dict) and (answer := final_answer(part)) is not None:
            texts.append(answer)
    return "\n".join(texts)


def _only_tool_results(message: dict) -> bool:
    parts = message.get("parts")
    return isinstance(parts, list) and bool(parts) and all(
        isinstance(p, dict) and p.get("type") == "tool_call_response" for p in parts)


def graded_texts(input_messages: str | None, output_messages: str | None,
                 system_instructions: str | None) -> tuple[str, str, str]:
    """(query, response, context): the last user message, the output text, system + tool text."""
    inputs = parse_messages(input_messages)
    # Tool results sent as `user` messages (Anthropic's and Bedrock's convention, Strands Agents) are no question.
    users = [m for m in inputs if m.get("role") == "user" and not _only_tool_results(m)]
    query = message_text(users[-1]) if users else ""
    response = "\n".join(message_text(m) for m in parse_messages(output_messages) if m.get("role") in ("assistant", None))
    context_parts = [message_text(m) for m in inputs if m.get("role") in ("system", "tool")]
    instructions = [message_text(part) for part in parse_messages(system_instructions)]  # a list of parts
    if system_instructions and not instructions:
        instructions = [system_instructions]  # a bare string rather than a message list
    # Some senders put the system prompt in both places (OTel JS's Responses API, OpenLIT): the judge reads it once.
    context_parts += [text for text in instructions if text not in context_parts]
    return query, response, "\n".join(p for p in context_parts if p)


def graded_trajectory(input_messages: str | None, output_messages: str | None,
                      spans: Sequence[ToolSpan] = ()) -> Trajectory | None:
    """The tool trajectory of the graded call and its trace's tool spans (None when neither holds a tool step)."""
    return trajectory_of(parse_messages(input_messages), parse_messages(output_messages), spans)


def background_json(history: History | None, trajectory: Trajectory | None,
                    conversation: Transcript | None = None) -> str | None:
    """What a pick stores beside its graded texts (`sampled_traces.history`, JSON): its conversation so far (the
    History's keys), its tool trajectory (key `trajectory`), a conversation unit's turns (key `conversation`);
    None when it has none of them."""
    data = (history.to_dict() if history else {}) | ({"trajectory": trajectory.to_dict()} if trajectory else {}) \
        | ({"conversation": conversation.to_dict()} if conversation else {})
    return json.dumps(data) if data else None


def read_background(raw: str | None) -> tuple[History | None, Trajectory | None, Transcript | None]:
    """A pick's stored (conversation so far, tool trajectory, conversation unit's turns), by `background_json`."""
    data = json.loads(raw) if raw else {}
    return (History.from_dict(data) if "conversation_id" in data else None,
            Trajectory.from_dict(data["trajectory"]) if "trajectory" in data else None,
            Transcript.from_dict(data["conversation"]) if "conversation" in data else None)
