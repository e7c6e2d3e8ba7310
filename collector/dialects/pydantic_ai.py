"""Pydantic AI / Logfire: semconv `gen_ai.*` attributes, messages either in the semconv content
attributes (instrumentation version 2+, read by the standard layer) or in an `events` attribute
holding a JSON list of GenAI events (each `{"event.name": ..., ...}`, older versions).
The `invoke_agent` span's `pydantic_ai.all_messages` / `final_result` are no call: they stay in
`attributes`, redacted like every other content value.

Logfire's streamed call (`logfire.instrument_openai`/`instrument_anthropic`, `stream=True`) is two spans: the
request span, which ends when the stream object is returned and holds the request alone, and a zero-length
`streaming response from ...` log span, written once the stream is consumed (in the caller's context: another
trace when no span encloses the call), holding the request again with the answer and usage. The log span is the
call; the request span is its `stream_request` part (no call): the only request span of Logfire's LLM
integrations with neither output nor usage nor an error (its semconv v1 form also says `"stream": true`).
"""

from __future__ import annotations

from collector.dialects.common import EMPTY, GenAIFields, parse_json, to_int
from collector.dialects.events import collect, event_messages
from verdict.semconv import (
    EVENT_NAME,
    LOGFIRE_LEVEL_NUM,
    LOGFIRE_MSG,
    LOGFIRE_REQUEST_DATA,
    LOGFIRE_SPAN_TYPE,
    PYDANTIC_AI_EVENTS,
    PYDANTIC_AI_MODEL_REQUEST_PARAMETERS,
)


def recognises(scope_name: str, attrs: dict) -> bool:
    return (scope_name.startswith(("pydantic-ai", "pydantic_ai", "logfire")) or LOGFIRE_MSG in attrs
            or PYDANTIC_AI_MODEL_REQUEST_PARAMETERS in attrs)


STREAM_REQUEST = "stream_request"  # the operation of a streamed call's request span: part of a call, no call
_LOGFIRE_LLM_SCOPE = "logfire."  # logfire.openai, logfire.anthropic: its LLM client integrations
_ERROR_LEVEL = 17  # Logfire's level number of `error`, set on a span that ended with an exception


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    events = parse_json(attrs.get(PYDANTIC_AI_EVENTS))
    columns = collect(m for e in events if isinstance(e, dict) for m in event_messages(
        e.get(EVENT_NAME), e, e if "content" in e or "message" in e else None)) if isinstance(events, list) else {}
    if _stream_request(scope_name, attrs, base, answered_in_events="output_messages" in columns):
        return EMPTY._replace(operation=STREAM_REQUEST)
    if not columns:
        return EMPTY
    return EMPTY._replace(**columns)  # type: ignore[arg-type]  # collect() fills message columns only


def _stream_request(scope_name: str, attrs: dict, base: GenAIFields, answered_in_events: bool) -> bool:
    if not scope_name.startswith(_LOGFIRE_LLM_SCOPE) or attrs.get(LOGFIRE_SPAN_TYPE) != "span":
        return False
    request = parse_json(attrs.get(LOGFIRE_REQUEST_DATA))
    if isinstance(request, dict) and request.get("stream") is True:
        return True
    answered = answered_in_events or base.output_messages is not None or base.output_tokens is not None
    return not answered and (to_int(attrs.get(LOGFIRE_LEVEL_NUM)) or 0) < _ERROR_LEVEL
