"""OpenInference (Arize Phoenix) spans: `openinference.span.kind`, `llm.*`, flattened messages
`llm.{input,output}_messages.N.message.{role,content,contents.K.message_content.*,tool_calls.K.tool_call.*}`,
`llm.token_count.*`, and `input.value` / `output.value` when no flattened messages were sent.
"""

from __future__ import annotations

from collector.dialects.common import (
    EMPTY,
    GenAIFields,
    chat_message,
    first,
    indexed,
    parse_json,
    provider_name,
    split_system,
    to_int,
    to_str,
)

_OPERATIONS = {"LLM": "chat", "EMBEDDING": "embeddings"}
_MAX_PARSED_VALUE = 1 << 20  # input.value / output.value larger than this are not parsed


def recognises(scope_name: str, attrs: dict) -> bool:
    return "openinference.span.kind" in attrs


def _message(item: dict) -> dict:
    contents = [{"type": c.get("message_content.type", "text"), "text": c.get("message_content.text"),
                 **({"image_url": c["message_content.image.image.url"]}
                    if "message_content.image.image.url" in c else {})}
                for c in indexed(item, "message.contents.")]
    calls = [{"id": c.get("tool_call.id"), "name": c.get("tool_call.function.name"),
              "arguments": c.get("tool_call.function.arguments")} for c in indexed(item, "message.tool_calls.")]
    message = {"role": item.get("message.role"), "content": item.get("message.content") or contents or None}
    if calls:
        message["tool_calls"] = calls
    if item.get("message.tool_call_id") is not None:
        message["tool_call_id"] = item["message.tool_call_id"]
    return chat_message(message)


def _json_value(attrs: dict, key: str):
    value = attrs.get(key)
    if not isinstance(value, str) or len(value) > _MAX_PARSED_VALUE:
        return None
    if attrs.get(key.replace(".value", ".mime_type")) not in (None, "application/json"):
        return None
    parsed = parse_json(value)
    return parsed if isinstance(parsed, dict) else None


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    kind = attrs.get("openinference.span.kind")
    operation = _OPERATIONS.get(kind) if isinstance(kind, str) else None
    if operation is None:  # chains, agents, tools, retrievers: not a model call
        return EMPTY
    inputs = [_message(i) for i in indexed(attrs, "llm.input_messages.")]
    outputs = [_message(i) for i in indexed(attrs, "llm.output_messages.")]
    request = _json_value(attrs, "input.value") or {}
    response = _json_value(attrs, "output.value") or {}
    if not inputs and isinstance(request.get("messages"), list):
        inputs = [chat_message(m) for m in request["messages"] if isinstance(m, dict)]
    choices = [c for c in response.get("choices", ()) if isinstance(c, dict)] if isinstance(
        response.get("choices"), list) else []
    if not outputs and choices:
        outputs = [chat_message(c["message"]) for c in choices if isinstance(c.get("message"), dict)]
    reasons = [to_str(c.get("finish_reason")) for c in choices if c.get("finish_reason")]
    if outputs and not reasons:
        reasons = [m["finish_reason"] for m in outputs if m.get("finish_reason")]
    for message, reason in zip(outputs, reasons, strict=False):
        message.setdefault("finish_reason", reason)
    params = parse_json(attrs.get("llm.invocation_parameters"))
    system, other_inputs = split_system(inputs)
    return EMPTY._replace(
        operation=operation,
        provider=provider_name(first(attrs, "llm.provider", "llm.system")),
        request_model=to_str((params.get("model") if isinstance(params, dict) else None)
                             or request.get("model") or attrs.get("llm.model_name")),
        response_model=to_str(response.get("model") or attrs.get("llm.model_name")),
        response_id=to_str(response.get("id")),
        finish_reasons=reasons or None,
        input_tokens=to_int(attrs.get("llm.token_count.prompt")),
        output_tokens=to_int(attrs.get("llm.token_count.completion")),
        cached_input_tokens=to_int(attrs.get("llm.token_count.prompt_details.cache_read")),
        cache_creation_input_tokens=to_int(attrs.get("llm.token_count.prompt_details.cache_write")),
        reasoning_tokens=to_int(attrs.get("llm.token_count.completion_details.reasoning")),
        input_messages=other_inputs,
        output_messages=outputs or None,
        system_instructions=system,
    )
