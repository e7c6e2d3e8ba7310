"""OpenLLMetry (Traceloop) instrumentations, old and new attribute forms.

Old: `gen_ai.prompt.N.{role,content,tool_call_id}`, `gen_ai.completion.N.{role,content,
finish_reason,tool_calls.K.{id,name,arguments}}`, `llm.request.type`, `llm.usage.*`,
`gen_ai.usage.prompt_tokens`; current versions (0.62) send the semconv attributes (read first by
the precedence rule), recognised by their extra `gen_ai.is_streaming` / `gen_ai.usage.total_tokens`.
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

_OPERATIONS = {"chat": "chat", "completion": "text_completion", "embedding": "embeddings", "rerank": "rerank"}


_MARKERS = ("llm.request.type", "gen_ai.prompt.0.content", "gen_ai.completion.0.content", "gen_ai.is_streaming",
            "llm.is_streaming", "gen_ai.usage.total_tokens")  # the last three: current versions (0.62)


def recognises(scope_name: str, attrs: dict) -> bool:
    return any(m in attrs for m in _MARKERS) or any(k.startswith("traceloop.") for k in attrs)


def _messages(items: list[dict]) -> list[dict]:
    out = []
    for item in items:
        calls = [{"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")}
                 for c in indexed(item, "tool_calls.")]
        message = {k: item[k] for k in ("role", "content", "tool_call_id", "finish_reason") if k in item}
        if calls:
            message["tool_calls"] = calls
        out.append(chat_message(message))
    return out


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    system = inputs = outputs = None
    if base.input_messages is None:
        system, inputs = split_system(_messages(indexed(attrs, "gen_ai.prompt.")))
    if base.output_messages is None:
        outputs = [{**m, "role": m["role"] if m["role"] != "user" else "assistant"}
                   for m in _messages(indexed(attrs, "gen_ai.completion."))] or None
    reasons = [m["finish_reason"] for m in outputs or () if m.get("finish_reason")]
    request_type = to_str(attrs.get("llm.request.type"))
    return EMPTY._replace(
        operation=_OPERATIONS.get(request_type, request_type) if request_type else None,
        input_tokens=to_int(attrs.get("llm.usage.prompt_tokens")),
        output_tokens=to_int(attrs.get("llm.usage.completion_tokens")),
        cached_input_tokens=to_int(first(attrs, "llm.usage.cache_read_input_tokens")),
        finish_reasons=reasons or None,
        input_messages=inputs,
        output_messages=outputs,
        system_instructions=system,
    )
