"""Verdict's span pipeline: a bounded batch processor feeding an exporter that materializes content.

Content attributes (redaction + JSON) are built here, on the export thread, from the references the
call left on the span, so the calling thread pays neither. A span whose content cannot be built is
exported without content (never unredacted). Only Verdict's own spans are exported, even when
`init()` joined an app's provider: other instrumentations' spans may carry unredacted data. The
exception is `init(export_peer_spans=True)`: other instrumentations' GenAI spans are exported too,
every string value redacted (verdict.tracing.peers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from verdict.tracing import health
from verdict.tracing.content import Redactor
from verdict.tracing.peers import is_genai_span, redact_peer_span
from verdict.tracing.runtime import SCOPE

PENDING_CONTENT = "_verdict_content"

# span_id -> pending content, from the call's end until the processor sees the finished span (the SDK
# hands processors a fresh ReadableSpan, so the pending content cannot ride on the live span).
PENDING: dict[int, Any] = {}


def materialize(span: ReadableSpan, redactor: Redactor | None, max_bytes: int,
                resource: Resource | None = None) -> ReadableSpan:
    """The span with its pending content attributes added and, when given, Verdict's resource (or the
    span itself when neither applies)."""
    content: dict[str, Any] = {}
    pending = span.__dict__.get(PENDING_CONTENT)
    if pending is not None:
        try:
            content = pending.attributes(redactor, max_bytes)
        except Exception as exc:  # a redaction, serializer or recording bug: export without them,
            # keeping the attributes the call itself recorded
            health.record_error("content_capture", exc)
            content = dict(pending.recorded)
    if not content and resource is None:
        return span
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=resource if resource is not None else span.resource,
        attributes={**(span.attributes or {}), **content} if content else span.attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _is_verdict_span(span: ReadableSpan) -> bool:
    return span.instrumentation_scope is not None and span.instrumentation_scope.name == SCOPE


class ContentExporter(SpanExporter):
    """`resource`: what Verdict's spans carry instead of the provider's (`init()` joined an app's
    provider: its resource plus the `service.name` and `verdict.tenant_id` given to `init()`).
    `peer_redactor`: redacts the other instrumentations' spans `VerdictSpanProcessor` lets through."""

    def __init__(self, inner: SpanExporter, redactor: Redactor | None, max_bytes: int,
                 resource: Resource | None = None, peer_redactor: Redactor | None = None) -> None:
        self._inner = inner
        self._redactor = redactor
        self._max_bytes = max_bytes
        self._resource = resource
        self._peer_redactor = peer_redactor

    def _ready(self, span: ReadableSpan) -> ReadableSpan | None:
        if _is_verdict_span(span):
            return materialize(span, self._redactor, self._max_bytes, self._resource)
        if self._peer_redactor is None:
            return None  # never export another instrumentation's span unredacted
        try:
            return redact_peer_span(span, self._peer_redactor, self._resource)
        except Exception as exc:  # a redaction bug: drop the span rather than export it raw
            health.record_error("peer_redaction", exc)
            return None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ready = [r for r in map(self._ready, spans) if r is not None]
        try:
            result = self._inner.export(ready)
        except Exception as exc:
            health.record_error("export", exc)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            health.count("spans_exported", len(ready))
        else:
            health.count("export_failures")
            health.count("spans_dropped", len(ready))
            health.record_error("export_failed")
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class VerdictSpanProcessor(SpanProcessor):
    """Forwards Verdict's finished spans to a batch processor; drops (and counts) when its queue is full.

    Added once to a provider; `init()`/`shutdown()` swap the batch processor behind it, because the
    OpenTelemetry SDK cannot remove a processor from a provider.
    """

    def __init__(self) -> None:
        self.batch: BatchSpanProcessor | None = None
        self._queue: Any = None
        self._queue_limit = 0
        self.peer_spans = False  # also forward other instrumentations' GenAI spans

    def attach(self, batch: BatchSpanProcessor, max_queue_size: int, peer_spans: bool = False) -> None:
        self.batch = batch
        self.peer_spans = peer_spans
        # The SDK's internal deque, looked up once (None if a future SDK renames it: no early drop).
        self._queue = getattr(getattr(batch, "_batch_processor", None), "_queue", None)
        self._queue_limit = max_queue_size

    def detach(self) -> BatchSpanProcessor | None:
        batch, self.batch, self._queue = self.batch, None, None
        PENDING.clear()
        return batch

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        batch = self.batch
        if not _is_verdict_span(span):
            if batch is not None and self.peer_spans and is_genai_span(span):
                self._enqueue(batch, span)
            return
        pending = PENDING.pop(span.context.span_id, None) if span.context is not None else None
        if batch is None:
            return
        if pending is not None:
            span.__dict__[PENDING_CONTENT] = pending
        self._enqueue(batch, span)

    def _enqueue(self, batch: BatchSpanProcessor, span: ReadableSpan) -> None:
        queue = self._queue
        if queue is not None and len(queue) >= self._queue_limit:
            # Exporter down or slow: keep memory bounded and the caller's thread quiet.
            health.count("spans_dropped")
            health.record_error("export_queue_full")
            return
        batch.on_end(span)

    def shutdown(self) -> None:
        batch = self.detach()
        if batch is not None:
            batch.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        batch = self.batch
        return True if batch is None else batch.force_flush(timeout_millis)
