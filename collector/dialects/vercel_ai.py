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

_INNER = {"doGenerate": "chat", "doStream": "chat", "doEmbed": "embeddings"}


def recognises(scope_name: str, attrs: dict) -> bool:
    return "ai.operationId" in attrs


def _outputs(attrs: dict, reason: str | None) -> list[dict] | None:
    parts = text_parts(attrs.get("ai.response.text"))
    if not parts and attrs.get("ai.response.object") is not None:
        parts = text_parts(str(attrs["ai.response.object"]))
    calls = parse_json(attrs.get("ai.response.toolCalls"))
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
    operation_id = attrs.get("ai.operationId")
    step = operation_id.rsplit(".", 1)[-1] if isinstance(operation_id, str) else ""
    if step not in _INNER:
        return EMPTY  # the outer span: not a provider call
    prompt = parse_json(attrs.get("ai.prompt.messages"))
    messages = [chat_message(m) for m in prompt if isinstance(m, dict)] if isinstance(prompt, list) else []
    system, inputs = split_system(messages)
    reason = to_str(attrs.get("ai.response.finishReason"))
    return EMPTY._replace(
        operation=_INNER[step],
        provider=provider_name(attrs.get("ai.model.provider")),
        request_model=to_str(attrs.get("ai.model.id")),
        response_model=to_str(attrs.get("ai.response.model")),
        response_id=to_str(attrs.get("ai.response.id")),
        finish_reasons=string_list(reason),
        input_tokens=to_int(first(attrs, "ai.usage.inputTokens", "ai.usage.promptTokens")),
        output_tokens=to_int(first(attrs, "ai.usage.outputTokens", "ai.usage.completionTokens")),
        cached_input_tokens=to_int(attrs.get("ai.usage.cachedInputTokens")),
        reasoning_tokens=to_int(attrs.get("ai.usage.reasoningTokens")),
        input_messages=inputs,
        output_messages=_outputs(attrs, reason),
        system_instructions=system,
    )
