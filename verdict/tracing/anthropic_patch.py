"""Anthropic: messages.create (sync, async, stream=True), messages.parse and the messages.stream(...) managers.

anthropic 2.x starts its own OpenTelemetry span per call unless ANTHROPIC_OPEN_TELEMETRY=false.
One call must be one inference span with one token count, so while a Verdict span is current the
SDK's span is not started (its `start_api_call_span` hook returns None, as it does for requests
without a span name). `anthropic` is imported only by `targets()`, once the app has imported it (`instrument.py`).
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context

from verdict import semconv as sc
from verdict.tracing import health
from verdict.tracing.call import (
    Operation,
    StreamAccumulator,
    async_wrapper,
    run_async,
    run_sync,
    suppressed,
    sync_wrapper,
)
from verdict.tracing.content import PartBuilder, field

PROVIDER = "anthropic"

_PARAMS = (
    ("temperature", sc.REQUEST_TEMPERATURE),
    ("top_p", sc.REQUEST_TOP_P),
    ("top_k", sc.REQUEST_TOP_K),
    ("max_tokens", sc.REQUEST_MAX_TOKENS),
)
_NUMBER = (int, float)


def _set_usage(attrs: dict[str, Any], input_tokens: Any, cache_read: Any, cache_write: Any, output: Any,
               thinking: Any) -> None:
    total_input = 0
    known = False
    for value in (input_tokens, cache_read, cache_write):
        if type(value) is int:
            total_input += value
            known = True
    if known:
        # Anthropic reports cached input separately; semconv input tokens include it.
        attrs[sc.USAGE_INPUT_TOKENS] = total_input
    if type(cache_read) is int:
        attrs[sc.USAGE_CACHE_READ_INPUT_TOKENS] = cache_read
    if type(cache_write) is int:
        attrs[sc.USAGE_CACHE_CREATION_INPUT_TOKENS] = cache_write
    if type(output) is int:
        attrs[sc.USAGE_OUTPUT_TOKENS] = output
    if type(thinking) is int:
        attrs[sc.USAGE_REASONING_OUTPUT_TOKENS] = thinking


def _usage_of(usage: Any) -> tuple[Any, Any, Any, Any, Any]:
    if usage is None:
        return None, None, None, None, None
    details = getattr(usage, "output_tokens_details", None)
    return (
        getattr(usage, "input_tokens", None),
        getattr(usage, "cache_read_input_tokens", None),
        getattr(usage, "cache_creation_input_tokens", None),
        getattr(usage, "output_tokens", None),
        getattr(details, "thinking_tokens", None),
    )


class MessagesCreate(Operation):
    provider = PROVIDER

    def __init__(self, stream_types: tuple[type, ...]) -> None:
        self._stream_types = stream_types

    def start_attributes(self, kwargs: dict[str, Any], attrs: dict[str, Any]) -> str:
        model = kwargs.get("model")
        model = attrs[sc.REQUEST_MODEL] = model if isinstance(model, str) else "unknown"
        for key, attr in _PARAMS:
            value = kwargs.get(key)
            if type(value) in _NUMBER:
                attrs[attr] = value
        stop = kwargs.get("stop_sequences")
        if isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop):
            attrs[sc.REQUEST_STOP_SEQUENCES] = tuple(stop)
        attrs[sc.REQUEST_STREAM] = kwargs.get("stream") is True
        return model

    def snapshot(self, kwargs: dict[str, Any]) -> Any:
        messages = kwargs.get("messages")
        system = kwargs.get("system")
        return (
            tuple(messages) if isinstance(messages, (list, tuple)) else None,
            system if isinstance(system, (str, list, tuple)) else None,
        )

    def is_stream(self, result: Any) -> bool:
        return isinstance(result, self._stream_types)

    def record(self, attrs: dict[str, Any], result: Any) -> Any:
        attrs[sc.RESPONSE_ID] = result.id
        attrs[sc.RESPONSE_MODEL] = result.model
        attrs[sc.RESPONSE_FINISH_REASONS] = (result.stop_reason or "error",)
        _set_usage(attrs, *_usage_of(result.usage))
        return result.content, result.stop_reason

    def accumulator(self) -> StreamAccumulator:
        return MessageStreamAccumulator()

    def content(self, request: Any, output: Any, parts: PartBuilder) -> dict[str, list[Any]]:
        messages, system = request or (None, None)
        result: dict[str, list[Any]] = {}
        if system:
            result[sc.SYSTEM_INSTRUCTIONS] = parts.content_parts(system)
        if messages:
            result[sc.INPUT_MESSAGES] = [
                {"role": field(m, "role") or "user", "parts": parts.content_parts(field(m, "content"))}
                for m in messages
            ]
        if output is not None:
            blocks, stop_reason = output
            result[sc.OUTPUT_MESSAGES] = [
                {"role": "assistant", "parts": parts.content_parts(blocks), "finish_reason": stop_reason or "error"}
            ]
        return result


class MessageStreamAccumulator(StreamAccumulator):
    """Usage: input side from `message_start`, output tokens from the last `message_delta` (cumulative)."""

    __slots__ = ("id", "model", "blocks", "stop_reason", "usage_start", "usage_delta")

    def __init__(self) -> None:
        self.id: str | None = None
        self.model: str | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop_reason: str | None = None
        self.usage_start: Any = None
        self.usage_delta: Any = None

    def __call__(self, event: Any) -> None:
        kind = event.type
        if kind == "content_block_delta":
            block = self.blocks.get(event.index)
            if block is None:
                return
            delta = event.delta
            dtype = delta.type
            if dtype == "text_delta":
                block["chunks"].append(delta.text)
            elif dtype == "input_json_delta":
                block["chunks"].append(delta.partial_json)
            elif dtype == "thinking_delta":
                block["chunks"].append(delta.thinking)
        elif kind == "content_block_start":
            cb = event.content_block
            self.blocks[event.index] = {"type": cb.type, "id": getattr(cb, "id", None),
                                        "name": getattr(cb, "name", None), "chunks": []}
        elif kind == "message_start":
            message = event.message
            self.id = message.id
            self.model = message.model
            self.usage_start = message.usage
        elif kind == "message_delta":
            if event.delta.stop_reason:
                self.stop_reason = event.delta.stop_reason
            self.usage_delta = event.usage

    def finish(self, attrs: dict[str, Any], completed: bool) -> Any:
        if self.id is not None:
            attrs[sc.RESPONSE_ID] = self.id
            attrs[sc.RESPONSE_MODEL] = self.model
        attrs[sc.RESPONSE_FINISH_REASONS] = (self.stop_reason or "error",)
        start = _usage_of(self.usage_start)
        delta = _usage_of(self.usage_delta)
        # A later non-null value supersedes: message_delta usage is cumulative, never to be added.
        merged = tuple(d if d is not None else s for s, d in zip(start, delta, strict=True))
        _set_usage(attrs, *merged)
        blocks = []
        for _, block in sorted(self.blocks.items()):
            text = "".join(block["chunks"])
            if block["type"] == "tool_use":
                blocks.append({"type": "tool_use", "id": block["id"], "name": block["name"], "input": text or None})
            elif block["type"] == "thinking":
                blocks.append({"type": "thinking", "thinking": text})
            else:
                blocks.append({"type": block["type"], "text": text})
        return blocks, self.stop_reason


# -- messages.stream(...) managers ------------------------------------------------------------------


def _stream_manager_wrapper(op: MessagesCreate, attr: str, is_async: bool) -> Any:
    """Wrap `messages.stream(**kwargs)`: the returned manager's request starts the span when entered."""

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        manager = wrapped(*args, **kwargs)
        try:
            request = getattr(manager, attr)
            call_kwargs = {**kwargs, "stream": True}
            if is_async:
                setattr(manager, attr, _AwaitWithSpan(request, op, instance, call_kwargs))
            else:
                setattr(manager, attr, lambda: run_sync(op, instance, call_kwargs, request))
        except Exception as exc:
            health.record_error("anthropic.stream_manager", exc)
        return manager

    return wrapper


class _AwaitWithSpan:
    """Awaitable standing in for the async manager's pending request; the span starts when awaited
    (a plain coroutine here would warn 'never awaited' for managers that are never entered)."""

    __slots__ = ("_request", "_op", "_instance", "_kwargs")

    def __init__(self, request: Any, op: MessagesCreate, instance: Any, kwargs: dict[str, Any]) -> None:
        self._request = request
        self._op = op
        self._instance = instance
        self._kwargs = kwargs

    def __await__(self) -> Any:
        return run_async(self._op, self._instance, self._kwargs, self._request).__await__()


def _native_span_gate(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The SDK's own call span: not while a Verdict (or other GenAI) inference span is current, nor
    under a suppression key."""
    if suppressed(otel_context.get_current()):
        return None
    return wrapped(*args, **kwargs)


def targets() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, wrapper) for every patch. Imports anthropic."""
    import anthropic._base_client as base_client
    from anthropic import AsyncStream, Stream
    from anthropic.lib.streaming import AsyncMessageStreamManager, MessageStreamManager
    from anthropic.resources.messages import AsyncMessages, Messages

    sync_op, async_op = MessagesCreate((Stream,)), MessagesCreate((AsyncStream,))
    found: list[tuple[Any, str, Any]] = [
        (Messages, "create", sync_wrapper(sync_op)),
        (AsyncMessages, "create", async_wrapper(async_op)),
        (Messages, "stream", _stream_manager_wrapper(
            sync_op, f"_{MessageStreamManager.__name__}__api_request", is_async=False)),
        (AsyncMessages, "stream", _stream_manager_wrapper(
            async_op, f"_{AsyncMessageStreamManager.__name__}__api_request", is_async=True)),
    ]
    if hasattr(Messages, "parse"):  # newer SDKs: posts directly, not through create()
        found += [(Messages, "parse", sync_wrapper(sync_op)), (AsyncMessages, "parse", async_wrapper(async_op))]
    if hasattr(base_client, "start_api_call_span"):  # anthropic >= 2 emits its own spans
        found.append((base_client, "start_api_call_span", _native_span_gate))
    return found
