"""OTLP/HTTP on Starlette (served by uvicorn): /v1/traces and /v1/logs, plus /healthz and /stats."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from collector import otlp
from collector.ingest import IngestService
from collector.otlp import RequestError
from collector.writer import Overloaded


def header_deadline_protocol(timeout_s: float) -> type:
    """uvicorn's HTTP protocol, plus a deadline for each request's headers.

    uvicorn times out idle keep-alive connections, but any byte cancels that timer, so a client
    dribbling headers would hold its connection (and a `limit_concurrency` slot) forever. Here a
    connection must complete the headers of its next request within `timeout_s` of opening or of
    its previous response, else it is closed.
    """

    class HeaderDeadlineProtocol(AutoHTTPProtocol):
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            waiting_since = self.cycle  # a new request replaces the cycle once its headers are parsed
            self._deadline = self.loop.call_later(timeout_s, self._expire, waiting_since)

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

    return HeaderDeadlineProtocol


class _BodyTooLarge(Exception):
    pass


async def _read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The whole body within `timeout_s`, at most `limit` bytes (slow or huge clients are cut off)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"request body of {declared} bytes exceeds the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0

    async def read() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _BodyTooLarge
            chunks.append(chunk)

    try:
        await asyncio.wait_for(read(), timeout_s)
    except TimeoutError:
        raise RequestError(408, f"request body not received within {timeout_s:g} s") from None
    except _BodyTooLarge:
        raise RequestError(413, f"request body exceeds the limit of {limit} bytes") from None
    return b"".join(chunks)


def _error(kind: str, status: int, message: str, headers: dict | None = None) -> Response:
    return Response(otlp.error_body(kind, status, message), status_code=status, media_type=kind, headers=headers)


def create_app(
    service: IngestService,
    *,
    max_body_bytes: int,
    read_timeout_s: float,
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
                declared = request.headers.get("content-length", "")
                # Without a length (chunked) the body may grow to the limit: reserve that much.
                with service.admitted(min(int(declared), max_body_bytes) if declared.isdigit() else max_body_bytes):
                    body = await _read_body(request, max_body_bytes, read_timeout_s)
                    outcome = await asyncio.get_running_loop().run_in_executor(
                        executor,
                        service.export,
                        body,
                        kind,
                        request.headers.get("content-encoding"),
                        tenant,
                        authenticated,
                        signal,
                    )
            except RequestError as exc:
                return _error(kind, exc.status, exc.message)
            except Overloaded as exc:
                return _error(kind, exc.status, exc.message, {"Retry-After": str(exc.retry_after_s)})
            body = otlp.encode_response(outcome.kind, outcome.rejected, outcome.message, otlp.SIGNALS[signal])
            return Response(body, status_code=200, media_type=outcome.kind)

        return export

    async def metrics(request: Request) -> Response:
        client = request.client.host if request.client else "unknown"
        service.refuse_metrics(f"{client} ({request.headers.get('user-agent', 'no user-agent')[:80]})")
        return JSONResponse({"code": 12, "message": "metrics are not accepted here; only /v1/traces and /v1/logs"}, 404)

    async def healthz(request: Request) -> Response:
        report = health()
        return JSONResponse(report, 200 if report["status"] == "ok" else 503)

    async def stats_endpoint(request: Request) -> Response:
        return Response(json.dumps(stats()), media_type="application/json")

    app = Starlette(
        routes=[
            Route("/v1/traces", export_route("traces"), methods=["POST"]),
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
