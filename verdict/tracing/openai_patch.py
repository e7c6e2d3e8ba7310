"""OpenAI: chat completions, Responses API and embeddings (sync and async, streams, raw responses).

`openai` is imported only by the app: `targets()` runs once the app has imported it (`instrument.py`).
"""

from __future__ import annotations

from typing import Any

from verdict import semconv as sc
from verdict.tracing.call import Operation, StreamAccumulator, async_wrapper, sync_wrapper
from verdict.tracing.content import PartBuilder, field

PROVIDER = "openai"

_NUMBER_PARAMS = (
    ("temperature", sc.REQUEST_TEMPERATURE),
    ("top_p", sc.REQUEST_TOP_P),
    ("frequency_penalty", sc.REQUEST_FREQUENCY_PENALTY),
    ("presence_penalty", sc.REQUEST_PRESENCE_PENALTY),
    ("seed", sc.REQUEST_SEED),
)
_NUMBER = (int, float)


def _model(kwargs: dict[str, Any]) -> str:
    model = kwargs.get("model")
    return model if isinstance(model, str) else "unknown"


def _numbers(kwargs: dict[str, Any], attrs: dict[str, Any], params: tuple[tuple[str, str], ...]) -> None:
    for key, attr in params:
        value = kwargs.get(key)
        if type(value) in _NUMBER:
            attrs[attr] = value


def _stop(value: Any, attrs: dict[str, Any]) -> None:
    if isinstance(value, str):
        attrs[sc.REQUEST_STOP_SEQUENCES] = (value,)
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        attrs[sc.REQUEST_STOP_SEQUENCES] = tuple(value)


def _snapshot_list(value: Any) -> tuple[Any, ...] | None:
    # Only real sequences: consuming an iterator here would take it from the SDK.
    return tuple(value) if isinstance(value, (list, tuple)) else None


def _set_usage(attrs: dict[str, Any], usage: Any, input_name: str, output_name: str) -> None:
    if usage is None:
        return
    value = getattr(usage, input_name, None)
    if type(value) is int:
        attrs[sc.USAGE_INPUT_TOKENS] = value  # OpenAI's prompt/input tokens already include cached ones
    value = getattr(usage, output_name, None)
    if type(value) is int:
        attrs[sc.USAGE_OUTPUT_TOKENS] = value
    # Chat usage has `prompt_tokens_details`, Responses usage `input_tokens_details`: only the one named
    # after this usage's own token counts is read (a pydantic model's missing attribute is a slow miss).
    details = getattr(usage, f"{input_name}_details", None)
    cached = getattr(details, "cached_tokens", None)
    if type(cached) is int:
        attrs[sc.USAGE_CACHE_READ_INPUT_TOKENS] = cached
    details = getattr(usage, f"{output_name}_details", None)
    reasoning = getattr(details, "reasoning_tokens", None)
    if type(reasoning) is int:
        attrs[sc.USAGE_REASONING_OUTPUT_TOKENS] = reasoning


# -- chat completions -----------------------------------------------------------------------------


class ChatCompletions(Operation):
    provider = PROVIDER

    def __init__(self, stream_types: tuple[type, ...]) -> None:
        self._stream_types = stream_types

    def start_attributes(self, kwargs: dict[str, Any], attrs: dict[str, Any]) -> str:
        model = attrs[sc.REQUEST_MODEL] = _model(kwargs)
        _numbers(kwargs, attrs, _NUMBER_PARAMS)
        max_tokens = kwargs.get("max_completion_tokens")
        if type(max_tokens) is not int:
            max_tokens = kwargs.get("max_tokens")
        if type(max_tokens) is int:
            attrs[sc.REQUEST_MAX_TOKENS] = max_tokens
        n = kwargs.get("n")
        if type(n) is int and n != 1:
            attrs[sc.REQUEST_CHOICE_COUNT] = n
        stop = kwargs.get("stop")
        if stop is not None:
            _stop(stop, attrs)
        attrs[sc.REQUEST_STREAM] = kwargs.get("stream") is True
        return model

    def snapshot(self, kwargs: dict[str, Any]) -> Any:
        return _snapshot_list(kwargs.get("messages"))

    def is_stream(self, result: Any) -> bool:
        return isinstance(result, self._stream_types)

    def record(self, attrs: dict[str, Any], result: Any) -> Any:
        attrs[sc.RESPONSE_ID] = result.id
        attrs[sc.RESPONSE_MODEL] = result.model
        attrs[sc.RESPONSE_FINISH_REASONS] = tuple(c.finish_reason or "error" for c in result.choices)
        _set_usage(attrs, result.usage, "prompt_tokens", "completion_tokens")
        return result.choices

    def accumulator(self) -> StreamAccumulator:
        return ChatStream()

    def content(self, request: Any, output: Any, parts: PartBuilder) -> dict[str, list[Any]]:
        inputs = [_chat_message(m, parts) for m in request or ()]
        outputs = [
            _assistant_message(
                parts, field(field(c, "message"), "content"), field(field(c, "message"), "tool_calls"),
                field(c, "finish_reason") or "error",
            )
            for c in output or ()
        ]
        return {sc.INPUT_MESSAGES: inputs, sc.OUTPUT_MESSAGES: outputs}


def _assistant_message(parts: PartBuilder, content: Any, tool_calls: Any, finish: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "parts": parts.content_parts(content)}
    for call in tool_calls or ():
        function = field(call, "function")
        message["parts"].append(parts.tool_call(field(call, "id"), field(function, "name"), field(function, "arguments")))
    if finish is not None:
        message["finish_reason"] = finish
    return message


def _chat_message(message: Any, parts: PartBuilder) -> dict[str, Any]:
    role = field(message, "role") or "user"
    if role == "assistant":
        return _assistant_message(parts, field(message, "content"), field(message, "tool_calls"), None)
    if role in ("tool", "function"):
        call_id = field(message, "tool_call_id") or field(message, "name")
        return {"role": "tool", "parts": [parts.tool_response(call_id, field(message, "content"))]}
    return {"role": role, "parts": parts.content_parts(field(message, "content"))}


class _Choice:
    __slots__ = ("text", "tool_calls", "finish_reason")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.tool_calls: dict[int, list[Any]] = {}  # index -> [id, name, argument fragments]
        self.finish_reason: str | None = None


class ChatStream(StreamAccumulator):
    __slots__ = ("id", "model", "choices", "usage")

    def __init__(self) -> None:
        self.id: str | None = None
        self.model: str | None = None
        self.choices: dict[int, _Choice] = {}
        self.usage: Any = None

    def __call__(self, chunk: Any) -> None:
        if self.id is None:
            self.id = chunk.id
            self.model = chunk.model
        for choice in chunk.choices:
            state = self.choices.get(choice.index)
            if state is None:
                state = self.choices[choice.index] = _Choice()
            delta = choice.delta
            if delta is not None:
                if delta.content:
                    state.text.append(delta.content)
                if delta.tool_calls:
                    for tool in delta.tool_calls:
                        slot = state.tool_calls.setdefault(tool.index, [None, None, []])
                        if tool.id:
                            slot[0] = tool.id
                        function = tool.function
                        if function is not None:
                            if function.name:
                                slot[1] = function.name
                            if function.arguments:
                                slot[2].append(function.arguments)
            if choice.finish_reason:
                state.finish_reason = choice.finish_reason
        if chunk.usage is not None:
            self.usage = chunk.usage

    def finish(self, attrs: dict[str, Any], completed: bool) -> Any:
        if self.id is not None:
            attrs[sc.RESPONSE_ID] = self.id
            attrs[sc.RESPONSE_MODEL] = self.model
        ordered = [self.choices[i] for i in sorted(self.choices)]
        attrs[sc.RESPONSE_FINISH_REASONS] = tuple(c.finish_reason or "error" for c in ordered) or ("error",)
        _set_usage(attrs, self.usage, "prompt_tokens", "completion_tokens")
        return [
            {
                "finish_reason": c.finish_reason or "error",
                "message": {
                    "content": "".join(c.text),
                    "tool_calls": [
                        {"id": t[0], "function": {"name": t[1], "arguments": "".join(t[2])}}
                        for _, t in sorted(c.tool_calls.items())
                    ],
                },
            }
            for c in ordered
        ]


# -- Responses API ----------------------------------------------------------------------------------


def _response_finish(response: Any) -> str:
    status = field(response, "status")
    if status == "completed":
        return "stop"
    if status == "incomplete":
        reason = field(field(response, "incomplete_details"), "reason")
        return "length" if reason == "max_output_tokens" else str(reason or "incomplete")
    return "error"


class Responses(Operation):
    provider = PROVIDER

    def __init__(self, stream_types: tuple[type, ...]) -> None:
        self._stream_types = stream_types

    def start_attributes(self, kwargs: dict[str, Any], attrs: dict[str, Any]) -> str:
        model = attrs[sc.REQUEST_MODEL] = _model(kwargs)
        _numbers(kwargs, attrs, _NUMBER_PARAMS[:2])
        max_tokens = kwargs.get("max_output_tokens")
        if type(max_tokens) is int:
            attrs[sc.REQUEST_MAX_TOKENS] = max_tokens
        attrs[sc.REQUEST_STREAM] = kwargs.get("stream") is True
        return model

    def snapshot(self, kwargs: dict[str, Any]) -> Any:
        items = kwargs.get("input")
        instructions = kwargs.get("instructions")
        return (
            items if isinstance(items, str) else _snapshot_list(items),
            instructions if isinstance(instructions, str) else None,
        )

    def is_stream(self, result: Any) -> bool:
        return isinstance(result, self._stream_types)

    def record(self, attrs: dict[str, Any], result: Any) -> Any:
        record_response(attrs, result)
        return result

    def accumulator(self) -> StreamAccumulator:
        return ResponseStream()

    def content(self, request: Any, output: Any, parts: PartBuilder) -> dict[str, list[Any]]:
        items, instructions = request or (None, None)
        result: dict[str, list[Any]] = {}
        if instructions:
            result[sc.SYSTEM_INSTRUCTIONS] = [parts.text(instructions)]
        if isinstance(items, str):
            result[sc.INPUT_MESSAGES] = [{"role": "user", "parts": [parts.text(items)]}]
        elif items:
            result[sc.INPUT_MESSAGES] = [_response_input_item(item, parts) for item in items]
        if output is not None:
            result[sc.OUTPUT_MESSAGES] = [_response_output(output, parts)]
        return result


def record_response(attrs: dict[str, Any], response: Any) -> None:
    attrs[sc.RESPONSE_ID] = response.id
    attrs[sc.RESPONSE_MODEL] = response.model
    attrs[sc.RESPONSE_FINISH_REASONS] = (_response_finish(response),)
    _set_usage(attrs, response.usage, "input_tokens", "output_tokens")


def _response_input_item(item: Any, parts: PartBuilder) -> dict[str, Any]:
    kind = field(item, "type")
    if kind == "function_call":
        return {"role": "assistant", "parts": [parts.tool_call(field(item, "call_id"), field(item, "name"), field(item, "arguments"))]}
    if kind == "function_call_output":
        return {"role": "tool", "parts": [parts.tool_response(field(item, "call_id"), field(item, "output"))]}
    return {"role": field(item, "role") or "user", "parts": parts.content_parts(field(item, "content"))}


def _response_output(response: Any, parts: PartBuilder) -> dict[str, Any]:
    """All output items of a Response (or of a partial stream: a dict with `text`) as one assistant message."""
    if isinstance(response, dict):
        return {"role": "assistant", "parts": [parts.text(response["text"])] if response["text"] else [],
                "finish_reason": "error"}
    message_parts: list[Any] = []
    for item in field(response, "output") or ():
        kind = field(item, "type")
        if kind == "message":
            message_parts.extend(parts.content_parts(field(item, "content")))
        elif kind == "function_call":
            message_parts.append(parts.tool_call(field(item, "call_id"), field(item, "name"), field(item, "arguments")))
        elif kind == "reasoning":
            for summary in field(item, "summary") or ():
                message_parts.append(parts.text(field(summary, "text") or "", "reasoning"))
    return {"role": "assistant", "parts": message_parts, "finish_reason": _response_finish(response)}


_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


class ResponseStream(StreamAccumulator):
    __slots__ = ("response", "id", "model", "text")

    def __init__(self) -> None:
        self.response: Any = None
        self.id: str | None = None
        self.model: str | None = None
        self.text: list[str] = []

    def __call__(self, event: Any) -> None:
        kind = event.type
        if kind == "response.output_text.delta":
            self.text.append(event.delta)
        elif kind in _FINAL_EVENTS:
            self.response = event.response
        elif kind == "response.created":
            self.id = event.response.id
            self.model = event.response.model

    def finish(self, attrs: dict[str, Any], completed: bool) -> Any:
        if self.response is not None:
            record_response(attrs, self.response)
            return self.response
        if self.id is not None:
            attrs[sc.RESPONSE_ID] = self.id
            attrs[sc.RESPONSE_MODEL] = self.model
        attrs[sc.RESPONSE_FINISH_REASONS] = ("error",)
        return {"text": "".join(self.text)}


# -- embeddings ----------------------------------------------------------------------------------


class Embeddings(Operation):
    provider = PROVIDER
    name = sc.OPERATION_EMBEDDINGS
    captures_content = False

    def start_attributes(self, kwargs: dict[str, Any], attrs: dict[str, Any]) -> str:
        model = attrs[sc.REQUEST_MODEL] = _model(kwargs)
        fmt = kwargs.get("encoding_format")
        if isinstance(fmt, str):
            attrs[sc.REQUEST_ENCODING_FORMATS] = (fmt,)
        dims = kwargs.get("dimensions")
        if type(dims) is int:
            attrs[sc.EMBEDDINGS_DIMENSION_COUNT] = dims
        return model

    def record(self, attrs: dict[str, Any], result: Any) -> Any:
        attrs[sc.RESPONSE_MODEL] = result.model
        usage = result.usage
        if usage is not None and type(usage.prompt_tokens) is int:
            attrs[sc.USAGE_INPUT_TOKENS] = usage.prompt_tokens
        return None


# -- patching ------------------------------------------------------------------------------------


def targets() -> list[tuple[Any, str, Any]]:
    """(class, method name, wrapper) for every patched OpenAI method. Imports openai."""
    from openai import AsyncStream, Stream
    from openai.resources.chat.completions import AsyncCompletions, Completions
    from openai.resources.embeddings import AsyncEmbeddings
    from openai.resources.embeddings import Embeddings as SyncEmbeddings

    found: list[tuple[Any, str, Any]] = []
    chat_sync, chat_async = ChatCompletions((Stream,)), ChatCompletions((AsyncStream,))
    found += [(Completions, "create", sync_wrapper(chat_sync)), (AsyncCompletions, "create", async_wrapper(chat_async))]
    # .parse() posts directly (not via create); .stream() calls create(stream=True) and is covered by it.
    if hasattr(Completions, "parse"):
        found += [(Completions, "parse", sync_wrapper(chat_sync)), (AsyncCompletions, "parse", async_wrapper(chat_async))]
    found += [
        (SyncEmbeddings, "create", sync_wrapper(Embeddings())),
        (AsyncEmbeddings, "create", async_wrapper(Embeddings())),
    ]
    try:
        from openai.resources.responses import AsyncResponses
        from openai.resources.responses import Responses as SyncResponses
    except ImportError:  # openai < 1.66 has no Responses API
        return found
    resp_sync, resp_async = Responses((Stream,)), Responses((AsyncStream,))
    found += [(SyncResponses, "create", sync_wrapper(resp_sync)), (AsyncResponses, "create", async_wrapper(resp_async))]
    if hasattr(SyncResponses, "parse"):
        found += [(SyncResponses, "parse", sync_wrapper(resp_sync)), (AsyncResponses, "parse", async_wrapper(resp_async))]
    return found
