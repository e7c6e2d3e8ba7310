"""A trace's spans as a tree (agent → model call → tool, any depth), with tool calls read from their attributes.

Parent and child come from `parent_span_id`; a span whose parent is not among the spans drawn (not exported, or
past the drawing limit) is a root, and so is a span on a parent cycle (ids are whatever a sender sent), so every
span drawn appears exactly once. A span's kind comes from the GenAI conventions and the documented vendor
spellings: a model call is a row of `llm_calls`; a tool is `execute_tool` (OTel GenAI, Vercel AI 7, Strands,
Google ADK), an OpenInference `TOOL` span (LangGraph, CrewAI, smolagents) or a Traceloop `tool` entity; an agent
is `invoke_agent` / `invoke_workflow`, an OpenInference `AGENT` or a Traceloop `agent` / `workflow`. Tool name,
arguments and result are the attribute values as stored (redacted by the SDK and the collector; the page
redacts and escapes them again), pretty-printed when they are JSON and cut at TOOL_CHARS.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

TOOL_CHARS = 2000  # of a tool call's arguments or result on the page (the rest is cut, and says how much)


def _attr(name: str) -> str:
    return f"attributes->>'$.\"{name}\"'"


_OI_KIND, _TL_KIND = _attr("openinference.span.kind"), _attr("traceloop.span.kind")
# The kind hint and tool fields, first spelling present wins (SQL over the `spans` view's attributes JSON).
SPAN_FIELDS = (
    f"coalesce({_OI_KIND}, {_TL_KIND})",
    f"coalesce({_attr('gen_ai.tool.name')}, {_attr('tool.name')}, {_attr('ai.toolCall.name')}, "
    f"CASE WHEN {_TL_KIND} = 'tool' THEN {_attr('traceloop.entity.name')} END)",
    f"coalesce({_attr('gen_ai.tool.call.arguments')}, {_attr('ai.toolCall.args')}, "
    f"CASE WHEN {_OI_KIND} = 'TOOL' THEN {_attr('input.value')} END, "
    f"CASE WHEN {_TL_KIND} = 'tool' THEN {_attr('traceloop.entity.input')} END)",
    f"coalesce({_attr('gen_ai.tool.call.result')}, {_attr('ai.toolCall.result')}, "
    f"CASE WHEN {_OI_KIND} = 'TOOL' THEN {_attr('output.value')} END, "
    f"CASE WHEN {_TL_KIND} = 'tool' THEN {_attr('traceloop.entity.output')} END)",
)
_TOOL_OPERATIONS = ("execute_tool",)
_AGENT_OPERATIONS = ("invoke_agent", "create_agent", "invoke_workflow")
_AGENT_HINTS = ("AGENT", "agent", "workflow")


@dataclass(frozen=True)
class Span:
    """One span of the trace as the page draws it (a row of `spans`, tool fields read from its attributes)."""

    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    status_code: str | None
    operation: str | None
    kind_hint: str | None  # openinference.span.kind or traceloop.span.kind
    tool_name: str | None
    tool_arguments: str | None
    tool_result: str | None


@dataclass(frozen=True)
class Node:
    """A span in the tree's pre-order: its depth (0 for a root) says where it hangs."""

    span: Span
    kind: str  # "agent", "model", "tool" or "span"
    depth: int


def kind_of(span: Span, calls: frozenset[str]) -> str:
    if span.span_id in calls:
        return "model"
    if span.operation in _TOOL_OPERATIONS or span.kind_hint in ("TOOL", "tool") or (
            span.tool_name is not None and span.operation is None and span.kind_hint is None):
        return "tool"
    if span.operation in _AGENT_OPERATIONS or span.kind_hint in _AGENT_HINTS:
        return "agent"
    return "span"


def tree(spans: Iterable[Span], calls: frozenset[str]) -> tuple[Node, ...]:
    """The spans (given in start order) in the tree's pre-order: roots in start order, each span followed by its
    children's subtrees in start order. Walked with a stack, not recursion: a chain of spans may be as deep as
    the spans drawn."""
    ordered = list(spans)
    ids = {s.span_id for s in ordered}
    children: dict[str, list[Span]] = {}
    for s in ordered:
        if s.parent_span_id in ids and s.parent_span_id != s.span_id:
            children.setdefault(s.parent_span_id, []).append(s)
    roots = [s for s in ordered if s.parent_span_id not in ids or s.parent_span_id == s.span_id]
    out: list[Node] = []
    placed: set[str] = set()

    def walk(root: Span) -> None:
        stack = [(root, 0)]
        while stack:
            span, depth = stack.pop()
            if span.span_id in placed:
                continue
            placed.add(span.span_id)
            out.append(Node(span, kind_of(span, calls), depth))
            stack += [(c, depth + 1) for c in reversed(children.get(span.span_id, ()))]

    for root in roots:
        walk(root)
    for s in ordered:  # spans on a parent cycle reach no root: each cycle hangs from its earliest span
        if s.span_id not in placed:
            walk(s)
    return tuple(out)


def pretty(text: str | None, limit: int = TOOL_CHARS) -> str | None:
    """A tool value for reading: JSON indented (a JSON string shown as its text), anything else as sent; cut at
    `limit` characters with what was left out said."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        shown = text
    else:
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    if len(shown) > limit:
        return f"{shown[:limit]}… ({len(shown) - limit:,} more characters)"
    return shown
