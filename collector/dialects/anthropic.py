"""Anthropic SDK native spans: semconv plus Anthropic's own stop reason and cache-write usage."""

from __future__ import annotations

from collector.dialects.common import EMPTY, GenAIFields, string_list, to_int
from verdict.semconv import ANTHROPIC_STOP_REASON, USAGE_CACHE_WRITE_INPUT_TOKENS


def recognises(scope_name: str, attrs: dict) -> bool:
    return scope_name.startswith(("anthropic", "com.anthropic")) or ANTHROPIC_STOP_REASON in attrs


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    return EMPTY._replace(
        operation="chat" if base.provider or base.request_model else None,
        provider="anthropic",
        finish_reasons=string_list(attrs.get(ANTHROPIC_STOP_REASON)),
        cache_creation_input_tokens=to_int(attrs.get(USAGE_CACHE_WRITE_INPUT_TOKENS)),
    )
