"""The shared machinery of the fake LLM servers: uvicorn in a thread, scripting, recording."""

from __future__ import annotations

import asyncio
import importlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Self

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .behaviours import Behaviour, Fail, Handler, Malformed, RecordedRequest, Reply

Endpoint = Callable[[RecordedRequest, Reply], Response]
RESET_DRAIN_S = 10.0  # how long reset() waits for requests still being answered


class StreamAborted(Exception):
    """Raised inside a streaming body to make uvicorn drop the connection mid-stream."""


def sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def sse_response(events: Iterable[bytes | None], reply: Reply, headers: dict[str, str]) -> StreamingResponse:
    """Stream pre-rendered SSE events, honouring chunk_delay; `None` in events marks the abort point."""

    async def body() -> AsyncIterator[bytes]:
        for event in events:
            if event is None:
                raise StreamAborted("fake server dropped the stream")
            yield event
            if reply.chunk_delay:
                await asyncio.sleep(reply.chunk_delay)

    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


class FakeServer:
    """A fake provider API on 127.0.0.1 with an ephemeral port.

    Requests to model endpoints take the next queued behaviour; when the queue is empty the
    handler (if any) decides, and when it returns None the `default` reply is used.
    """

    # Path the official client appends to base_url ("/v1" for OpenAI, "" for Anthropic).
    client_prefix = ""
    # The official SDK: module, sync and async client classes, the key the fake's clients send.
    sdk: tuple[str, str, str] = ("", "", "")
    api_key = ""
    # Headers every reply carries (the provider's request id).
    reply_headers: dict[str, str] = {}

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Behaviour] = deque()
        self._requests: list[RecordedRequest] = []
        self.handler: Handler | None = None
        self.default: Reply = Reply()
        # Requests being answered now and the most there ever were at once (a serial server has 1).
        self.in_flight = 0
        self.max_in_flight = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- provider-specific parts -------------------------------------------------------------
    def endpoints(self) -> dict[str, Endpoint]:
        raise NotImplementedError

    def error_body(self, fail: Fail) -> dict[str, Any]:
        raise NotImplementedError

    def error_response(self, fail: Fail) -> Response:
        headers = {**self.reply_headers, **fail.headers}
        if fail.retry_after is not None:
            headers["retry-after"] = str(fail.retry_after)
        return JSONResponse(self.error_body(fail), status_code=fail.status, headers=headers)

    def _sdk_client(self, class_index: int, kwargs: dict[str, Any]) -> Any:
        module = importlib.import_module(self.sdk[0])
        options = {"base_url": self.base_url, "api_key": self.api_key, "max_retries": 0, **kwargs}
        return getattr(module, self.sdk[class_index])(**options)

    def client(self, **kwargs: Any) -> Any:
        """The official sync client pointed at this server (SDK retries off unless asked)."""
        return self._sdk_client(1, kwargs)

    def async_client(self, **kwargs: Any) -> Any:
        """The official async client pointed at this server (SDK retries off unless asked)."""
        return self._sdk_client(2, kwargs)

    # -- scripting ---------------------------------------------------------------------------
    def enqueue(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    def reset(self) -> None:
        """Forget queued behaviours, the handler, the default reply and recorded requests. Waits (up to
        RESET_DRAIN_S) for requests still being answered, e.g. ones a client gave up on after its timeout:
        they belong to whoever sent them, not to the in-flight count of what comes next."""
        deadline = time.monotonic() + RESET_DRAIN_S
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self.max_in_flight = self.in_flight
            self.handler = None
            self.default = Reply()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            return self._requests[-1]

    def _next(self, recorded: RecordedRequest) -> Behaviour:
        with self._lock:
            self._requests.append(recorded)
            if self._queue:
                return self._queue.popleft()
            handler = self.handler
        chosen = handler(recorded) if handler is not None else None
        return chosen if chosen is not None else self.default

    # -- addresses ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What to pass as `base_url` to the official client."""
        return self.url + self.client_prefix

    # -- lifecycle ---------------------------------------------------------------------------
    def _app(self) -> Starlette:
        routes = [self._route(path, endpoint) for path, endpoint in self.endpoints().items()]
        return Starlette(routes=routes + self.listings())

    def listings(self) -> list[Route]:
        """GET routes describing the server (model lists); none by default."""
        return []

    def _route(self, path: str, endpoint: Endpoint) -> Route:
        async def serve(request: Request) -> Response:
            raw = await request.body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            recorded = RecordedRequest(
                method=request.method,
                path=request.url.path,
                headers={k.lower(): v for k, v in request.headers.items()},
                body=body,
                raw=raw,
                received_at=time.monotonic(),
            )
            behaviour = self._next(recorded)
            with self._lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                if behaviour.latency:
                    await asyncio.sleep(behaviour.latency)
            finally:
                with self._lock:
                    self.in_flight -= 1
            if isinstance(behaviour, Fail):
                return self.error_response(behaviour)
            if isinstance(behaviour, Malformed):
                return Response(behaviour.body, status_code=behaviour.status, media_type=behaviour.content_type)
            if not isinstance(body, dict):
                return self.error_response(Fail(400, "request body must be a JSON object"))
            return endpoint(recorded, behaviour)

        return Route(path, serve, methods=["POST"])

    def start(self) -> Self:
        # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose proto
        # says TCP, and without it every reply stalls ~40 ms on Nagle + delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app(), log_level="critical", lifespan="off", access_log=False,
            timeout_graceful_shutdown=1, log_config=None,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=f"{type(self).__name__}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{type(self).__name__} did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=5)
            self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def json_response(payload: Any, reply: Reply, extra_headers: dict[str, str]) -> Response:
    headers = {**extra_headers, **reply.headers}
    if not reply.drip:
        return JSONResponse(payload, headers=headers)
    body = json.dumps(payload).encode()

    async def drip() -> AsyncIterator[bytes]:  # one byte at a time, chunked (no content-length)
        for index in range(len(body)):
            yield body[index:index + 1]
            await asyncio.sleep(reply.drip)

    return StreamingResponse(drip(), media_type="application/json", headers=headers)


def prompt_text(value: Any) -> str:
    """All string content of a request part, for rough token estimates."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return " ".join(prompt_text(v) for k, v in value.items() if k not in ("role", "type"))
    if isinstance(value, list):
        return " ".join(prompt_text(v) for v in value)
    return ""
