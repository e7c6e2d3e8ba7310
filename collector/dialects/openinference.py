"""OpenInference (Arize Phoenix) spans: `openinference.span.kind`, `llm.*`, flattened messages
`llm.{input,output}_messages.N.message.{role,content,contents.K.message_content.*,tool_calls.K.tool_call.*}`,
`llm.token_count.*`, and `input.value` / `output.value` when no flattened messages were sent.

LlamaIndex's instrumentation gives every instrumented method of a model class the LLM kind, its private
helpers too (`OpenAI._prepare_chat_with_tools` before each call of a FunctionAgent): a span named after a
`_`-prefixed method is such a helper, not a model call.
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
from verdict.semconv import (
    OPENINFERENCE_CONTENT_IMAGE_URL,
    OPENINFERENCE_CONTENT_TEXT,
    OPENINFERENCE_CONTENT_TYPE,
    OPENINFERENCE_INPUT_MESSAGES,
    OPENINFERENCE_INPUT_MIME_TYPE,
    OPENINFERENCE_INPUT_VALUE,
    OPENINFERENCE_INVOCATION_PARAMETERS,
    OPENINFERENCE_MESSAGE_CONTENT,
    OPENINFERENCE_MESSAGE_CONTENTS,
    OPENINFERENCE_MESSAGE_ROLE,
    OPENINFERENCE_MESSAGE_TOOL_CALL_ID,
    OPENINFERENCE_MESSAGE_TOOL_CALLS,
    OPENINFERENCE_MODEL_NAME,
    OPENINFERENCE_OUTPUT_MESSAGES,
    OPENINFERENCE_OUTPUT_MIME_TYPE,
    OPENINFERENCE_OUTPUT_VALUE,
    OPENINFERENCE_PROVIDER,
    OPENINFERENCE_SPAN_KIND,
    OPENINFERENCE_SYSTEM,
    OPENINFERENCE_TOKEN_COUNT_CACHE_READ,
    OPENINFERENCE_TOKEN_COUNT_CACHE_WRITE,
    OPENINFERENCE_TOKEN_COUNT_COMPLETION,
    OPENINFERENCE_TOKEN_COUNT_PROMPT,
    OPENINFERENCE_TOKEN_COUNT_REASONING,
    OPENINFERENCE_TOOL_CALL_ARGUMENTS,
    OPENINFERENCE_TOOL_CALL_ID,
    OPENINFERENCE_TOOL_CALL_NAME,
)

_OPERATIONS = {"LLM": "chat", "EMBEDDING": "embeddings"}
_MAX_PARSED_VALUE = 1 << 20  # input.value / output.value larger than this are not parsed


def recognises(scope_name: str, attrs: dict) -> bool:
    return OPENINFERENCE_SPAN_KIND in attrs


def _message(item: dict) -> dict:
    contents = [{"type": c.get(OPENINFERENCE_CONTENT_TYPE, "text"), "text": c.get(OPENINFERENCE_CONTENT_TEXT),
                 **({"image_url": c[OPENINFERENCE_CONTENT_IMAGE_URL]}
                    if OPENINFERENCE_CONTENT_IMAGE_URL in c else {})}
                for c in indexed(item, OPENINFERENCE_MESSAGE_CONTENTS)]
    calls = [{"id": c.get(OPENINFERENCE_TOOL_CALL_ID), "name": c.get(OPENINFERENCE_TOOL_CALL_NAME),
              "arguments": c.get(OPENINFERENCE_TOOL_CALL_ARGUMENTS)}
             for c in indexed(item, OPENINFERENCE_MESSAGE_TOOL_CALLS)]
    message = {"role": item.get(OPENINFERENCE_MESSAGE_ROLE),
               "content": item.get(OPENINFERENCE_MESSAGE_CONTENT) or contents or None}
    if calls:
        message["tool_calls"] = calls
    if item.get(OPENINFERENCE_MESSAGE_TOOL_CALL_ID) is not None:
        message["tool_call_id"] = item[OPENINFERENCE_MESSAGE_TOOL_CALL_ID]
    return chat_message(message)


def _json_value(attrs: dict, key: str, mime_type_key: str):
    value = attrs.get(key)
    if not isinstance(value, str) or len(value) > _MAX_PARSED_VALUE:
        return None
    if attrs.get(mime_type_key) not in (None, "application/json"):
        return None
    parsed = parse_json(value)
    return parsed if isinstance(parsed, dict) else None


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    kind = attrs.get(OPENINFERENCE_SPAN_KIND)
    operation = _OPERATIONS.get(kind) if isinstance(kind, str) else None
    if operation is None or name.rsplit(".", 1)[-1].startswith("_"):  # chains, agents, tools, helpers: no call
        return EMPTY
    inputs = [_message(i) for i in indexed(attrs, OPENINFERENCE_INPUT_MESSAGES)]
    outputs = [_message(i) for i in indexed(attrs, OPENINFERENCE_OUTPUT_MESSAGES)]
    request = _json_value(attrs, OPENINFERENCE_INPUT_VALUE, OPENINFERENCE_INPUT_MIME_TYPE) or {}
    response = _json_value(attrs, OPENINFERENCE_OUTPUT_VALUE, OPENINFERENCE_OUTPUT_MIME_TYPE) or {}
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
    params = parse_json(attrs.get(OPENINFERENCE_INVOCATION_PARAMETERS))
    system, other_inputs = split_system(inputs)
    return EMPTY._replace(
        operation=operation,
        provider=provider_name(first(attrs, OPENINFERENCE_PROVIDER, OPENINFERENCE_SYSTEM)),
        request_model=to_str((params.get("model") if isinstance(params, dict) else None)
                             or request.get("model") or attrs.get(OPENINFERENCE_MODEL_NAME)),
        response_model=to_str(response.get("model") or attrs.get(OPENINFERENCE_MODEL_NAME)),
        response_id=to_str(response.get("id")),
        finish_reasons=reasons or None,
        input_tokens=to_int(attrs.get(OPENINFERENCE_TOKEN_COUNT_PROMPT)),
        output_tokens=to_int(attrs.get(OPENINFERENCE_TOKEN_COUNT_COMPLETION)),
        cached_input_tokens=to_int(attrs.get(OPENINFERENCE_TOKEN_COUNT_CACHE_READ)),
        cache_creation_input_tokens=to_int(attrs.get(OPENINFERENCE_TOKEN_COUNT_CACHE_WRITE)),
        reasoning_tokens=to_int(attrs.get(OPENINFERENCE_TOKEN_COUNT_REASONING)),
        input_messages=other_inputs,
        output_messages=outputs or None,
        system_instructions=system,
    )
