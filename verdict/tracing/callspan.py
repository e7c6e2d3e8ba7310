"""Verdict's own span for a provider call when Verdict created the TracerProvider and nothing else is on it.

The SDK's span costs ≈ 35 µs of the calling thread per call (the sampler, attribute validation under a lock,
every processor's `on_start`/`on_end`, a ReadableSpan copy at the end): a third of what Verdict adds to a
call. On a provider `init()` created, whose sampler is the default and whose only processors are Verdict's
two (`ContextStampProcessor` skips Verdict's spans; `VerdictSpanProcessor` queues them), none of that work
changes what is exported, so a `CallSpan` records the call and its end queues the export record directly.
While the provider is not like that (an app added a processor, set a sampler, turned the SDK's own metrics
on), `CallSpans.start` returns the SDK's span instead: whatever the app attached sees every span.

To the app and other instrumentations a `CallSpan` is a span like any other while the call runs
(`get_current_span()`, child spans; attributes, events and links added to it reach the export under the
SDK's own value rules and limits). Like the SDK's span, it is written by one thread at a time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, Tracer, TracerProvider, sampling
from opentelemetry.sdk.trace import Span as SDKSpan
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util import types

from verdict.tracing.peers import ContextStampProcessor
from verdict.tracing.pipeline import QueuedSpan, VerdictSpanProcessor

_UNSET = Status(StatusCode.UNSET)
_CLIENT = SpanKind.CLIENT
_OURS = (ContextStampProcessor, VerdictSpanProcessor)  # neither does anything for a Verdict span but queue it


class CallSpans:
    """Starts the spans of Verdict's calls on one provider `init()` created (see the module docstring)."""

    def __init__(self, provider: TracerProvider, tracer: Tracer, processor: VerdictSpanProcessor,
                 processors: tuple[Any, ...]) -> None:
        self._tracer = tracer
        self._ids = provider.id_generator
        self._limits = provider._span_limits
        self._resource = provider.resource
        self._scope = tracer._instrumentation_scope
        self._processor = processor
        self._active = provider._active_span_processor
        self._processors = processors  # the provider's processors as init() left them (a tuple the SDK replaces)
        self._root_flags = TraceFlags(TraceFlags.SAMPLED | (TraceFlags.RANDOM_TRACE_ID
                                                            if self._ids.is_trace_id_random() else 0))

    @classmethod
    def of(cls, provider: TracerProvider, tracer: trace.Tracer, processor: VerdictSpanProcessor) -> CallSpans | None:
        """Light spans for `provider`, or None when its spans must stay the SDK's: a processor that is not
        Verdict's (an app may add one between a `shutdown()` and the next `init()`), another sampler than the
        default, the SDK's own span metrics on, a tracer configured off, or an SDK whose internals differ."""
        try:
            active = provider._active_span_processor
            processors = active._span_processors
            if (type(tracer) is not Tracer or provider.sampler is not sampling.DEFAULT_ON
                    or not tracer._is_enabled() or type(tracer._tracer_metrics).__name__ != "NoOpTracerMetrics"
                    or not isinstance(processors, tuple) or processor not in processors
                    or not all(type(p) in _OURS for p in processors)):
                return None
            return cls(provider, tracer, processor, processors)
        except AttributeError:  # another SDK release: keep its spans
            return None

    def start(self, name: str, ctx: Context, attributes: dict[str, Any]) -> trace.Span:
        if self._active._span_processors is not self._processors:
            return self._tracer.start_span(name, context=ctx, kind=_CLIENT, attributes=attributes)
        parent = trace.get_current_span(ctx).get_span_context()
        if parent.is_valid:
            flags = parent.trace_flags
            if not flags.sampled:  # the default sampler follows its parent's decision
                return trace.INVALID_SPAN
            context = SpanContext(parent.trace_id, self._ids.generate_span_id(), False,
                                  TraceFlags(TraceFlags.SAMPLED | (flags & TraceFlags.RANDOM_TRACE_ID)),
                                  parent.trace_state)
            return CallSpan(self, name, context, parent, attributes)
        context = SpanContext(self._ids.generate_trace_id(), self._ids.generate_span_id(), False, self._root_flags)
        return CallSpan(self, name, context, None, attributes)


def _append(items: list[Any] | None, limit: int | None, item: Any) -> list[Any]:
    """`items` with `item` appended unless the SDK's limit is reached (then dropped, as the SDK does)."""
    items = [] if items is None else items
    if limit is None or len(items) < limit:
        items.append(item)
    return items


class CallSpan(trace.Span):
    """One call's span (see the module docstring). `pending` is what the call left for its export."""

    __slots__ = ("_owner", "_name", "_context", "parent", "attributes", "_events", "_links", "_status",
                 "start_time", "end_time", "pending")

    kind = _CLIENT

    def __init__(self, owner: CallSpans, name: str, context: SpanContext, parent: SpanContext | None,
                 attributes: dict[str, Any]) -> None:
        self._owner = owner
        self._name = name
        self._context = context
        self.parent = parent
        self.attributes: Any = attributes  # Verdict's own values: plain; BoundedAttributes once others write
        self._events: list[Event] | None = None
        self._links: list[Link] | None = None
        self._status = _UNSET
        self.start_time = time.time_ns()
        self.end_time: int | None = None
        self.pending: Any = None

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return self.end_time is None

    def set_attributes(self, attributes: Mapping[str, types.AnyValue]) -> None:
        for key, value in attributes.items():
            self.set_attribute(key, value)

    def set_attribute(self, key: str, value: types.AnyValue) -> None:
        if self.end_time is not None:
            return
        attrs = self.attributes
        if type(attrs) is dict:  # someone else writes: from here on the SDK's rules check each value
            limits = self._owner._limits
            attrs = self.attributes = BoundedAttributes(limits.max_span_attributes, attrs, immutable=False,
                                                        max_value_len=limits.max_attribute_length)
        attrs[key] = value

    def add_event(self, name: str, attributes: types.Attributes = None, timestamp: int | None = None) -> None:
        if self.end_time is None:
            limits = self._owner._limits
            event = Event(name, self._frozen(limits.max_event_attributes, attributes), timestamp)
            self._events = _append(self._events, limits.max_events, event)

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        if self.end_time is None and (context.is_valid or attributes or context.trace_state):
            limits = self._owner._limits
            link = Link(context, self._frozen(limits.max_link_attributes, attributes))
            self._links = _append(self._links, limits.max_links, link)

    def _frozen(self, limit: int | None, attributes: types.Attributes) -> BoundedAttributes:
        return BoundedAttributes(limit, attributes, immutable=True, max_value_len=self._owner._limits.max_attribute_length)

    def update_name(self, name: str) -> None:
        if self.end_time is None:
            self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if self.end_time is not None:
            return
        if isinstance(status, StatusCode):
            status = Status(status, description)
        # The SDK's rule: OK is final, UNSET never overrides.
        if self._status.status_code is StatusCode.OK or status.status_code is StatusCode.UNSET:
            return
        self._status = status

    def record_exception(self, exception: BaseException, attributes: types.Attributes = None,
                         timestamp: int | None = None, escaped: bool = False) -> None:
        # The SDK's event (type, message, stack trace), built by its own code through this span's add_event.
        SDKSpan.record_exception(self, exception, attributes, timestamp, escaped)  # type: ignore[arg-type]

    def end(self, end_time: int | None = None) -> None:
        if self.end_time is not None:
            return
        self.end_time = end_time if end_time is not None else time.time_ns()
        owner = self._owner
        processor = owner._processor
        batch = processor.batch
        if batch is None:  # shut down meanwhile: as the processor drops it
            return
        attrs = self.attributes
        processor.enqueue(batch, QueuedSpan(
            self._name, self._context, self.parent, owner._resource, attrs if type(attrs) is dict else dict(attrs),
            tuple(self._events) if self._events else (), tuple(self._links) if self._links else (),
            _CLIENT, self._status, self.start_time, self.end_time, owner._scope, self.pending))
