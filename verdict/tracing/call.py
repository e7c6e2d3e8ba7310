"""One instrumented provider call: span start, result recording, stream observation, span end.

Provider modules describe *what* to record (an `Operation`); this module owns *how*: the span is
current only while the provider method runs (never after `create()` returns a stream), every
failure inside instrumentation is swallowed and counted, and the app sees exactly the objects,
chunks and exceptions it would see uninstrumented.
"""

from __future__ import annotations

import inspect
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextvars import Token
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context
from opentelemetry.trace import SpanKind, Status, StatusCode

from verdict import semconv as sc
from verdict.tracing import health
from verdict.tracing.callspan import CallSpan
from verdict.tracing.content import PARTS, PartBuilder, Redactor, dumps_bounded, redact_content
from verdict.tracing.context import INTENT_KEY, WORKLOAD, conversation_attributes
from verdict.tracing.pipeline import PENDING
from verdict.tracing.runtime import STATE, Runtime
from verdict.tracing.semconv import SUPPRESS_LANGUAGE_MODEL_KEY
from verdict.tracing.semconv import error_type as canonical_error_type

_CLIENT = SpanKind.CLIENT
_ERROR = Status(StatusCode.ERROR)
_LEGACY_SUPPRESS_KEY = "suppress_instrumentation"
_SUPPRESS_LLM = SUPPRESS_LANGUAGE_MODEL_KEY


class Operation:
    """What to record for one provider method. Subclasses fill attributes from kwargs and results."""

    provider = ""
    name = sc.OPERATION_CHAT
    captures_content = True

    def start_attributes(self, kwargs: dict[str, Any], attrs: dict[str, Any]) -> str:
        """Fill request attributes; return the request model."""
        raise NotImplementedError

    def snapshot(self, kwargs: dict[str, Any]) -> Any:
        """References to the request content, taken at call time (lists copied: apps append to them)."""
        return None

    def is_stream(self, result: Any) -> bool:
        return False

    def record(self, attrs: dict[str, Any], result: Any) -> Any:
        """Fill response attributes from a non-streamed result; return the output for content."""
        return None

    def accumulator(self) -> StreamAccumulator:
        raise NotImplementedError

    def content(self, request: Any, output: Any, parts: PartBuilder) -> dict[str, list[Any]]:
        """Content attribute name -> semconv list (system instructions, input and output messages)."""
        return {}

    def content_attributes(self, request: Any, output: Any, redactor: Redactor, max_bytes: int) -> dict[str, str]:
        """Content attribute name -> redacted JSON (attributes with nothing to say left out)."""
        lists = redact_content(self.content(request, output, PARTS), redactor)
        return {name: dumps_bounded(value, max_bytes) for name, value in lists.items() if value}


class StreamAccumulator:
    """Sees every stream item; at the end fills response attributes and the output for content."""

    def __call__(self, item: Any) -> None:
        raise NotImplementedError

    def finish(self, attrs: dict[str, Any], completed: bool) -> Any:
        """Set response attributes; `completed` is False when the stream stopped before its end.
        Return the output for content capture."""
        raise NotImplementedError


class PendingAttributes:
    """What a call leaves for later: `recorded` attributes not yet on the span and the content
    references. Turned into redacted JSON content on the export thread (or at span end without
    Verdict's pipeline).

    The provider's result is recorded at the call's end, not here: a result object waiting for
    export kept a dozen GC-tracked objects alive per span, which cost more in collections than
    recording it on the calling thread does."""

    __slots__ = ("op", "recorded", "request", "output")

    def __init__(self, op: Operation, recorded: dict[str, Any], request: Any, output: Any) -> None:
        self.op = op
        self.recorded = recorded
        self.request = request
        self.output = output

    def attributes(self, redactor: Redactor | None, max_bytes: int) -> dict[str, Any]:
        attrs = dict(self.recorded)
        if redactor is not None and self.op.captures_content:
            attrs.update(self.op.content_attributes(self.request, self.output, redactor, max_bytes))
        return attrs


_NOT_RAW, _SYNC_PARSE, _ASYNC_PARSE = 0, 1, 2
_raw_types: dict[type, int] = {}


def _raw_kind(result: Any) -> int:
    """Whether `result` is a `with_raw_response`/`with_streaming_response` wrapper, and whether its
    `.parse()` is a coroutine (anthropic's async responses). Per type, once: a missing attribute on
    a pydantic model is a slow __getattr__ miss."""
    kind = type(result)
    raw = _raw_types.get(kind)
    if raw is None:
        if not (hasattr(result, "http_response") and hasattr(result, "parse")):
            raw = _NOT_RAW
        else:
            raw = _ASYNC_PARSE if inspect.iscoroutinefunction(kind.parse) else _SYNC_PARSE
        _raw_types[kind] = raw
    return raw


def _body_is_ready(result: Any) -> bool:
    """Parsing a raw response does no I/O: a stream body is only wrapped (iterated later by the app),
    any other body must already have been read. The SDK caches the parsed value, so the app's own
    `.parse()` returns the very object Verdict observed (and, for a stream, hooked)."""
    # `_stream` on openai's legacy (with_raw_response) class, `_is_sse_stream` on the others.
    stream = getattr(result, "_stream", False) or getattr(result, "_is_sse_stream", False)
    return stream is True or result.http_response.is_closed


_servers: dict[int, tuple[Any, str, int]] = {}


def server_attributes(instance: Any, attrs: dict[str, Any]) -> None:
    client = instance._client
    # The SDKs' `base_url` property reads `_base_url`; reading it directly skips a slow descriptor call.
    url = getattr(client, "_base_url", None) or client.base_url
    cached = _servers.get(id(url))
    if cached is None or cached[0] is not url:  # the id of a collected URL may be reused
        if len(_servers) > 256:
            _servers.clear()
        cached = _servers[id(url)] = (url, url.host, url.port or (443 if url.scheme == "https" else 80))
    attrs[sc.SERVER_ADDRESS] = cached[1]
    attrs[sc.SERVER_PORT] = cached[2]


def suppressed(ctx: otel_context.Context) -> bool:
    """Whether a call in `ctx` is already traced or must not be (suppression keys, a GenAI span current)."""
    if ctx.get(_SUPPRESS_INSTRUMENTATION_KEY) or ctx.get(_LEGACY_SUPPRESS_KEY) or ctx.get(_SUPPRESS_LLM):
        return True
    # Another GenAI instrumentation's inference span is current: this call is already traced.
    parent = trace.get_current_span(ctx)
    attributes = getattr(parent, "attributes", None)
    return bool(
        attributes
        and getattr(parent, "kind", None) is _CLIENT
        and sc.OPERATION_NAME in attributes
        and parent.is_recording()
    )


class LLMCall:
    __slots__ = ("span", "op", "rt", "attrs", "request", "output", "ended", "start_ns",
                 "first_ns", "acc", "observer", "__weakref__")

    def __init__(self, span: Any, op: Operation, rt: Runtime, request: Any, start_ns: int,
                 attrs: dict[str, Any]) -> None:
        self.span = span
        self.op = op
        self.rt = rt
        self.attrs = attrs  # recorded at span end (see `end`)
        self.request = request
        self.output: Any = None
        self.ended = False
        self.start_ns = start_ns
        self.first_ns = 0
        self.acc: StreamAccumulator | None = None
        self.observer: weakref.ref[Any] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def activate(self) -> Token[Context]:
        ctx = trace.set_span_in_context(self.span)
        return otel_context.attach(otel_context.set_value(_SUPPRESS_LLM, True, ctx))

    def complete(self, result: Any, body: Any = None) -> Any:
        """Record a successful return; hook streams. Returns `result` itself, always.

        `body` is the parsed body of a raw response whose `.parse()` is a coroutine (see `acomplete`)."""
        try:
            target = result
            raw = _raw_kind(result)
            if raw:
                target = body
                if raw == _SYNC_PARSE and _body_is_ready(result):
                    target = result.parse()
            if target is not None and self.op.is_stream(target):
                self._hook_stream(target)
                return result
            if target is not None:
                self.output = self.op.record(self.attrs, target)
        except Exception as exc:
            health.record_error(f"{self.op.provider}.record", exc)
        self.end()
        return result

    async def acomplete(self, result: Any) -> Any:
        """`complete` for async calls: awaits the parse of an async raw response first."""
        body = None
        try:
            if _raw_kind(result) == _ASYNC_PARSE and _body_is_ready(result):
                body = await result.parse()
        except Exception as exc:
            health.record_error(f"{self.op.provider}.record", exc)
        return self.complete(result, body)

    def end(self, error: BaseException | None = None, error_type: str | None = None) -> None:
        if self.ended:
            return
        self.ended = True
        try:
            span = self.span
            attrs = self.attrs
            if error is not None or error_type is not None:
                attrs[sc.ERROR_TYPE] = error_type or canonical_error_type(error)  # type: ignore[arg-type]  # error is set when error_type is not
                span.set_status(_ERROR)
            rt = self.rt
            capture = rt.capture_content and self.op.captures_content
            if rt.deferred_response:
                # Verdict owns the provider: nothing sees the span before its exporter, which adds
                # these attributes off the calling thread (the SDK validates each one under a lock).
                pending = PendingAttributes(self.op, attrs, self.request, self.output)
                if type(span) is CallSpan:
                    span.pending = pending
                else:
                    PENDING[span.get_span_context().span_id] = pending
            else:
                if capture:
                    pending = PendingAttributes(self.op, {}, self.request, self.output)
                    if rt.deferred_content:
                        PENDING[span.get_span_context().span_id] = pending
                    else:
                        attrs.update(pending.attributes(rt.redactor, rt.max_content_bytes))
                if attrs:
                    span.set_attributes(attrs)
        except Exception as exc:
            health.record_error("span_end", exc)
        # An app may keep a finished stream (and so this call) alive: hold no content past the end.
        self.request = self.output = None
        try:
            self.span.end()
            health.count("spans_ended")
        except Exception as exc:
            health.record_error("span_end", exc)

    # -- streams ---------------------------------------------------------------------------

    def _hook_stream(self, stream: Any) -> None:
        acc = self.acc = self.op.accumulator()
        inner = stream._iterator
        response = stream.response
        call_ref = weakref.ref(self)
        if hasattr(inner, "__anext__"):
            observer: Any = _observe_async(inner, self, acc)
            original_aclose = response.aclose

            async def aclose() -> None:
                _closed(call_ref)
                await original_aclose()

            response.aclose = aclose
        else:
            observer = _observe_sync(inner, self, acc)
            original_close = response.close

            def close() -> None:
                _closed(call_ref)
                original_close()

            response.close = close
        self.observer = weakref.ref(observer)
        stream._iterator = observer
        # A stream the app drops without reading or closing ends here (status ERROR, _OTHER).
        weakref.finalize(stream, _abandoned, self)

    def first_chunk(self) -> None:
        self.first_ns = time.monotonic_ns()

    def end_stream(self, completed: bool, error: BaseException | None = None,
                   error_type: str | None = None) -> None:
        if self.ended:
            return
        try:
            if self.first_ns:
                self.attrs[sc.RESPONSE_TIME_TO_FIRST_CHUNK] = (self.first_ns - self.start_ns) / 1e9
            if self.acc is not None:
                self.output = self.acc.finish(self.attrs, completed)
                self.acc = None
        except Exception as exc:
            health.record_error(f"{self.op.provider}.stream_finish", exc)
        self.end(error, error_type)


def _closed(call_ref: weakref.ref[LLMCall]) -> None:
    """The app (or a helper) closed the response. While our observer is running, the stream itself
    is closing its response at its end or on an error, and the observer records that outcome."""
    try:
        call = call_ref()
        if call is None or call.ended:
            return
        observer = call.observer() if call.observer is not None else None
        if observer is not None and (getattr(observer, "gi_running", False) or getattr(observer, "ag_running", False)):
            return
        call.end_stream(completed=False)
    except Exception as exc:
        health.record_error("stream_close", exc)


def _abandoned(call: LLMCall) -> None:
    if not call.ended:
        call.end_stream(completed=False, error_type=sc.ERROR_TYPE_OTHER)


def _record_item(call: LLMCall, acc: StreamAccumulator, item: Any, first: bool) -> None:
    if first:
        call.first_chunk()
    try:
        acc(item)
    except Exception as exc:  # an accumulator bug must never reach the app's loop
        health.record_error(f"{call.op.provider}.stream_item", exc)


def _end_interrupted(call: LLMCall, exc: BaseException) -> None:
    """The app stopped iterating (GeneratorExit) or the stream raised: end the span accordingly."""
    if isinstance(exc, GeneratorExit):
        call.end_stream(completed=False)
    else:
        call.end_stream(completed=False, error=exc)


# Sync and async twins: Python has no single loop over both kinds of iterator.
def _observe_sync(inner: Iterator[Any], call: LLMCall, acc: StreamAccumulator) -> Iterator[Any]:
    first = True
    try:
        for item in inner:
            _record_item(call, acc, item, first)
            first = False
            yield item
    except BaseException as exc:
        _end_interrupted(call, exc)
        raise
    call.end_stream(completed=True)


async def _observe_async(inner: AsyncIterator[Any], call: LLMCall, acc: StreamAccumulator) -> AsyncIterator[Any]:
    first = True
    try:
        async for item in inner:
            _record_item(call, acc, item, first)
            first = False
            yield item
    except BaseException as exc:
        _end_interrupted(call, exc)
        raise
    call.end_stream(completed=True)


# -- starting a call ---------------------------------------------------------------------------


def begin(op: Operation, instance: Any, kwargs: dict[str, Any]) -> LLMCall | None:
    """Start the span of a call, or None when this call is not to be traced. Never raises."""
    rt = STATE.current
    if rt is None or not STATE.instrumented:
        return None
    try:
        ctx = otel_context.get_current()
        if suppressed(ctx):
            return None
        attrs: dict[str, Any] = {sc.OPERATION_NAME: op.name, sc.PROVIDER_NAME: op.provider}
        if rt.dup_system:
            attrs[sc.SYSTEM] = op.provider
        # With deferred response attributes the request ones are deferred too (see LLMCall.end); the
        # span starts with only what samplers and nested-instrumentation checks look at.
        request_attrs = {} if rt.deferred_response else attrs
        model = op.start_attributes(kwargs, request_attrs)
        server_attributes(instance, request_attrs)
        if rt.tenant_id is not None:
            request_attrs[sc.TENANT_ID] = rt.tenant_id
        intent = INTENT_KEY.get()
        if intent is not None:
            request_attrs[sc.INTENT_KEY] = intent
        workload = WORKLOAD.get()
        if workload is not None:
            request_attrs[sc.WORKLOAD] = workload
        request_attrs.update(conversation_attributes())
        request = op.snapshot(kwargs) if rt.capture_content and op.captures_content else None
        start_ns = time.monotonic_ns()
        name = f"{op.name} {model}"
        spans = rt.call_spans
        span = (spans.start(name, ctx, attrs) if spans is not None
                else rt.tracer.start_span(name, context=ctx, kind=_CLIENT, attributes=attrs))
        if not span.is_recording():
            return None
        health.count("spans_started")
        return LLMCall(span, op, rt, request, start_ns, {} if request_attrs is attrs else request_attrs)
    except Exception as exc:
        health.record_error(f"{op.provider}.start", exc)
        return None


def run_sync(op: Operation, instance: Any, kwargs: dict[str, Any], request: Callable[[], Any]) -> Any:
    """Run `request()` inside the call's span (current only while it runs). Never raises on its own."""
    call = begin(op, instance, kwargs)
    if call is None:
        return request()
    try:
        token = call.activate()
    except Exception as exc:
        health.record_error("context_attach", exc)
        call.end()
        return request()
    try:
        result = request()
    except BaseException as exc:
        otel_context.detach(token)
        call.end(exc)
        raise
    otel_context.detach(token)
    return call.complete(result)


async def run_async(op: Operation, instance: Any, kwargs: dict[str, Any], request: Awaitable[Any]) -> Any:
    """Await `request` inside the call's span; the async twin of `run_sync`."""
    call = begin(op, instance, kwargs)
    if call is None:
        return await request
    try:
        token = call.activate()
    except Exception as exc:
        health.record_error("context_attach", exc)
        call.end()
        return await request
    try:
        result = await request
    except BaseException as exc:
        otel_context.detach(token)
        call.end(exc)
        raise
    otel_context.detach(token)
    return await call.acomplete(result)


def sync_wrapper(op: Operation) -> Any:
    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return run_sync(op, instance, kwargs, lambda: wrapped(*args, **kwargs))

    return wrapper


def async_wrapper(op: Operation) -> Any:
    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return run_async(op, instance, kwargs, wrapped(*args, **kwargs))

    return wrapper
