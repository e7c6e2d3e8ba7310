"""Pydantic AI / Logfire: semconv `gen_ai.*` attributes, messages either in the semconv content
attributes (instrumentation version 2+, read by the standard layer) or in an `events` attribute
holding a JSON list of GenAI events (each `{"event.name": ..., ...}`, older versions).
The `invoke_agent` span's `pydantic_ai.all_messages` / `final_result` are no call: they stay in
`attributes`, redacted like every other content value.
"""

from __future__ import annotations

from collector.dialects.common import EMPTY, GenAIFields, parse_json
from collector.dialects.events import collect, event_messages
from verdict.semconv import (
    EVENT_NAME,
    LOGFIRE_MSG,
    PYDANTIC_AI_EVENTS,
    PYDANTIC_AI_MODEL_REQUEST_PARAMETERS,
)


def recognises(scope_name: str, attrs: dict) -> bool:
    return (scope_name.startswith(("pydantic-ai", "pydantic_ai", "logfire")) or LOGFIRE_MSG in attrs
            or PYDANTIC_AI_MODEL_REQUEST_PARAMETERS in attrs)


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    events = parse_json(attrs.get(PYDANTIC_AI_EVENTS))
    if not isinstance(events, list):
        return EMPTY
    columns = collect(m for e in events if isinstance(e, dict)
                      for m in event_messages(e.get(EVENT_NAME), e, e if "content" in e or "message" in e else None))
    return EMPTY._replace(**columns)  # type: ignore[arg-type]  # collect() fills message columns only
