"""Dialect normalisation: any GenAI instrumentation's span -> the same first-class columns.

One module per dialect, each with `recognises(scope_name, attrs)` and a pure
`map_span(scope_name, span_name, attrs, base) -> GenAIFields`; `REGISTRY` lists them in
precedence order. Mappers see decoded, unredacted values; flatten redacts what they return.

The precedence rule (docs/tracing.md, *Dialects*), per span:
  1. the span's dialect is the first registry entry that recognises it (most specific marker
     first: the Verdict SDK's scope, `ai.operationId`, `openinference.span.kind`, LiteLLM's scope,
     OpenLLMetry's `llm.request.type` / indexed prompts / `traceloop.*`, Pydantic AI / Logfire,
     Anthropic's scope, `langfuse.observation.type`, `genkit:type`, `mlflow.spanType`, LlamaIndex's own
     scope, OpenLIT's
     scope or `telemetry.sdk.name`; plain OTel GenAI semconv, then a bare model with the older
     per-message GenAI events, last); no entry: `dialect` is NULL (counted in /stats);
  2. each column takes the standard OTel GenAI attribute when the span carries it (current
     name, else its older name), and the dialect's own attribute only where no standard one is
     present. Standard and dialect attributes never add up. Two exceptions: a message attribute
     sent as text outside the semconv JSON shape (OpenLIT's `role: content` lines) gives way to
     the messages the dialect read from it; a span the dialect knows is only part of a call
     (PART_OF_CALL: Logfire's request span of a streamed call) takes the dialect's operation;
  3. one vocabulary for all: message roles in the semconv set, `provider/model` names split
     (collector.dialects.vocabulary); providers are semconv names already (common.provider_name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from collector.dialects import (
    anthropic,
    genai_events,
    genkit,
    langfuse,
    litellm,
    llama_index,
    mlflow,
    openinference,
    openlit,
    openllmetry,
    otel_genai,
    pydantic_ai,
    vercel_ai,
    vocabulary,
)
from collector.dialects.common import EMPTY, GenAIFields, SpanEvent
from collector.dialects.otel_genai import CONTENT_ATTRIBUTES, standard

VERDICT_SCOPE = "verdict.tracing"
# Operations a dialect names for a span that is only part of a call another span describes whole (Logfire's
# streamed call: collector.dialects.pydantic_ai): they replace the standard operation, so the span is no call.
PART_OF_CALL = frozenset({pydantic_ai.STREAM_REQUEST})  # verdict.tracing.runtime.SCOPE (the collector does not import the SDK's tracing)


@dataclass(frozen=True)
class Dialect:
    name: str
    recognises: Callable[[str, dict], bool]
    map_span: Callable[[str, str, dict, GenAIFields], GenAIFields]
    # Span events whose attributes map_span reads as the span's (a sender that puts the call in events).
    event_attributes: frozenset[str] = frozenset()


def _verdict(scope_name: str, attrs: dict) -> bool:
    return scope_name == VERDICT_SCOPE


REGISTRY: tuple[Dialect, ...] = (
    Dialect("verdict", _verdict, lambda scope, name, attrs, base: EMPTY),
    Dialect("vercel_ai", vercel_ai.recognises, vercel_ai.map_span),
    Dialect("openinference", openinference.recognises, openinference.map_span),
    Dialect("litellm", litellm.recognises, litellm.map_span),
    Dialect("openllmetry", openllmetry.recognises, openllmetry.map_span),
    Dialect("pydantic_ai", pydantic_ai.recognises, pydantic_ai.map_span),
    Dialect("anthropic", anthropic.recognises, anthropic.map_span),
    Dialect("langfuse", langfuse.recognises, langfuse.map_span),
    Dialect("genkit", genkit.recognises, genkit.map_span),
    Dialect("mlflow", mlflow.recognises, mlflow.map_span),
    Dialect("llama_index", llama_index.recognises, llama_index.map_span, llama_index.EVENT_ATTRIBUTES),
    Dialect("openlit", openlit.recognises, openlit.map_span),
    Dialect("otel_genai", otel_genai.recognises, otel_genai.map_span),
    Dialect("genai_events", genai_events.recognises, genai_events.map_span),
)
DIALECT_NAMES = tuple(d.name for d in REGISTRY)


def detect(scope_name: str, attrs: dict) -> Dialect | None:
    for dialect in REGISTRY:
        if dialect.recognises(scope_name, attrs):
            return dialect
    return None


def normalise(
    scope_name: str, span_name: str, attrs: dict, content: dict, events: list[SpanEvent]
) -> tuple[str | None, GenAIFields]:
    """(dialect name or None, columns) for one span. `content`: the semconv content attributes."""
    base = standard(attrs, content, events)
    dialect = detect(scope_name, attrs)
    if dialect is None:
        return None, _vocabulary(base)
    if dialect.event_attributes and events:
        attrs = {**attrs, **{k: v for e in events if e.name in dialect.event_attributes for k, v in e.attributes.items()}}
    extra = dialect.map_span(scope_name, span_name, attrs, base)
    if extra.operation in PART_OF_CALL:  # the dialect knows better than the span's own operation name
        return dialect.name, base._replace(operation=extra.operation)
    if extra is EMPTY:
        return dialect.name, _vocabulary(base)
    merged = GenAIFields._make([b if b is not None else d for b, d in zip(base, extra, strict=True)])
    text_form = {c: getattr(extra, c) for c in _MESSAGE_FIELDS
                 if getattr(extra, c) is not None and openlit.is_text(getattr(base, c))}
    return dialect.name, _vocabulary(merged._replace(**text_form) if text_form else merged)


_MESSAGE_FIELDS = ("input_messages", "output_messages", "system_instructions")


def _vocabulary(fields: GenAIFields) -> GenAIFields:
    """Semconv roles in the message columns, `provider/model` names split, one operation name per kind of call
    (collector.dialects.vocabulary)."""
    if fields.operation is None:
        return fields  # not a GenAI span: nothing to name
    inputs = vocabulary.messages(fields.input_messages)[0]
    outputs = vocabulary.messages(fields.output_messages, unnamed="assistant")[0]  # the model wrote them
    if inputs is not fields.input_messages or outputs is not fields.output_messages:
        fields = fields._replace(input_messages=inputs, output_messages=outputs)
    return vocabulary.operation_name(vocabulary.model_and_provider(fields))


__all__ = ["CONTENT_ATTRIBUTES", "DIALECT_NAMES", "REGISTRY", "Dialect", "GenAIFields", "SpanEvent", "detect",
           "normalise"]
