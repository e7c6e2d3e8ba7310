"""OTLP/gRPC: TraceService/Export and LogsService/Export on grpc.aio, in a thread of its own.

One event loop receives every call's message, so a call waiting for its message costs a
coroutine, not a thread: a client that trickles its message, or opens streams and sends nothing,
cannot take the handler threads honest calls need. Receiving has a deadline (`--read-timeout-s`,
DEADLINE_EXCEEDED) and a bound on how many calls may wait at once (`receiving_calls`): a new call
beyond it ends the one that has waited longest (RESOURCE_EXHAUSTED + RetryInfo). Partly received
messages live in grpc core's buffers (up to 4 MiB each, unseen by the in-flight budget), so that
bound is also what bounds their memory. A received message is admitted to the in-flight budget
and handed to `export_threads` threads, where decoding (in the decode workers) and the wait for
fsync happen; the loop never blocks on them.

The handlers take the raw message bytes (no deserializer) so decoding happens once, in the
decode workers. MetricsService/Export answers UNIMPLEMENTED, counted and logged once per sender.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import cast

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo

from collector import otlp
from collector.ingest import IngestService
from collector.otlp import RequestError
from collector.writer import Overloaded

SERVICES = {
    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
}
METRICS_SERVICE = "opentelemetry.proto.collector.metrics.v1.MetricsService"
# The OpenTelemetry Collector's gRPC default too; also the most a call waiting for its message holds.
GRPC_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# Connections are recycled (GOAWAY, then --read-timeout-s of grace for the calls in progress).
GRPC_MAX_CONNECTION_AGE_MS = 120_000
# Calls grpc core keeps state for at once (beyond: RESOURCE_EXHAUSTED). Each one is either receiving
# (bounded by `receiving_calls`) or holds in-flight budget, so this only caps per-call bookkeeping.
GRPC_MAX_CONCURRENT_CALLS = 1024

_CODES = {
    401: grpc.StatusCode.UNAUTHENTICATED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}


@dataclass(frozen=True)
class GrpcLimits:
    max_message_bytes: int
    receive_timeout_s: float  # a call's message must have arrived this long after the call started
    receiving_calls: int  # calls waiting for their message at once; a new one ends the longest waiting
    export_threads: int  # threads that wait for decode and fsync


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str, retry_after_s: int | None = None):
        super().__init__(message)
        self.code, self.message, self.retry_after_s = code, message, retry_after_s


class _Receiver:
    """Reads each call's one message on the event loop, within a deadline and a bound on waiting calls."""

    def __init__(self, limits: GrpcLimits):
        self._limits = limits
        # Calls still receiving, oldest first; resolving a call's future evicts it.
        self._waiting: collections.OrderedDict[asyncio.Future, None] = collections.OrderedDict()

    async def message(self, context: grpc.aio.ServicerContext) -> bytes:
        evicted = asyncio.get_running_loop().create_future()
        if len(self._waiting) >= self._limits.receiving_calls:
            oldest, _ = self._waiting.popitem(last=False)
            oldest.set_result(None)
        self._waiting[evicted] = None
        read = asyncio.ensure_future(context.read())
        try:
            done, _ = await asyncio.wait({read, evicted}, timeout=self._limits.receive_timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiting.pop(evicted, None)
            if not read.done():
                read.cancel()
        if read in done:
            message = read.result()
            if message is grpc.aio.EOF:
                raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "the call carried no request message")
            return cast(bytes, message)  # the method's request deserializer is None: raw bytes
        if evicted in done:
            raise _Refused(grpc.StatusCode.RESOURCE_EXHAUSTED,
                           f"more than {self._limits.receiving_calls} calls waiting for their message; "
                           "this one waited longest", retry_after_s=1)
        raise _Refused(grpc.StatusCode.DEADLINE_EXCEEDED,
                       f"request message not received within {self._limits.receive_timeout_s:g} s")


async def _refuse(context: grpc.aio.ServicerContext, refusal: _Refused):
    if refusal.retry_after_s is not None:
        # The OTLP exporters honour RetryInfo as the backoff (gRPC's Retry-After).
        info = RetryInfo(retry_delay=Duration(seconds=refusal.retry_after_s))
        context.set_trailing_metadata((("google.rpc.retryinfo-bin", info.SerializeToString()),))
    await context.abort(refusal.code, refusal.message)


def _header(context: grpc.aio.ServicerContext, key: str) -> str | None:
    """A text header of the call (only `-bin` keys carry bytes)."""
    value = dict(context.invocation_metadata() or ()).get(key)
    return cast(str | None, value)


def _sender(context: grpc.aio.ServicerContext) -> str:
    """The client as what is logged once per sender names it: address and user agent."""
    peer = context.peer().rsplit(":", 1)[0]
    return f"{peer} ({(_header(context, 'user-agent') or 'no user-agent')[:80]})"


def _export_handler(service: IngestService, receiver: _Receiver, executor: ThreadPoolExecutor, signal: str):
    async def export(requests, context: grpc.aio.ServicerContext) -> bytes:
        try:
            tenant, authenticated = service.authenticate(_header(context, "authorization"))
            payload = await receiver.message(context)
            outcome = await _export_admitted(service, executor, payload, tenant, authenticated, signal,
                                             _sender(context))
        except RequestError as exc:
            await _refuse(context, _Refused(_CODES.get(exc.status, grpc.StatusCode.INVALID_ARGUMENT), exc.message))
        except Overloaded as exc:
            await _refuse(context, _Refused(_CODES[exc.status], exc.message, exc.retry_after_s))
        except _Refused as refusal:
            await _refuse(context, refusal)
        return otlp.encode_response(otlp.PROTOBUF, outcome.rejected, outcome.message, otlp.SIGNALS[signal])

    return export


async def _export_admitted(service, executor, payload: bytes, tenant: str, authenticated: bool, signal: str,
                           sender: str):
    """Hold the message's bytes of the in-flight budget until its export thread is done, even when the
    call is cancelled meanwhile (the thread still holds the message)."""
    admission = contextlib.ExitStack()
    with admission:
        admission.enter_context(service.admitted()).grow(len(payload))  # the whole message was received
        future = asyncio.get_running_loop().run_in_executor(
            executor, service.export, payload, None, None, tenant, authenticated, signal, sender)
        held = admission.pop_all()
    future.add_done_callback(lambda _: held.close())
    return await asyncio.shield(future)


def _metrics_handler(service: IngestService):
    async def refuse(requests, context: grpc.aio.ServicerContext) -> bytes:
        service.refuse_metrics(_sender(context))
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "metrics are not accepted here; only traces and logs")

    return refuse


class GrpcReceiver:
    """The gRPC server and its event loop thread: `start()` -> bound port, `stop(grace)` drains."""

    def __init__(self, service: IngestService, host: str, port: int, limits: GrpcLimits):
        self._service, self._host, self._port, self._limits = service, host, port, limits
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="grpc-loop", daemon=True)
        self._server: grpc.aio.Server | None = None
        self._executor = ThreadPoolExecutor(max_workers=limits.export_threads, thread_name_prefix="grpc-export")

    def start(self) -> int:
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()

    async def _start(self) -> int:
        limits = self._limits
        self._server = grpc.aio.server(
            maximum_concurrent_rpcs=GRPC_MAX_CONCURRENT_CALLS,
            options=[
                ("grpc.max_receive_message_length", min(limits.max_message_bytes, GRPC_MAX_MESSAGE_BYTES)),
                ("grpc.max_send_message_length", 4 * 1024 * 1024),
                ("grpc.max_connection_age_ms", GRPC_MAX_CONNECTION_AGE_MS),
                ("grpc.max_connection_age_grace_ms", int(limits.receive_timeout_s * 1000)),
            ],
        )
        receiver = _Receiver(limits)
        # Streaming-request handlers, so a call reaches Python before its message has arrived (its
        # deadline starts then); the wire format is the same as a unary call's.
        handlers = [
            grpc.method_handlers_generic_handler(name, {"Export": grpc.stream_unary_rpc_method_handler(
                _export_handler(self._service, receiver, self._executor, signal))})
            for signal, name in SERVICES.items()
        ]
        handlers.append(grpc.method_handlers_generic_handler(
            METRICS_SERVICE, {"Export": grpc.stream_unary_rpc_method_handler(_metrics_handler(self._service))}))
        self._server.add_generic_rpc_handlers(tuple(handlers))
        try:
            bound = self._server.add_insecure_port(f"{self._host}:{self._port}")
        except RuntimeError:  # grpcio reports a failed bind this way
            bound = 0
        if bound == 0:
            raise OSError(f"cannot bind gRPC to {self._host}:{self._port}")
        await self._server.start()
        return bound

    def stop(self, grace: float) -> None:
        """Refuse new calls, let calls in progress finish (acknowledged once durable) for up to `grace` s."""
        if self._server is not None:
            asyncio.run_coroutine_threadsafe(self._server.stop(grace), self._loop).result()
        self._executor.shutdown(wait=True)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
