"""OpenLLMetry (Traceloop) instrumentations, old and new attribute forms.

Old: `gen_ai.prompt.N.{role,content,tool_call_id}`, `gen_ai.completion.N.{role,content,
finish_reason,tool_calls.K.{id,name,arguments}}`, `llm.request.type`, `llm.usage.*`,
`gen_ai.usage.prompt_tokens`; current versions (0.62) send the semconv attributes (read first by
the precedence rule), recognised by their extra `gen_ai.is_streaming` / `gen_ai.usage.total_tokens` under
an `opentelemetry.instrumentation.*` scope.
"""

from __future__ import annotations

from collector.dialects.common import (
    EMPTY,
    GenAIFields,
    chat_message,
    first,
    indexed,
    split_system,
    to_int,
    to_str,
)
from verdict.semconv import (
    OPENLLMETRY_COMPLETIONS,
    OPENLLMETRY_FIRST_COMPLETION_CONTENT,
    OPENLLMETRY_FIRST_PROMPT_CONTENT,
    OPENLLMETRY_GEN_AI_IS_STREAMING,
    OPENLLMETRY_IS_STREAMING,
    OPENLLMETRY_MESSAGE_KEYS,
    OPENLLMETRY_MESSAGE_TOOL_CALLS,
    OPENLLMETRY_PROMPTS,
    OPENLLMETRY_REQUEST_TYPE,
    OPENLLMETRY_SPAN_KIND,
    OPENLLMETRY_TRACELOOP_PREFIX,
    OPENLLMETRY_USAGE_CACHE_READ_INPUT_TOKENS,
    OPENLLMETRY_USAGE_COMPLETION_TOKENS,
    OPENLLMETRY_USAGE_PROMPT_TOKENS,
    OPENLLMETRY_USAGE_TOTAL_TOKENS,
)

_OPERATIONS = {"chat": "chat", "completion": "text_completion", "embedding": "embeddings", "rerank": "rerank"}
# `traceloop.span.kind` of framework steps (LangChain, LangGraph, @workflow/@task decorators) -> the GenAI
# operation they are: never a model call, so they stay in `spans` and out of `llm_calls`.
_FRAMEWORK_STEPS = {"workflow": "invoke_workflow", "task": "execute_task", "agent": "invoke_agent",
                    "tool": "execute_tool"}


_MARKERS = (OPENLLMETRY_REQUEST_TYPE, OPENLLMETRY_FIRST_PROMPT_CONTENT, OPENLLMETRY_FIRST_COMPLETION_CONTENT,
            OPENLLMETRY_IS_STREAMING)
# Current versions (0.62) send only semconv attributes plus these two in the shared `gen_ai.` namespace, which
# other senders use too (Strands, LiteLLM send `gen_ai.usage.total_tokens`): they mark OpenLLMetry only under
# the scope its packages register (`opentelemetry.instrumentation.<library>`), where the OpenTelemetry
# contrib GenAI instrumentations, the namespace's other tenants, send neither.
_SEMCONV_MARKERS = (OPENLLMETRY_GEN_AI_IS_STREAMING, OPENLLMETRY_USAGE_TOTAL_TOKENS)
_SCOPE_PREFIX = "opentelemetry.instrumentation."


def recognises(scope_name: str, attrs: dict) -> bool:
    if any(m in attrs for m in _MARKERS) or any(k.startswith(OPENLLMETRY_TRACELOOP_PREFIX) for k in attrs):
        return True
    return scope_name.startswith(_SCOPE_PREFIX) and any(m in attrs for m in _SEMCONV_MARKERS)


def _messages(items: list[dict]) -> list[dict]:
    out = []
    for item in items:
        calls = [{"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")}
                 for c in indexed(item, OPENLLMETRY_MESSAGE_TOOL_CALLS)]
        message = {k: item[k] for k in OPENLLMETRY_MESSAGE_KEYS if k in item}
        if calls:
            message["tool_calls"] = calls
        out.append(chat_message(message))
    return out


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    system = inputs = outputs = None
    if base.input_messages is None:
        system, inputs = split_system(_messages(indexed(attrs, OPENLLMETRY_PROMPTS)))
    if base.output_messages is None:
        # A completion is the model's: its role is the assistant's whatever was sent (`unknown` when streamed).
        outputs = [{**m, "role": m["role"] if m["role"] == "tool" else "assistant"}
                   for m in _messages(indexed(attrs, OPENLLMETRY_COMPLETIONS))] or None
    reasons = [m["finish_reason"] for m in outputs or () if m.get("finish_reason")]
    request_type = to_str(attrs.get(OPENLLMETRY_REQUEST_TYPE))
    step = attrs.get(OPENLLMETRY_SPAN_KIND)
    operation: str | None
    if request_type:
        operation = _OPERATIONS.get(request_type, request_type)
    else:
        operation = _FRAMEWORK_STEPS.get(step) if isinstance(step, str) else None
    return EMPTY._replace(
        operation=operation,
        input_tokens=to_int(attrs.get(OPENLLMETRY_USAGE_PROMPT_TOKENS)),
        output_tokens=to_int(attrs.get(OPENLLMETRY_USAGE_COMPLETION_TOKENS)),
        cached_input_tokens=to_int(first(attrs, OPENLLMETRY_USAGE_CACHE_READ_INPUT_TOKENS)),
        finish_reasons=reasons or None,
        input_messages=inputs,
        output_messages=outputs,
        system_instructions=system,
    )
