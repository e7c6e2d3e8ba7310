"""What one model call may cost on the wire: a whole-attempt deadline, a maximum reply size, and the count
of requests it sent.

The SDKs' `timeout` is per socket operation: a server that drips one byte every half second never trips
it, and a reply of any size is read whole into memory. Both clients' HTTP client gets two event hooks
(`install`), active only inside a `Call` (a context variable, so other uses of a user's own client are
untouched):
- the request hook counts every POST the call sends, so the final error states the real number;
- the response hook refuses a `content-length` above the limit before reading, lowers the read timeout of
  the body to the time left, and wraps the body stream so that reading stops at the deadline
  (`DeadlineExceeded`, a read timeout to the SDK: kind `timeout`) or past the size limit
  (`ReplyTooLarge`: kind `too_large`, not retried: the same request gets the same reply).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

try:  # the HTTP library under the SDKs: httpx2 for openai 3.x / anthropic 2.x, httpx before
    import httpx2 as http
except ImportError:  # pragma: no cover - older SDKs
    import httpx as http  # type: ignore[no-redef, import-not-found]  # not installed with current SDKs

DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024  # a judge's reply is a few kilobytes; 8 MiB leaves room for logprobs


class ReplyTooLarge(Exception):
    """A reply body past the call's size limit; raised while reading it, before it is all in memory."""

    def __init__(self, limit: int, seen: int) -> None:
        super().__init__(f"the reply is larger than the {limit}-byte limit ({seen} bytes or more)")
        self.limit = limit


@dataclass(slots=True)
class Call:
    """One `complete()` call: its limits and how many requests it has sent so far."""

    max_reply_bytes: int
    deadline: float | None = None  # time.monotonic() by which the current attempt must be answered
    # How long, in multiples of the attempt's timeout, its HTTP exchange may go on past the deadline (awaited in
    # the background on a serial server, provider.py), and the time.monotonic() at which it is cut regardless.
    grace: float = 0.0
    cutoff: float | None = None
    requests: int = 0


_current: ContextVar[Call | None] = ContextVar("verdict_model_call", default=None)


@contextmanager
def call(max_reply_bytes: int) -> Iterator[Call]:
    """The limits every HTTP exchange of the SDK call made inside this block follows."""
    state = Call(max_reply_bytes)
    token = _current.set(state)
    try:
        yield state
    finally:
        _current.reset(token)


def current() -> Call | None:
    return _current.get()


def start_attempt(seconds: float) -> float:
    """The attempt starting now must be answered within `seconds`; the SDK timeout for its exchange."""
    state = _current.get()
    if state is None:
        return seconds
    now = time.monotonic()
    exchange = seconds * (1 + state.grace)
    state.deadline, state.cutoff = now + seconds, now + exchange
    return exchange


def install(http_client: Any) -> None:
    """Add the hooks to an httpx client (once; the SDK client's `_client`, shared by its `with_options` copies)."""
    hooks = http_client.event_hooks
    if _on_request not in hooks["request"]:
        http_client.event_hooks = {"request": [*hooks["request"], _on_request],
                                   "response": [*hooks["response"], _on_response]}


def _on_request(request: Any) -> None:
    state = _current.get()
    if state is not None and request.method == "POST":
        state.requests += 1


def _on_response(response: Any) -> None:
    state = _current.get()
    if state is None:
        return
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > state.max_reply_bytes:
        raise ReplyTooLarge(state.max_reply_bytes, int(length))
    if state.cutoff is not None:
        # The body's reads wait at most the time left (httpcore reads this when it starts on the body).
        timeouts = response.request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            left = max(state.cutoff - time.monotonic(), 0.001)
            timeouts["read"] = left if timeouts.get("read") is None else min(timeouts["read"], left)
    response.stream = _BoundedStream(response.stream, state)


class _BoundedStream(http.SyncByteStream):
    """A response body stream that stops at the call's deadline and size limit."""

    def __init__(self, inner: Any, state: Call) -> None:
        self._inner = inner
        self._state = state

    def __iter__(self) -> Iterator[bytes]:
        seen = 0
        for chunk in self._inner:
            seen += len(chunk)
            if seen > self._state.max_reply_bytes:
                raise ReplyTooLarge(self._state.max_reply_bytes, seen)
            cutoff = self._state.cutoff
            if cutoff is not None and time.monotonic() > cutoff:
                raise http.ReadTimeout("the reply did not arrive before the call's deadline")
            yield chunk

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:  # `elapsed` and the like, read by httpx after the body
        return getattr(self._inner, name)
