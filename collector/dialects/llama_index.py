"""LlamaIndex's own OpenTelemetry (`llama-index-observability-otel`, scope `llamaindex.opentelemetry.tracer`).

Every instrumented method is a span without GenAI attributes; a model call is the span that carries an
`LLMChatEndEvent` (with the `LLMChatStartEvent` before it): their attributes, read with the span's
(`EVENT_ATTRIBUTES`), hold the request (`messages`: LlamaIndex ChatMessages as JSON, `model_dict.*`) and the
response (`response.message.*`, the provider's raw response under `response.raw.*`, usage as it reported it).
Workflow steps, tools and helpers such as `_prepare_chat_with_tools` carry no such event: no call.
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
    to_int,
    to_str,
)
from verdict.semconv import (
    LLAMA_INDEX_CHAT_END,
    LLAMA_INDEX_CHAT_START,
    LLAMA_INDEX_MESSAGES,
    LLAMA_INDEX_MODEL,
    LLAMA_INDEX_MODEL_CLASS,
    LLAMA_INDEX_RAW_CACHED_TOKENS,
    LLAMA_INDEX_RAW_CHOICES,
    LLAMA_INDEX_RAW_COMPLETION_TOKENS,
    LLAMA_INDEX_RAW_ID,
    LLAMA_INDEX_RAW_INPUT_TOKENS,
    LLAMA_INDEX_RAW_MODEL,
    LLAMA_INDEX_RAW_OUTPUT_TOKENS,
    LLAMA_INDEX_RAW_PROMPT_TOKENS,
    LLAMA_INDEX_RAW_REASONING_TOKENS,
    LLAMA_INDEX_RESPONSE_BLOCKS,
    LLAMA_INDEX_RESPONSE_ROLE,
    LLAMA_INDEX_RESPONSE_TOOL_CALLS,
    LLAMA_INDEX_SCOPE,
)

# Span events whose attributes this dialect reads as the span's (collector.dialects.normalise).
EVENT_ATTRIBUTES = frozenset({LLAMA_INDEX_CHAT_START, LLAMA_INDEX_CHAT_END})


def recognises(scope_name: str, attrs: dict) -> bool:
    return scope_name == LLAMA_INDEX_SCOPE


def _message(item: dict) -> dict:
    """A LlamaIndex ChatMessage (`role`, `blocks`, `additional_kwargs`) -> a semconv message."""
    blocks = item.get("blocks")
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("block_type") == "text"] \
        if isinstance(blocks, list) else []
    extra = item.get("additional_kwargs")
    extra = extra if isinstance(extra, dict) else {}
    return chat_message({"role": item.get("role"), "content": "\n".join(t for t in texts if isinstance(t, str)),
                         "tool_calls": extra.get("tool_calls"), "tool_call_id": extra.get("tool_call_id")})


def _finish_reason(attrs: dict) -> str | None:
    choices = parse_json(attrs.get(LLAMA_INDEX_RAW_CHOICES))
    first_choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    return to_str(first_choice.get("finish_reason"))


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    if LLAMA_INDEX_RESPONSE_ROLE not in attrs:  # no LLMChatEndEvent: a step, a tool or a helper
        return EMPTY
    request = parse_json(attrs.get(LLAMA_INDEX_MESSAGES))
    system, inputs = split_system([_message(m) for m in request if isinstance(m, dict)]
                                  if isinstance(request, list) else [])
    reason = _finish_reason(attrs)
    output = _message({"role": attrs.get(LLAMA_INDEX_RESPONSE_ROLE),
                       "blocks": parse_json(attrs.get(LLAMA_INDEX_RESPONSE_BLOCKS)),
                       "additional_kwargs": {"tool_calls": parse_json(attrs.get(LLAMA_INDEX_RESPONSE_TOOL_CALLS))}})
    if reason:
        output["finish_reason"] = reason
    model_class = to_str(attrs.get(LLAMA_INDEX_MODEL_CLASS)) or ""
    return EMPTY._replace(
        operation="chat",
        provider=provider_name(model_class.lower().removesuffix("_llm") or None),
        request_model=to_str(attrs.get(LLAMA_INDEX_MODEL)),
        response_model=to_str(attrs.get(LLAMA_INDEX_RAW_MODEL)),
        response_id=to_str(attrs.get(LLAMA_INDEX_RAW_ID)),
        finish_reasons=[reason] if reason else None,
        input_tokens=to_int(first(attrs, LLAMA_INDEX_RAW_PROMPT_TOKENS, LLAMA_INDEX_RAW_INPUT_TOKENS)),
        output_tokens=to_int(first(attrs, LLAMA_INDEX_RAW_COMPLETION_TOKENS, LLAMA_INDEX_RAW_OUTPUT_TOKENS)),
        cached_input_tokens=to_int(attrs.get(LLAMA_INDEX_RAW_CACHED_TOKENS)),
        reasoning_tokens=to_int(attrs.get(LLAMA_INDEX_RAW_REASONING_TOKENS)),
        input_messages=inputs,
        output_messages=[output] if output["parts"] else None,
        system_instructions=system,
    )
