"""Verdict next to other instrumentations (OpenLLMetry, OpenInference, openai-v2, Pydantic AI, …).

Two things, both on the TracerProvider `init()` joined:

* `ContextStampProcessor` stamps the current `intent_context` / `workload_context` /
  `conversation_context` keys on every span started on the provider (its `on_start`), whatever
  instrumentation starts it, so another instrumentation's LLM spans carry the intent the daemon
  clusters by and the conversation their trace belongs to.
* With `init(export_peer_spans=True)`, other instrumentations' GenAI spans (`is_genai_span`) go
  through Verdict's exporter too, every string value redacted first (`redact_peer_span`): peers
  record content raw. Their scope carries no redaction claim, so the collector redacts them again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor

from verdict import semconv as sc
from verdict.tracing.content import Redactor
from verdict.tracing.context import INTENT_KEY, WORKLOAD, conversation_attributes
from verdict.tracing.runtime import SCOPE

# Attribute-name prefixes that mark a span as describing a GenAI operation, per dialect:
# OTel GenAI semconv, OpenLLMetry (gen_ai.* / llm.* / traceloop.*), OpenInference (llm.*,
# openinference.*), Vercel AI SDK (ai.*), Pydantic AI (gen_ai.*).
GENAI_PREFIXES = ("gen_ai.", "llm.", "openinference.", "traceloop.", "ai.")


class ContextStampProcessor(SpanProcessor):
    """Stamps `verdict.intent_key` / `verdict.workload` / `gen_ai.conversation.id` from the current context on
    span start.

    A span that already sets a key keeps its own (the instrumentation knew better; for the conversation,
    any of its spellings: semconv.CONVERSATION_ID_ATTRIBUTES); spans started
    outside any `intent_context` are left alone. Added once per provider by `init()`; an app that
    does not call `init()` can add it itself: `provider.add_span_processor(ContextStampProcessor())`.
    """

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        # Verdict's own spans: the call records the keys itself (verdict.tracing.call.begin), on the
        # span or, when Verdict owns the provider, with the attributes its exporter adds.
        scope = span.instrumentation_scope
        if scope is not None and scope.name == SCOPE:
            return
        # The ContextVars, not `parent_context`: intent_context is not an OTel context value.
        intent = INTENT_KEY.get()
        workload = WORKLOAD.get()
        conversation = conversation_attributes()
        if intent is None and workload is None and not conversation:
            return
        existing = span.attributes or {}
        if intent is not None and sc.INTENT_KEY not in existing:
            span.set_attribute(sc.INTENT_KEY, intent)
        if workload is not None and sc.WORKLOAD not in existing:
            span.set_attribute(sc.WORKLOAD, workload)
        if conversation and not any(name in existing for name in sc.CONVERSATION_ID_ATTRIBUTES):
            span.set_attributes(conversation)

    def on_end(self, span: ReadableSpan) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def is_genai_span(span: ReadableSpan) -> bool:
    """Whether any attribute of the span names a GenAI operation in one of the known dialects."""
    return any(key.startswith(GENAI_PREFIXES) for key in (span.attributes or {}))


def _redacted(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return tuple(redactor.text(v) if isinstance(v, str) else v for v in value)
    return value


def _redacted_attributes(attributes: Mapping[str, Any] | None, redactor: Redactor) -> dict[str, Any]:
    return {key: _redacted(value, redactor) for key, value in (attributes or {}).items()}


def redact_peer_span(span: ReadableSpan, redactor: Redactor, resource: Resource | None = None) -> ReadableSpan:
    """A copy of another instrumentation's span with every string attribute value (span and events)
    and the status message redacted; numbers, booleans and ids pass as they are."""
    events = [Event(e.name, _redacted_attributes(e.attributes, redactor), e.timestamp) for e in span.events]
    status = span.status
    if status.description:
        from opentelemetry.trace import Status

        status = Status(status.status_code, redactor.text(status.description))
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=resource if resource is not None else span.resource,
        attributes=_redacted_attributes(span.attributes, redactor),
        events=events,
        links=span.links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
