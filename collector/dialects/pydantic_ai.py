"""Pydantic AI / Logfire: semconv `gen_ai.*` attributes, messages either in the semconv content
attributes (instrumentation version 2+, read by the standard layer) or in an `events` attribute
holding a JSON list of GenAI events (each `{"event.name": ..., ...}`, older versions).
The `invoke_agent` span's `pydantic_ai.all_messages` / `final_result` are no call: they stay in
`attributes`, redacted like every other content value.
"""

from __future__ import annotations

from collector.dialects.common import EMPTY, GenAIFields, parse_json
from collector.dialects.events import collect, event_messages


def recognises(scope_name: str, attrs: dict) -> bool:
    return (scope_name.startswith(("pydantic-ai", "pydantic_ai", "logfire")) or "logfire.msg" in attrs
            or "model_request_parameters" in attrs)


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    events = parse_json(attrs.get("events"))
    if not isinstance(events, list):
        return EMPTY
    columns = collect(m for e in events if isinstance(e, dict)
                      for m in event_messages(e.get("event.name"), e, e if "content" in e or "message" in e else None))
    return EMPTY._replace(**columns)  # type: ignore[arg-type]  # collect() fills message columns only
