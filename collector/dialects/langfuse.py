"""Langfuse SDK v3+ (built on OpenTelemetry, scope `langfuse-sdk`): `langfuse.observation.*` attributes.

Only `generation` observations are calls (`embedding` ones are embeddings; `agent` and `tool` the GenAI
steps they are); spans, events, chains, retrievers, evaluators and guardrails are no call. A generation
names its model (`langfuse.observation.model.name`), usage as a JSON object
(`langfuse.observation.usage_details`: Langfuse's `input`/`output` keys or the provider's own, such as
OpenAI's `prompt_tokens` with their details) and its messages as JSON (`.input`: chat messages, `.output`: a
message or text). No provider is stated. Session and user ids (`session.id`/`user.id`, v3's
`langfuse.session.id`/`langfuse.user.id`) stay in `attributes`, redacted like the rest.
"""

from __future__ import annotations

from collector.dialects.common import (
    EMPTY,
    GenAIFields,
    chat_message,
    parse_json,
    split_system,
    text_parts,
    to_int,
    to_str,
)
from verdict.semconv import (
    LANGFUSE_INPUT,
    LANGFUSE_MODEL,
    LANGFUSE_OBSERVATION_TYPE,
    LANGFUSE_OUTPUT,
    LANGFUSE_SCOPE,
    LANGFUSE_USAGE_DETAILS,
)

_OPERATIONS = {"generation": "chat", "embedding": "embeddings", "agent": "invoke_agent", "tool": "execute_tool"}
# usage_details keys per column: Langfuse's own first, then the providers' (OpenAI, Anthropic).
_USAGE = {
    "input_tokens": ("input", "prompt_tokens", "input_tokens"),
    "output_tokens": ("output", "completion_tokens", "output_tokens"),
    "cached_input_tokens": ("input_cached_tokens", "cache_read_input_tokens", "input_cache_read"),
    "cache_creation_input_tokens": ("cache_creation_input_tokens", "input_cache_creation"),
    "reasoning_tokens": ("output_reasoning_tokens", "reasoning_tokens", "output_reasoning"),
}
_DETAILS = {"cached_input_tokens": ("prompt_tokens_details", "cached_tokens"),
            "reasoning_tokens": ("completion_tokens_details", "reasoning_tokens")}


def recognises(scope_name: str, attrs: dict) -> bool:
    return LANGFUSE_OBSERVATION_TYPE in attrs or scope_name == LANGFUSE_SCOPE


def _count(details: dict, column: str) -> int | None:
    value = next((to_int(details[k]) for k in _USAGE[column] if to_int(details.get(k)) is not None), None)
    nested = _DETAILS.get(column)
    if value is None and nested and isinstance(details.get(nested[0]), dict):
        value = to_int(details[nested[0]].get(nested[1]))
    return value


def _messages(value, role: str) -> list[dict]:
    """JSON chat messages, one message, or plain text (the model's when `role` is assistant)."""
    parsed = parse_json(value) if isinstance(value, str) and value[:1] in ("[", "{") else value
    if isinstance(parsed, dict) and isinstance(parsed.get("messages"), list):
        parsed = parsed["messages"]
    if isinstance(parsed, list) and all(isinstance(m, dict) and "role" in m for m in parsed):
        return [chat_message(m) for m in parsed]
    if isinstance(parsed, dict) and "role" in parsed:
        return [chat_message(parsed)]
    parts = text_parts(parsed if isinstance(parsed, (str, list)) else to_str(parsed))
    return [{"role": role, "parts": parts}] if parts else []


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    kind = attrs.get(LANGFUSE_OBSERVATION_TYPE)
    operation = _OPERATIONS.get(kind) if isinstance(kind, str) else None
    if operation not in ("chat", "embeddings"):
        return EMPTY._replace(operation=operation)  # a step, or no GenAI operation at all: never a call
    system, inputs = split_system(_messages(attrs.get(LANGFUSE_INPUT), "user"))
    outputs = _messages(attrs.get(LANGFUSE_OUTPUT), "assistant") or None
    details = parse_json(attrs.get(LANGFUSE_USAGE_DETAILS))
    usage = details if isinstance(details, dict) else {}
    return EMPTY._replace(
        operation=operation,
        request_model=to_str(attrs.get(LANGFUSE_MODEL)),
        input_tokens=_count(usage, "input_tokens"),
        output_tokens=_count(usage, "output_tokens"),
        cached_input_tokens=_count(usage, "cached_input_tokens"),
        cache_creation_input_tokens=_count(usage, "cache_creation_input_tokens"),
        reasoning_tokens=_count(usage, "reasoning_tokens"),
        input_messages=inputs,
        output_messages=outputs,
        system_instructions=system,
    )
