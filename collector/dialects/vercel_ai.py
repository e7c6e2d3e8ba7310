"""Vercel AI SDK (`experimental_telemetry`): `ai.*` attributes.

`ai.generateText` (outer, one per SDK call) wraps one `ai.generateText.doGenerate` (inner, one
per provider call; several with tool steps) and both carry usage: only the inner `do*` spans
(`doGenerate`, `doStream`, `doEmbed`) are calls; the outer ones get no operation, so they never
reach `llm_calls` and their usage is never added to the inner ones'.
"""

from __future__ import annotations

from collector.dialects.common import (
    EMPTY,
    GenAIFields,
    chat_message,
    first,
    parse_json,
    provider_name,
    split_system,
    string_list,
    text_parts,
    to_int,
    to_str,
    tool_call,
)
from verdict.semconv import (
    VERCEL_MODEL_ID,
    VERCEL_MODEL_PROVIDER,
    VERCEL_OPERATION_ID,
    VERCEL_PROMPT_MESSAGES,
    VERCEL_RESPONSE_FINISH_REASON,
    VERCEL_RESPONSE_ID,
    VERCEL_RESPONSE_MODEL,
    VERCEL_RESPONSE_OBJECT,
    VERCEL_RESPONSE_TEXT,
    VERCEL_RESPONSE_TOOL_CALLS,
    VERCEL_USAGE_CACHED_INPUT_TOKENS,
    VERCEL_USAGE_COMPLETION_TOKENS,
    VERCEL_USAGE_INPUT_TOKENS,
    VERCEL_USAGE_OUTPUT_TOKENS,
    VERCEL_USAGE_PROMPT_TOKENS,
    VERCEL_USAGE_REASONING_TOKENS,
)

_INNER = {"doGenerate": "chat", "doStream": "chat", "doEmbed": "embeddings"}


def recognises(scope_name: str, attrs: dict) -> bool:
    return VERCEL_OPERATION_ID in attrs


def _outputs(attrs: dict, reason: str | None) -> list[dict] | None:
    parts = text_parts(attrs.get(VERCEL_RESPONSE_TEXT))
    if not parts and attrs.get(VERCEL_RESPONSE_OBJECT) is not None:
        parts = text_parts(str(attrs[VERCEL_RESPONSE_OBJECT]))
    calls = parse_json(attrs.get(VERCEL_RESPONSE_TOOL_CALLS))
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            parts.append(tool_call(call.get("toolCallId"), call.get("toolName"), call.get("input", call.get("args"))))
    if not parts:
        return None
    message = {"role": "assistant", "parts": parts}
    if reason:
        message["finish_reason"] = reason
    return [message]


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    operation_id = attrs.get(VERCEL_OPERATION_ID)
    step = operation_id.rsplit(".", 1)[-1] if isinstance(operation_id, str) else ""
    if step not in _INNER:
        return EMPTY  # the outer span: not a provider call
    prompt = parse_json(attrs.get(VERCEL_PROMPT_MESSAGES))
    messages = [chat_message(m) for m in prompt if isinstance(m, dict)] if isinstance(prompt, list) else []
    system, inputs = split_system(messages)
    reason = to_str(attrs.get(VERCEL_RESPONSE_FINISH_REASON))
    return EMPTY._replace(
        operation=_INNER[step],
        provider=provider_name(attrs.get(VERCEL_MODEL_PROVIDER)),
        request_model=to_str(attrs.get(VERCEL_MODEL_ID)),
        response_model=to_str(attrs.get(VERCEL_RESPONSE_MODEL)),
        response_id=to_str(attrs.get(VERCEL_RESPONSE_ID)),
        finish_reasons=string_list(reason),
        input_tokens=to_int(first(attrs, VERCEL_USAGE_INPUT_TOKENS, VERCEL_USAGE_PROMPT_TOKENS)),
        output_tokens=to_int(first(attrs, VERCEL_USAGE_OUTPUT_TOKENS, VERCEL_USAGE_COMPLETION_TOKENS)),
        cached_input_tokens=to_int(attrs.get(VERCEL_USAGE_CACHED_INPUT_TOKENS)),
        reasoning_tokens=to_int(attrs.get(VERCEL_USAGE_REASONING_TOKENS)),
        input_messages=inputs,
        output_messages=_outputs(attrs, reason),
        system_instructions=system,
    )
