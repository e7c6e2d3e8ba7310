"""OpenTelemetry GenAI semantic conventions, latest and older forms.

`standard` reads the standard `gen_ai.*` attributes every dialect may carry (it is the first
layer of the precedence rule, see collector.dialects). `map_span` is the dialect of spans that
speak only semconv (openai-v2, Verdict SDK, …) and adds what older forms leave implicit: no
`gen_ai.operation.name` (a span with a provider and a model or usage is a chat call).
"""

from __future__ import annotations

from typing import Any

from collector.dialects.common import (
    EMPTY,
    GenAIFields,
    SpanEvent,
    provider_name,
    string_list,
    to_int,
    to_str,
)
from collector.dialects.events import collect, event_messages
from verdict.semconv import (
    INPUT_MESSAGES,
    OPERATION_NAME,
    OUTPUT_MESSAGES,
    PROVIDER_NAME,
    REQUEST_MODEL,
    RESPONSE_FINISH_REASONS,
    RESPONSE_ID,
    RESPONSE_MODEL,
    SYSTEM,
    SYSTEM_INSTRUCTIONS,
    USAGE_CACHE_CREATION_INPUT_TOKENS,
    USAGE_CACHE_CREATION_INPUT_TOKENS_OLD,
    USAGE_CACHE_READ_INPUT_TOKENS,
    USAGE_CACHE_READ_INPUT_TOKENS_OLD,
    USAGE_CACHE_WRITE_INPUT_TOKENS,
    USAGE_COMPLETION_TOKENS,
    USAGE_INPUT_TOKENS,
    USAGE_OUTPUT_TOKENS,
    USAGE_PROMPT_TOKENS,
    USAGE_REASONING_OUTPUT_TOKENS,
    USAGE_REASONING_TOKENS,
)

# Moved out of `attributes` into their own columns (stored once, redacted).
CONTENT_ATTRIBUTES = {
    INPUT_MESSAGES: "input_messages",
    OUTPUT_MESSAGES: "output_messages",
    SYSTEM_INSTRUCTIONS: "system_instructions",
}


def standard(attrs: dict, content: dict, events: list[SpanEvent]) -> GenAIFields:
    """The standard attributes (current names first, then the older ones) and GenAI span events.

    Runs for every span, so values of the expected type are taken without a helper call (a
    string for names, an int for counts: AnyValue ints always fit BIGINT); others are coerced.
    """
    get = attrs.get
    messages = content
    if events and len(content) < 3:  # older senders put the conversation in span events
        from_events = collect(m for e in events for m in event_messages(e.name, e.attributes))
        messages = {**from_events, **content}
    out: list[Any] = []  # GenAIFields in field order
    for key in _NAMES:
        v = get(key)
        out.append(v if v is None or type(v) is str else to_str(v))
    provider = get(PROVIDER_NAME)
    out[1] = provider_name(get(SYSTEM) if provider is None else provider)
    reasons = get(RESPONSE_FINISH_REASONS)
    out.append(reasons if reasons is None or (type(reasons) is list and all(type(r) is str for r in reasons))
               else string_list(reasons))
    for keys in _COUNTS:
        for key in keys:
            v = get(key)
            if v is not None:
                out.append(v if type(v) is int else to_int(v))
                break
        else:
            out.append(None)
    out += (messages.get("input_messages"), messages.get("output_messages"), messages.get("system_instructions"))
    return GenAIFields._make(out)


_NAMES = (OPERATION_NAME, PROVIDER_NAME, REQUEST_MODEL, RESPONSE_MODEL, RESPONSE_ID)
_COUNTS = (  # GenAIFields order; each: the current name, then older ones
    (USAGE_INPUT_TOKENS, USAGE_PROMPT_TOKENS),
    (USAGE_OUTPUT_TOKENS, USAGE_COMPLETION_TOKENS),
    (USAGE_CACHE_READ_INPUT_TOKENS, USAGE_CACHE_READ_INPUT_TOKENS_OLD),
    (USAGE_CACHE_CREATION_INPUT_TOKENS, USAGE_CACHE_WRITE_INPUT_TOKENS, USAGE_CACHE_CREATION_INPUT_TOKENS_OLD),
    (USAGE_REASONING_OUTPUT_TOKENS, USAGE_REASONING_TOKENS),
)


def recognises(scope_name: str, attrs: dict) -> bool:
    return OPERATION_NAME in attrs or PROVIDER_NAME in attrs or SYSTEM in attrs


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    if base.operation is None and base.provider is not None and (
        base.request_model or base.input_tokens is not None or base.input_messages
    ):
        return EMPTY._replace(operation="chat")
    return EMPTY
