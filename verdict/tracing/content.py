"""Message content in the GenAI semconv shape, bounded in size.

Messages are `{"role", "parts": [...], "finish_reason"?}`; parts are `text`, `tool_call`,
`tool_call_response`, `reasoning` and `blob` (modality only, never bytes or URLs). Builders do not
redact; `redact_content` then redacts each text exactly once and tool arguments/responses with the
structured pass (credential-named keys). Serialized JSON past `max_bytes` is truncated keeping its
structure: long texts are cut first, then whole messages from the middle of the conversation are
replaced by a marker.
"""

from __future__ import annotations

import json
from typing import Any, Protocol, cast

TRUNCATED = "…[truncated]"


class Redactor(Protocol):
    def text(self, s: str) -> str: ...

    def value(self, obj: Any) -> Any: ...


Part = dict[str, Any]
Message = dict[str, Any]


class PartBuilder:
    """Builds semconv parts from provider request/response objects (dicts or SDK models)."""

    __slots__ = ()

    def text(self, content: object, kind: str = "text") -> Part:
        return {"type": kind, "content": content if isinstance(content, str) else str(content)}

    def tool_call(self, call_id: object, name: object, arguments: object) -> Part:
        part: Part = {"type": "tool_call", "name": name if isinstance(name, str) else str(name)}
        if call_id:
            part["id"] = str(call_id)
        if arguments is not None and arguments != "":
            part["arguments"] = self.structured(_maybe_json(arguments))
        return part

    def tool_response(self, call_id: object, response: object) -> Part:
        part: Part = {"type": "tool_call_response", "response": self.structured(response)}
        if call_id:
            part["id"] = str(call_id)
        return part

    def structured(self, obj: object) -> Any:
        return _plain(obj)

    def content_parts(self, content: object) -> list[Part]:
        """Parts of a message `content` that is a string or a list of typed blocks (OpenAI/Anthropic)."""
        if content is None:
            return []
        if isinstance(content, str):
            return [self.text(content)] if content else []
        parts: list[Part] = []
        for block in content if isinstance(content, (list, tuple)) else [content]:
            parts.append(self.block(block))
        return parts

    def block(self, block: object) -> Part:
        kind = field(block, "type")
        if kind in ("text", "input_text", "output_text"):
            return self.text(field(block, "text") or "")
        if kind in ("thinking", "reasoning"):
            return self.text(field(block, "thinking") or field(block, "text") or "", "reasoning")
        if kind == "tool_use":
            return self.tool_call(field(block, "id"), field(block, "name"), field(block, "input"))
        if kind == "tool_result":
            return self.tool_response(field(block, "tool_use_id"), _plain(field(block, "content")))
        # Images, audio, files: the modality only, never the bytes or URLs.
        return {"type": "blob" if kind in ("image", "image_url", "input_image", "input_audio", "file") else str(kind)}


def field(obj: object, name: str) -> Any:
    """`obj[name]` for dicts, `obj.name` for SDK models; None when absent."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _plain(obj: object) -> Any:
    """SDK models to plain data (for tool results that are lists of blocks)."""
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json", exclude_none=True)
    return obj


def _maybe_json(arguments: object) -> object:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return _plain(arguments)


_TEXT_PARTS = frozenset({"text", "reasoning"})


def redact_content(lists: dict[str, list[Any]], redactor: Redactor) -> dict[str, list[Any]]:
    """Redact built content in place of the structure's variable leaves only.

    The role/type/finish strings are ours, so only texts (one `text()` each) and tool payloads
    (one `value()` each) are passed: the redactor's per-call cost is paid per content item, not per
    JSON string. A redactor with a structured hook gets the whole structure instead, once.
    """
    if getattr(redactor, "has_hook", False):  # a custom redactor need only have text() and value()
        return cast(dict[str, list[Any]], redactor.value(lists))  # a hook returns what it was given
    text, value = redactor.text, redactor.value
    for items in lists.values():
        for item in items:
            for part in item.get("parts", (item,)):
                kind = part.get("type")
                if kind in _TEXT_PARTS:
                    part["content"] = text(part["content"])
                elif kind == "tool_call":
                    if "arguments" in part:
                        part["arguments"] = value(part["arguments"])
                elif kind == "tool_call_response":
                    part["response"] = value(part["response"])
    return lists


def dumps_bounded(messages: list[Any], max_bytes: int) -> str:
    """JSON of `messages` at most `max_bytes` UTF-8 bytes, still valid and in the same shape."""
    text = _dumps(messages)
    if len(text) * 4 <= max_bytes or len(text.encode()) <= max_bytes:
        return text
    texts = [p for p in _text_parts(messages)]
    if texts:
        overflow = len(text.encode()) - max_bytes + len(TRUNCATED.encode()) * len(texts)
        cap = _cap_for(sorted(len(p["content"]) for p in texts), overflow)
        for part in texts:
            if len(part["content"]) > cap:
                part["content"] = part["content"][:cap] + TRUNCATED
        text = _dumps(messages)
    while len(text.encode()) > max_bytes and len(messages) > 1:
        # Keep the first message (the task) and the latest ones; replace the middle by a marker.
        dropped = messages.pop(len(messages) // 2)
        if isinstance(dropped, dict) and dropped.get("role") == "verdict.truncated":
            continue
        messages.insert(len(messages) // 2, {"role": "verdict.truncated", "parts": [{"type": "text", "content": TRUNCATED}]})
        text = _dumps(messages)
        if len(messages) == 2 and messages[1].get("role") == "verdict.truncated":
            break
    if len(text.encode()) > max_bytes:
        return _dumps([{"role": "verdict.truncated", "parts": [{"type": "text", "content": TRUNCATED}]}])
    return text


# Built once: `json.dumps` with options builds a new encoder on every call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def _dumps(obj: object) -> str:
    return _ENCODE(obj)


def _text_parts(messages: list[Any]) -> list[Part]:
    found: list[Part] = []
    for message in messages:
        parts = message.get("parts", ()) if isinstance(message, dict) and "parts" in message else [message]
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("content"), str):
                found.append(part)
    return found


def _cap_for(lengths: list[int], overflow: int) -> int:
    """Largest per-text cap that removes at least `overflow` characters from texts of `lengths` (sorted)."""
    total = sum(lengths)
    target = max(total - overflow, 0)
    kept = 0
    for i, length in enumerate(lengths):
        remaining = len(lengths) - i
        if kept + length * remaining >= target:
            return max((target - kept) // remaining, 0)
        kept += length
    return lengths[-1] if lengths else 0


PARTS = PartBuilder()
