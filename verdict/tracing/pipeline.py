"""Verdict's span pipeline: a bounded batch processor feeding an exporter that materializes content.

Content attributes (redaction + JSON) are built here, on the export thread, from the references the
call left on the span, so the calling thread pays neither. A span whose content cannot be built is
exported without content (never unredacted). Only Verdict's own spans are exported, even when
`init()` joined an app's provider: other instrumentations' spans may carry unredacted data. The
exception is `init(export_peer_spans=True)`: other instrumentations' GenAI spans are exported too,
every string value redacted (verdict.tracing.peers).

Under overload the content is what gives way, not the span: while more than half of the queue waits
behind the batch being exported, that batch's spans are exported without content (a fraction of the
cost), marked `verdict.content_omitted` and counted in `stats().content_omitted`. Spans are dropped
only when even that cannot keep up and the queue is full (docs/tracing.md, "Under overload").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from verdict import semconv as sc
from verdict.tracing import health
from verdict.tracing.content import Redactor
from verdict.tracing.peers import is_genai_span, redact_peer_span
from verdict.tracing.runtime import SCOPE

# span_id -> pending content, from the call's end until the processor sees the finished span (the SDK
# hands processors a fresh ReadableSpan, so the pending content cannot ride on the live span).
PENDING: dict[int, Any] = {}
# Reasons a span is exported without the content it would carry (`stats().content_omitted`).
EXPORT_BACKLOG = "export_backlog"  # shed: the export queue was more than half full
CONTENT_ERROR = "content_error"  # building it failed (counted in `errors` as well)


class QueuedSpan:
    """One of Verdict's finished spans waiting in the export queue, with its pending content.

    The SDK's ReadableSpan holds about a dozen GC-tracked objects (its __dict__, the bounded
    attributes with their lock, event and link lists with deques and locks); every span waiting
    for export keeps them alive, and the young collections they trigger were a large share of the
    SDK's whole-process CPU. This keeps what the export needs in one slotted object; the exported
    ReadableSpan is built once, on the export thread (`materialize`)."""

    __slots__ = ("name", "context", "parent", "resource", "attributes", "events", "links", "kind", "status",
                 "start_time", "end_time", "instrumentation_scope", "pending")

    def __init__(self, name: str, context: Any, parent: Any, resource: Resource, attributes: dict[str, Any],
                 events: Sequence[Any], links: Sequence[Any], kind: Any, status: Any, start_time: int | None,
                 end_time: int | None, instrumentation_scope: Any, pending: Any) -> None:
        self.name = name
        self.context = context
        self.parent = parent
        self.resource = resource
        self.attributes = attributes
        self.events = events
        self.links = links
        self.kind = kind
        self.status = status
        self.start_time = start_time
        self.end_time = end_time
        self.instrumentation_scope = instrumentation_scope
        self.pending = pending

    @classmethod
    def of(cls, span: ReadableSpan, pending: Any) -> QueuedSpan:
        """The SDK's finished span (events and links: the tuples the exported span always had)."""
        return cls(span.name, span.context, span.parent, span.resource, _plain_attributes(span), span.events,
                   span.links, span.kind, span.status, span.start_time, span.end_time, span.instrumentation_scope,
                   pending)


def _plain_attributes(span: ReadableSpan) -> dict[str, Any]:
    """The span's attributes as a plain dict (of strings and numbers: not even tracked by the GC).
    The public mapping wraps the SDK's BoundedAttributes in a proxy, copied key by key through
    Python-level methods; its inner dict is copied at C speed. The exported span's attributes were
    always a plain dict (`materialize` merges the content into one)."""
    inner = getattr(getattr(span, "_attributes", None), "_dict", None)
    return dict(inner) if type(inner) is dict else dict(span.attributes or {})


def materialize(span: QueuedSpan, redactor: Redactor | None, max_bytes: int,
                resource: Resource | None = None, shed: bool = False) -> ReadableSpan:
    """The exported span: the queued one with its pending attributes added (without content when
    `shed`) and, when given, Verdict's resource."""
    content: dict[str, Any] = {}
    pending = span.pending
    if pending is not None:
        capturing = redactor is not None and pending.op.captures_content
        reason = EXPORT_BACKLOG if shed and capturing else None
        try:
            content = pending.attributes(None if reason else redactor, max_bytes)
        except Exception as exc:  # a redaction, serializer or recording bug: export without them,
            # keeping the attributes the call itself recorded
            health.record_error("content_capture", exc)
            content = dict(pending.recorded)
            reason = CONTENT_ERROR if capturing else reason
        if reason is not None:
            content[sc.CONTENT_OMITTED] = reason
            health.content_omitted(reason)
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=resource if resource is not None else span.resource,
        attributes={**span.attributes, **content} if content else span.attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _no_backlog() -> int:
    return 0


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
        self._backlog: Callable[[], int] = _no_backlog
        self._shed_at = 0

    def shed_content_above(self, backlog: Callable[[], int], limit: int) -> None:
        """Export batches without content while `backlog()` (spans still queued) is at least `limit`."""
        self._backlog, self._shed_at = backlog, limit

    def _ready(self, span: ReadableSpan | QueuedSpan, shed: bool) -> ReadableSpan | None:
        if isinstance(span, QueuedSpan):
            return materialize(span, self._redactor, self._max_bytes, self._resource, shed)
        if self._peer_redactor is None:
            return None  # never export another instrumentation's span unredacted
        try:
            return redact_peer_span(span, self._peer_redactor, self._resource)
        except Exception as exc:  # a redaction bug: drop the span rather than export it raw
            health.record_error("peer_redaction", exc)
            return None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        # Checked once a batch: what waits behind it is what content work would delay further.
        shed = self._shed_at > 0 and self._backlog() >= self._shed_at
        ready = [r for r in (self._ready(span, shed) for span in spans) if r is not None]
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

    def backlog(self) -> int:
        """Spans waiting in the batch processor's queue (0 when it cannot be seen)."""
        queue = self._queue
        return 0 if queue is None else len(queue)

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
                self.enqueue(batch, span)
            return
        pending = PENDING.pop(span.context.span_id, None) if span.context is not None else None
        if batch is None:
            return
        self.enqueue(batch, QueuedSpan.of(span, pending))

    def enqueue(self, batch: BatchSpanProcessor, span: ReadableSpan | QueuedSpan) -> None:
        queue = self._queue
        if queue is not None and len(queue) >= self._queue_limit:
            # Exporter down or slow: keep memory bounded and the caller's thread quiet.
            health.count("spans_dropped")
            health.record_error("export_queue_full")
            return
        batch.on_end(span)  # type: ignore[arg-type]  # the queue is ours: ContentExporter takes QueuedSpan

    def shutdown(self) -> None:
        batch = self.detach()
        if batch is not None:
            batch.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        batch = self.batch
        return True if batch is None else batch.force_flush(timeout_millis)
