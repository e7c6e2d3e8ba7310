"""What a fake server does with one request: scripted replies, HTTP failures and raw bodies.

Behaviours are provider-neutral; each fake renders them in its own wire format (OpenAI chat
completions, Responses API, Anthropic Messages; plain or streamed as the request asked).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from verdict.models.base import TokenLogprob


@dataclass(frozen=True)
class ToolCall:
    """A function/tool call in the reply; `arguments` is a JSON object or its JSON text."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """A successful model reply.

    finish_reason None means automatic: "stop" (or "tool_calls"), and "length" when the request's
    max_tokens / max_completion_tokens / max_output_tokens is smaller than the reply, in which
    case the reply is cut to that many tokens. Tokens are whitespace-delimited words (or the
    tokens of `logprobs` when given); they are also the stream chunks.
    """

    text: str = "fake reply"
    finish_reason: str | None = None
    # Explicit per-token logprobs; when None and the request asks for logprobs, they are
    # synthesised (chosen token p=0.9, alternatives share the rest).
    logprobs: Sequence[TokenLogprob] | None = None
    tool_calls: Sequence[ToolCall] = ()
    # (input_tokens, output_tokens); None = estimated from the request and the reply.
    usage: tuple[int, int] | None = None
    # Usage subsets reported next to the totals (prompt-cache reads/writes, reasoning tokens).
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    model: str | None = None  # reported model; None = the model the request named
    latency: float = 0.0  # seconds before the response starts
    chunk_delay: float = 0.0  # seconds between stream events
    drip: float = 0.0  # non-streamed replies: send the body one byte per `drip` seconds (a stalling server)
    # Streams only: stop after this many content chunks, by dropping the connection
    # ("disconnect") or by sending the provider's in-stream error event ("error_event").
    abort_after: int | None = None
    abort_mode: Literal["disconnect", "error_event"] = "disconnect"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Fail:
    """An HTTP error reply in the provider's error format (429, 500, 529, 400, 401, ...)."""

    status: int = 500
    message: str = "fake server error"
    retry_after: float | str | None = None  # sent as the Retry-After header
    error_type: str | None = None  # provider error type; None = the usual one for `status`
    latency: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Malformed:
    """Any raw body, by default truncated JSON with status 200."""

    body: bytes = b'{"id": "broken", "choices": [{"message": '
    status: int = 200
    content_type: str = "application/json"
    latency: float = 0.0


Behaviour = Reply | Fail | Malformed


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it."""

    method: str
    path: str
    headers: Mapping[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes
    received_at: float  # time.monotonic() on arrival

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


Handler = Callable[[RecordedRequest], Behaviour | None]

_TOKEN = re.compile(r"\S+\s*|\s+")
_CHOSEN_LOGPROB = math.log(0.9)


def reply_tokens(reply: Reply) -> list[str]:
    if reply.logprobs is not None:
        return [lp.token for lp in reply.logprobs]
    return _TOKEN.findall(reply.text)


def token_logprobs(reply: Reply, tokens: Sequence[str], top_n: int) -> list[TokenLogprob]:
    """The reply's logprobs (explicit or synthesised), alternatives cut to `top_n`."""
    if reply.logprobs is not None:
        given = list(reply.logprobs)[: len(tokens)]
        return [TokenLogprob(lp.token, lp.logprob, tuple(lp.top[:top_n])) for lp in given]
    alternatives = max(top_n - 1, 1)
    other = math.log(0.1 / alternatives)
    return [
        TokenLogprob(t, _CHOSEN_LOGPROB, ((t, _CHOSEN_LOGPROB),) + tuple((f"<alt{i}>", other) for i in range(top_n - 1)))
        if top_n
        else TokenLogprob(t, _CHOSEN_LOGPROB)
        for t in tokens
    ]


@dataclass(frozen=True)
class Rendered:
    """A reply resolved against the request: the tokens sent, finish reason and usage."""

    tokens: list[str]
    finish_reason: str  # OpenAI vocabulary: stop, length, tool_calls, or as scripted
    input_tokens: int
    output_tokens: int
    model: str

    @property
    def text(self) -> str:
        return "".join(self.tokens)


def render(reply: Reply, body: Mapping[str, Any], max_tokens: int | None, prompt_text: str) -> Rendered:
    tokens = reply_tokens(reply)
    finish = reply.finish_reason
    if finish is None:
        finish = "tool_calls" if reply.tool_calls else "stop"
        if max_tokens is not None and len(tokens) > max_tokens:
            tokens, finish = tokens[:max_tokens], "length"
    if reply.usage is not None:
        input_tokens, output_tokens = reply.usage
    else:
        input_tokens = max(len(prompt_text.split()), 1)
        output_tokens = len(tokens) + sum(len(str(c.arguments).split()) for c in reply.tool_calls)
    model = reply.model or str(body.get("model") or "fake-model")
    return Rendered(tokens, finish, input_tokens, output_tokens, model)
