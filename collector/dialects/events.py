"""GenAI events -> semconv messages, wherever they arrive: OTLP log records (openai-v2's default
mode, `gen_ai.client.inference.operation.details`) or span events (older semconv, Pydantic AI).

`event_messages` says which column an event feeds ("input", "output" or "system") and the
message (or list of parts) it contributes; events that are not GenAI message events give [].
"""

from __future__ import annotations

from collector.dialects.common import (
    chat_message,
    first,
    parse_json,
    text_parts,
    to_str,
    tool_response,
)
from collector.dialects.openlit import completion_messages, is_text, prompt_messages
from verdict.semconv import (
    EVENT_ASSISTANT_MESSAGE,
    EVENT_CHOICE,
    EVENT_COMPLETION,
    EVENT_CONTENT,
    EVENT_CONTENT_COMPLETION,
    EVENT_CONTENT_PROMPT,
    EVENT_INFERENCE_DETAILS,
    EVENT_PROMPT,
    EVENT_SYSTEM_MESSAGE,
    EVENT_TOOL_MESSAGE,
    EVENT_USER_MESSAGE,
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    SYSTEM_INSTRUCTIONS,
)

INPUT_ROLES = {EVENT_USER_MESSAGE: "user", EVENT_ASSISTANT_MESSAGE: "assistant", EVENT_TOOL_MESSAGE: "tool"}
SYSTEM = EVENT_SYSTEM_MESSAGE
CHOICE = EVENT_CHOICE
DETAILS = EVENT_INFERENCE_DETAILS
# Older semconv span events: the whole prompt / completion as one JSON attribute.
OLD_PROMPT = EVENT_CONTENT_PROMPT
OLD_COMPLETION = EVENT_CONTENT_COMPLETION
EVENT_NAMES = frozenset({*INPUT_ROLES, SYSTEM, CHOICE, DETAILS, OLD_PROMPT, OLD_COMPLETION})

COLUMN_OF_DIRECTION = {"input": "input_messages", "output": "output_messages", "system": "system_instructions"}


def _body(body, attrs: dict) -> dict:
    """The event's payload: the log body, or (span events, Logfire) the attributes themselves."""
    if isinstance(body, str):
        body = parse_json(body) if body[:1] == "{" else {"content": body}
    if isinstance(body, dict):
        return body
    content = attrs.get(EVENT_CONTENT)
    parsed = parse_json(content) if isinstance(content, str) else None
    return parsed if isinstance(parsed, dict) else attrs


def _list(value) -> list:
    value = parse_json(value) if isinstance(value, str) else value
    return value if isinstance(value, list) else []


def event_messages(name: str | None, attrs: dict, body=None) -> list[tuple[str, object]]:
    """[(direction, message-or-parts)] for one GenAI event; [] for any other event."""
    if name not in EVENT_NAMES:
        return []
    if name == DETAILS:  # content lives in structured attributes, already in the semconv shape
        out: list[tuple[str, object]] = []
        for direction, key in (("system", SYSTEM_INSTRUCTIONS), ("input", INPUT_MESSAGES),
                               ("output", OUTPUT_MESSAGES)):
            out += [(direction, item) for item in _list(attrs.get(key)) if isinstance(item, dict)]
        return out
    if name == OLD_PROMPT:
        return _old_content("input", first(attrs, EVENT_PROMPT, INPUT_MESSAGES))
    if name == OLD_COMPLETION:
        return _old_content("output", first(attrs, EVENT_COMPLETION, OUTPUT_MESSAGES))
    payload = _body(body, attrs)
    if name == SYSTEM:
        return [("system", part) for part in text_parts(payload.get("content"))]
    if name == CHOICE:
        message = payload.get("message")
        if isinstance(message, (str, list)):  # the content alone (Strands Agents: Converse blocks as JSON)
            message = {"content": message}
        elif not isinstance(message, dict):
            message = payload
        out_message = chat_message({**message, "role": message.get("role") or "assistant"})
        if payload.get("finish_reason") is not None:
            out_message["finish_reason"] = to_str(payload.get("finish_reason"))
        return [("output", out_message)]
    role = INPUT_ROLES[name]
    if role == "tool":
        results = [p for p in text_parts(payload.get("content")) if p["type"] == "tool_call_response"]
        return [("input", {"role": "tool", "parts": results or [tool_response(payload.get("id"),
                                                                                 payload.get("content"))]})]
    return [("input", chat_message({**payload, "role": payload.get("role") or role}))]


def _old_content(direction: str, value) -> list[tuple[str, object]]:
    """A whole prompt or completion: a JSON list of chat messages, or (OpenLIT) its text form."""
    if not is_text(value):
        return _chat_list(direction, _list(value))
    if direction == "output":
        return [("output", m) for m in completion_messages(value, None)]
    messages = prompt_messages(value)
    return [("system", p) for m in messages if m["role"] == "system" for p in m["parts"]] + [
        ("input", m) for m in messages if m["role"] != "system"]


def _chat_list(direction: str, messages: list) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        message = chat_message(m)
        if direction == "input" and message["role"] in ("system", "developer"):
            out += [("system", part) for part in message["parts"]]
        else:
            out.append((direction, message))
    return out


def collect(items) -> dict[str, list]:
    """[(direction, message)] from many events -> {column: [messages]} (only columns that got some)."""
    columns: dict[str, list] = {}
    for direction, message in items:
        columns.setdefault(COLUMN_OF_DIRECTION[direction], []).append(message)
    return columns
