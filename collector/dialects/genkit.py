"""Genkit (Google; its Go, JS and Python SDKs share one span shape, scope `genkit-tracer`): `genkit:*` attributes.

A model action (`genkit:type=action`, `genkit:metadata:subtype=model`) is the call; flows, the `generate`
util, tools and embedders are not (tools are `execute_tool`, embedders `embeddings`). The model is
`genkit:name` (`openai/gpt-4o-mini`: provider and model are split by the vocabulary step), the request
`genkit:input` (`{"messages": [{"role", "content": [parts]}]}`) and the response `genkit:output`
(`{"message", "finishReason", "usage": {inputTokens, outputTokens, thoughtsTokens, cachedContentTokens}}`,
older releases `{"candidates": [{"message", "finishReason"}]}`), both JSON. Parts are `{"text"}`,
`{"toolRequest": {ref, name, input}}`, `{"toolResponse": {ref, name, output}}` or media, kept as sent.
"""

from __future__ import annotations

from collector.dialects.common import (
    EMPTY,
    GenAIFields,
    parse_json,
    split_system,
    string_list,
    to_int,
    to_str,
    tool_call,
    tool_response,
)
from verdict.semconv import (
    GENKIT_INPUT,
    GENKIT_NAME,
    GENKIT_OUTPUT,
    GENKIT_SCOPE,
    GENKIT_SUBTYPE,
    GENKIT_TYPE,
)

_OPERATIONS = {"model": "chat", "embedder": "embeddings", "tool": "execute_tool"}


def recognises(scope_name: str, attrs: dict) -> bool:
    return GENKIT_TYPE in attrs or scope_name == GENKIT_SCOPE


def _part(part) -> dict:
    if not isinstance(part, dict):
        return {"type": "text", "content": str(part)}
    if "text" in part:
        return {"type": "text", "content": part["text"]}
    request, response = part.get("toolRequest"), part.get("toolResponse")
    if isinstance(request, dict):
        return tool_call(request.get("ref"), request.get("name"), request.get("input"))
    if isinstance(response, dict):
        return tool_response(response.get("ref"), response.get("output"))
    return dict(part)  # media, reasoning, …: as sent (redacted with the column)


def _message(message: dict, reason=None) -> dict:
    content = message.get("content")
    out: dict = {"role": to_str(message.get("role")) or "user",
                 "parts": [_part(p) for p in content] if isinstance(content, list) else []}
    if reason is not None:
        out["finish_reason"] = to_str(reason)
    return out


def _outputs(response: dict) -> tuple[list[dict], list]:
    """(output messages, finish reasons) of a response: `message` (current) or `candidates` (older)."""
    candidates = response.get("candidates")
    if not isinstance(candidates, list):
        candidates = [response]
    pairs = [(c["message"], c.get("finishReason")) for c in candidates
             if isinstance(c, dict) and isinstance(c.get("message"), dict)]
    return [_message(m, r) for m, r in pairs], [r for _m, r in pairs if r is not None]


def _object(value) -> dict:
    return value if isinstance(value, dict) else {}


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    subtype = attrs.get(GENKIT_SUBTYPE)
    operation = _OPERATIONS.get(subtype) if attrs.get(GENKIT_TYPE) == "action" and isinstance(subtype, str) else None
    if operation != "chat":
        return EMPTY._replace(operation=operation)
    request, response = _object(parse_json(attrs.get(GENKIT_INPUT))), _object(parse_json(attrs.get(GENKIT_OUTPUT)))
    messages = request.get("messages")
    system, inputs = split_system([_message(m) for m in messages if isinstance(m, dict)]
                                  if isinstance(messages, list) else [])
    outputs, reasons = _outputs(response)
    usage, custom = _object(response.get("usage")), _object(response.get("custom"))
    return EMPTY._replace(
        operation=operation,
        request_model=to_str(attrs.get(GENKIT_NAME)),
        response_model=to_str(custom.get("model")) if isinstance(custom.get("model"), str) else None,
        response_id=to_str(custom.get("id")) if isinstance(custom.get("id"), str) else None,
        finish_reasons=string_list(reasons) if reasons else None,
        input_tokens=to_int(usage.get("inputTokens")),
        output_tokens=to_int(usage.get("outputTokens")),
        cached_input_tokens=to_int(usage.get("cachedContentTokens")),
        reasoning_tokens=to_int(usage.get("thoughtsTokens")),
        input_messages=inputs,
        output_messages=outputs or None,
        system_instructions=system,
    )
