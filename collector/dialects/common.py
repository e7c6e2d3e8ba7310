"""What every dialect mapper shares: the row it fills, value coercions, provider names and the
GenAI-semconv message shape (`{"role", "parts": [{"type": "text", "content"}, ...], "finish_reason"}`).

Mappers are pure functions of already-decoded values (plain Python, unredacted): they never raise
on odd shapes (a value they cannot read is left out of the columns and stays in `attributes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import orjson

# Message JSON columns hold either the sender's JSON string (semconv attributes, stored as sent)
# or a Python list built by a mapper (serialised once, then redacted).
Messages = str | list | None


class GenAIFields(NamedTuple):
    """The first-class GenAI columns of one span (schema.SPAN_COLUMNS names); None: not stated."""

    operation: str | None = None
    provider: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    response_id: str | None = None
    finish_reasons: Sequence[str | None] | None = None  # an item sent as a structure is null
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    input_messages: Messages = None
    output_messages: Messages = None
    system_instructions: Messages = None


EMPTY = GenAIFields()


class SpanEvent(NamedTuple):
    name: str
    attributes: dict


_INT64 = range(-(2**63), 2**63)


def to_int(value) -> int | None:
    """Token counts: an int or a decimal string that fits BIGINT; anything else is not a count."""
    if type(value) is int:
        return value if value in _INT64 else None
    if type(value) is float and value.is_integer():
        return to_int(int(value))
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return to_int(int(value))
    return None


def to_str(value) -> str | None:
    if value is None or type(value) is str:
        return value or None
    if isinstance(value, (dict, list)):
        return None  # a structure is not a model name or an id
    return str(value)


def first(attrs: dict, *keys: str):
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return value
    return None


def string_list(value) -> list[str] | None:
    if value is None:
        return None
    if type(value) is list and all(type(v) is str for v in value):
        return value
    if isinstance(value, list):
        return [v if type(v) is str else orjson.dumps(v).decode() for v in value]
    if isinstance(value, str) and value.startswith("["):
        parsed = parse_json(value)
        if isinstance(parsed, list):
            return string_list(parsed)
    return [str(value)]


def parse_json(value):
    """A JSON string -> value; anything else (or invalid JSON) -> None."""
    if not isinstance(value, str):
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def json_or_value(value):
    """Tool arguments and results: parsed when they are a JSON document, else as sent."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        parsed = parse_json(value)
        return value if parsed is None else parsed
    return value


# Provider names -> OTel GenAI semconv `gen_ai.provider.name` values. Keys are lower-cased and
# cut at the first '.' or '-' when the whole name is not listed (Vercel's "openai.chat",
# "anthropic.messages", "amazon-bedrock").
_PROVIDERS = {
    "openai": "openai", "azure": "azure.ai.openai", "azure_openai": "azure.ai.openai",
    "azure.ai.openai": "azure.ai.openai", "az.ai.openai": "azure.ai.openai", "azure-openai": "azure.ai.openai",
    "azure.ai.inference": "azure.ai.inference", "az.ai.inference": "azure.ai.inference",
    "anthropic": "anthropic", "aws.bedrock": "aws.bedrock", "bedrock": "aws.bedrock", "amazon": "aws.bedrock",
    "google": "gcp.gemini", "gemini": "gcp.gemini", "gcp.gemini": "gcp.gemini", "google.generative-ai": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai", "vertexai": "gcp.vertex_ai", "gcp.vertex_ai": "gcp.vertex_ai",
    "google.vertex": "gcp.vertex_ai", "cohere": "cohere", "mistral": "mistral_ai",
    "mistralai": "mistral_ai", "mistral_ai": "mistral_ai", "groq": "groq", "deepseek": "deepseek",
    "perplexity": "perplexity", "xai": "x_ai", "x_ai": "x_ai", "ibm.watsonx.ai": "ibm.watsonx.ai",
    "watsonx": "ibm.watsonx.ai", "aws": "aws.bedrock", "google_genai": "gcp.gemini", "google_genai_vertex": "gcp.vertex_ai",
    "google_vertexai": "gcp.vertex_ai", "vertex": "gcp.vertex_ai",
    # Senders that say "some Google GenAI endpoint": Gemini, the common case (Vertex senders name Vertex).
    "gcp.gen_ai": "gcp.gemini",
    "googleai": "gcp.gemini",  # Genkit's Gemini API plugin prefix (`googleai/gemini-2.5-flash`)
}


# Frameworks that put their own name where the provider goes (Strands Agents' `gen_ai.system`): no provider stated.
_FRAMEWORKS = frozenset({"strands-agents"})

_SEEN_PROVIDERS: dict[str, str | None] = {}  # the same few names on every span


def provider_name(value) -> str | None:
    if value is None:
        return None
    if type(value) is str:
        known = _SEEN_PROVIDERS.get(value)
        if known is not None:
            return known
    text = to_str(value)
    if text is None:
        return None
    name = _provider_name(text)
    if type(value) is str and len(_SEEN_PROVIDERS) < 1024:
        _SEEN_PROVIDERS[value] = name
    return name


def _provider_name(text: str) -> str | None:
    key = text.strip().lower()
    if key in _FRAMEWORKS:
        return None
    known = _PROVIDERS.get(key)
    if known is None:
        for sep in (".", "-"):
            head = key.split(sep, 1)[0]
            if head in _PROVIDERS:
                return _PROVIDERS[head]
    return known or key or None


# --- messages in the GenAI semconv shape ---------------------------------------------------

def text_parts(content) -> list[dict]:
    """Message content in any of the usual shapes -> semconv parts."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        if content[:1] == "[":
            parsed = parse_json(content)
            if isinstance(parsed, list):
                return text_parts(parsed)
        return [{"type": "text", "content": content}]
    if isinstance(content, dict):
        return [_part(content)]
    if isinstance(content, list):
        return [_part(p) if isinstance(p, dict) else {"type": "text", "content": str(p)} for p in content]
    return [{"type": "text", "content": str(content)}]


def _part(part: dict) -> dict:
    kind = part.get("type")
    if kind is None and ("toolUse" in part or "toolResult" in part):  # Bedrock Converse blocks (Strands Agents)
        return _converse_block(part)
    if kind == "text" or (kind is None and "text" in part):
        return {"type": "text", "content": part.get("text", part.get("content"))}
    if kind in ("tool-call", "tool_use", "tool_call", "function_call"):
        return tool_call(part.get("toolCallId", part.get("id")), part.get("toolName", part.get("name")),
                         part.get("input", part.get("args", part.get("arguments"))))
    if kind in ("tool-result", "tool_result", "tool_call_response"):
        return tool_response(part.get("toolCallId", part.get("tool_use_id", part.get("id"))),
                             part.get("output", part.get("result", part.get("content", part.get("response")))))
    return dict(part)  # images, files, …: kept as sent (redacted with the rest of the column)


def _converse_block(part: dict) -> dict:
    """`{"toolUse": {toolUseId, name, input}}` or `{"toolResult": {toolUseId, content: [{text}, {json}]}}`."""
    use = part.get("toolUse")
    if isinstance(use, dict):
        return tool_call(use.get("toolUseId"), use.get("name"), use.get("input"))
    result = part["toolResult"] if isinstance(part.get("toolResult"), dict) else {}
    content = result.get("content")
    texts = [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)] \
        if isinstance(content, list) else []
    return tool_response(result.get("toolUseId"), "\n".join(texts) if texts else content)


def tool_call(call_id, name, arguments) -> dict:
    return {"type": "tool_call", "id": to_str(call_id), "name": to_str(name), "arguments": json_or_value(arguments)}


def tool_response(call_id, response) -> dict:
    return {"type": "tool_call_response", "id": to_str(call_id), "response": json_or_value(response)}


def openai_tool_calls(calls) -> list[dict]:
    """OpenAI-format tool calls ({id, function: {name, arguments}} or flat {id, name, arguments})."""
    if not isinstance(calls, list):
        return []
    out = []
    for call in calls:
        if isinstance(call, dict):
            fn = call.get("function")
            if not isinstance(fn, dict):
                fn = call
            out.append(tool_call(call.get("id"), fn.get("name"), fn.get("arguments")))
    return out


def chat_message(message: dict) -> dict:
    """An OpenAI/Vercel/OpenInference-style message dict -> a semconv message (roles named by
    collector.dialects.vocabulary after the mapper)."""
    role = to_str(message.get("role")) or "user"
    if role == "tool" or message.get("tool_call_id") is not None:
        parts = [tool_response(message.get("tool_call_id", message.get("id")), message.get("content"))]
        if role == "tool" or isinstance(message.get("content"), str):
            return {"role": "tool", "parts": parts}
    parts = text_parts(message.get("content"))
    parts += openai_tool_calls(message.get("tool_calls"))
    out: dict[str, Any] = {"role": role, "parts": parts}
    if message.get("finish_reason") is not None:
        out["finish_reason"] = to_str(message.get("finish_reason"))
    return out


def split_system(messages: list[dict]) -> tuple[list[dict] | None, list[dict] | None]:
    """(system instructions as parts, the other messages): semconv keeps the two apart."""
    system = [p for m in messages if m.get("role") in ("system", "developer") for p in m.get("parts", [])]
    rest = [m for m in messages if m.get("role") not in ("system", "developer")]
    return (system or None), (rest or None)


def indexed(attrs: dict, prefix: str) -> list[dict]:
    """Flattened `prefix.N.rest` attributes -> [ {rest: value}, ... ] ordered by N."""
    found: dict[int, dict] = {}
    cut = len(prefix)
    for key, value in attrs.items():
        if key.startswith(prefix):
            index, _, rest = key[cut:].partition(".")
            if index.isdigit() and rest:
                found.setdefault(int(index), {})[rest] = value
    return [found[i] for i in sorted(found)]
