"""OTLP/HTTP on Starlette (served by uvicorn): /v1/traces and /v1/logs, plus /healthz and /stats.

/api/public/otel/v1/traces is /v1/traces under the path the Langfuse SDK's exporter posts to
(`<base_url>/api/public/otel/v1/traces`), so a Langfuse app needs only its base URL changed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from collector import otlp
from collector.ingest import IngestService, Reservation
from collector.otlp import RequestError
from collector.writer import Overloaded

log = logging.getLogger("verdict.collector")
LANGFUSE_TRACES_PATH = "/api/public/otel/v1/traces"


@dataclass(frozen=True)
class HeadLimits:
    timeout_s: float  # the head of each request must be complete this long after the connection (or its previous response)
    max_bytes: int = 64 * 1024
    max_fields: int = 100


def guarded_protocol(limits: HeadLimits) -> type:
    """uvicorn's httptools protocol class with a deadline and a size limit for each request's head."""
    return type("GuardedProtocol", (_GuardedProtocol,), {"head_limits": limits})


class _GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, plus a deadline and a size limit for each request's head.

    uvicorn times out idle keep-alive connections, but any byte cancels that timer, so a client
    dribbling headers would hold its connection (and a `limit_concurrency` slot) forever. Here a
    connection must complete the headers of its next request within `head_limits.timeout_s` of opening
    or of its previous response, else it is closed. httptools itself has no size limit (a header
    without CRLF grows in memory as long as it is sent): beyond `max_bytes` or `max_fields` the
    connection gets 431 and is closed.
    """

    head_limits: HeadLimits  # set by guarded_protocol
    _deadline: asyncio.TimerHandle | None = None
    _in_head = True  # between requests, or receiving a request's start line and headers
    _head_bytes = 0
    _head_fields = 0
    _field_bytes = 0
    _heads = 0  # heads completed on this connection
    _refusal: str | None = None

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        waiting_since = self.cycle  # a new request replaces the cycle once its headers are parsed
        self._deadline = self.loop.call_later(self.head_limits.timeout_s, self._expire, waiting_since)

    def _expire(self, waiting_since) -> None:
        idle = self.cycle is None or self.cycle.response_complete
        if self.cycle is waiting_since and idle and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        in_head, heads = self._in_head, self._heads
        super().data_received(data)
        # Counted after parsing: a chunk that completed a head (and carries body bytes) is not.
        if in_head and self._heads == heads and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > self.head_limits.max_bytes:
                self._send_431(f"request headers exceed {self.head_limits.max_bytes} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        # A whole head can arrive in one chunk, before data_received counts it: count fields too.
        self._head_fields += 1
        self._field_bytes += len(name) + len(value)
        if self._head_fields > self.head_limits.max_fields:
            self._refusal = f"more than {self.head_limits.max_fields} request header fields"
        elif self._field_bytes > self.head_limits.max_bytes:
            self._refusal = f"request headers exceed {self.head_limits.max_bytes} bytes"
        if self._refusal is not None:
            raise _HeadTooLarge  # httptools stops parsing; uvicorn answers via send_400_response
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._heads += 1
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head, self._head_bytes, self._head_fields, self._field_bytes = True, 0, 0, 0

    def send_400_response(self, msg: str) -> None:
        if self._refusal is not None:
            self._send_431(self._refusal)
        else:
            super().send_400_response(msg)

    def _send_431(self, msg: str) -> None:
        body = msg.encode()
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
        )
        self.transport.close()


class _HeadTooLarge(Exception):
    pass


@dataclass(frozen=True)
class BodyLimits:
    max_bytes: int
    timeout_s: float  # the whole body
    idle_timeout_s: float  # between two chunks of it


async def read_body(request: Request, reservation: Reservation, limits: BodyLimits) -> bytes:
    """The whole body, each chunk counted against the in-flight budget as it arrives (Overloaded: 429).

    RequestError 413 beyond `limits.max_bytes`, 408 when the body stalls for `idle_timeout_s` or
    takes longer than `timeout_s` in all; ClientDisconnect when the client goes away.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_bytes:
        raise RequestError(413, f"request body of {declared} bytes exceeds the limit of {limits.max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    deadline = asyncio.get_running_loop().time() + limits.timeout_s
    stream = request.stream()
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        wait = min(limits.idle_timeout_s, remaining)
        try:
            chunk = await asyncio.wait_for(anext(stream), max(wait, 0))
        except StopAsyncIteration:
            return b"".join(chunks)
        except TimeoutError:
            what = f"within {limits.timeout_s:g} s" if wait == remaining else f"for {limits.idle_timeout_s:g} s"
            raise RequestError(408, f"request body not received {what}") from None
        size += len(chunk)
        if size > limits.max_bytes:
            raise RequestError(413, f"request body exceeds the limit of {limits.max_bytes} bytes")
        reservation.grow(len(chunk))
        chunks.append(chunk)


def _sender(request: Request) -> str:
    """The client as what is logged once per sender names it: address and user agent."""
    client = request.client.host if request.client else "unknown"
    return f"{client} ({request.headers.get('user-agent', 'no user-agent')[:80]})"


def _error(kind: str, status: int, message: str, headers: dict | None = None) -> Response:
    return Response(otlp.error_body(kind, status, message), status_code=status, media_type=kind, headers=headers)


def create_app(
    service: IngestService,
    *,
    body_limits: BodyLimits,
    threads: int,
    health: Callable[[], dict],
    stats: Callable[[], dict],
) -> Starlette:
    # Exports block until their batch is durable; they wait in threads, not on the event loop.
    executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http-export")

    def export_route(signal: str):
        async def export(request: Request) -> Response:
            kind = otlp.JSON
            try:
                kind = otlp.media_type(request.headers.get("content-type"))
                tenant, authenticated = service.authenticate(request.headers.get("authorization"))
                with service.admitted() as reservation:
                    body = await read_body(request, reservation, body_limits)
                    outcome = await asyncio.get_running_loop().run_in_executor(
                        executor,
                        service.export,
                        body,
                        kind,
                        request.headers.get("content-encoding"),
                        tenant,
                        authenticated,
                        signal,
                        _sender(request),
                    )
            except RequestError as exc:
                return _error(kind, exc.status, exc.message)
            except Overloaded as exc:
                return _error(kind, exc.status, exc.message, {"Retry-After": str(exc.retry_after_s)})
            except ClientDisconnect:  # nobody to answer; a routine event, not an error
                service.stats.add(client_disconnects=1)
                log.debug("client disconnected before its request body was complete")
                return Response(status_code=400)
            body = otlp.encode_response(outcome.kind, outcome.rejected, outcome.message, otlp.SIGNALS[signal])
            return Response(body, status_code=200, media_type=outcome.kind)

        return export

    async def metrics(request: Request) -> Response:
        service.refuse_metrics(_sender(request))
        return JSONResponse({"code": 12, "message": "metrics are not accepted here; only /v1/traces and /v1/logs"}, 404)

    async def healthz(request: Request) -> Response:
        report = health()
        return JSONResponse(report, 200 if report["status"] == "ok" else 503)

    async def stats_endpoint(request: Request) -> Response:
        return Response(json.dumps(stats()), media_type="application/json")

    app = Starlette(
        routes=[
            Route("/v1/traces", export_route("traces"), methods=["POST"]),
            Route(LANGFUSE_TRACES_PATH, export_route("traces"), methods=["POST"]),
            Route("/v1/logs", export_route("logs"), methods=["POST"]),
            Route("/v1/metrics", metrics, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/stats", stats_endpoint, methods=["GET"]),
        ],
        lifespan=lambda app: _shutdown_executor_on_exit(executor),
    )
    return app


@contextlib.asynccontextmanager
async def _shutdown_executor_on_exit(executor: ThreadPoolExecutor):
    yield
    executor.shutdown(wait=True)
