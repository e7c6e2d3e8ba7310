"""OTLP/gRPC: TraceService/Export and LogsService/Export on grpcio.

The handlers take the raw message bytes (no deserializer) so decoding happens once, in the
decode workers. MetricsService/Export answers UNIMPLEMENTED, counted and logged once per sender.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

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
# A handler thread receives its call's message before the in-flight budget sees it: 4 MiB each
# (the OpenTelemetry Collector's gRPC default too) keeps that at 64 MiB with the default 16 threads.
GRPC_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# A client trickling its message holds a handler thread until its own deadline, or until its
# connection is this old (then GOAWAY, and --read-timeout-s of grace for the calls in progress).
GRPC_MAX_CONNECTION_AGE_MS = 120_000

_CODES = {
    401: grpc.StatusCode.UNAUTHENTICATED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}


def _export_handler(service: IngestService, signal: str):
    def export(payload: bytes, context: grpc.ServicerContext) -> bytes:
        metadata = dict(context.invocation_metadata())
        try:
            tenant, authenticated = service.authenticate(metadata.get("authorization"))
            with service.admitted() as reservation:
                reservation.grow(len(payload))  # grpcio hands over whole messages: all received
                outcome = service.export(payload, None, None, tenant, authenticated, signal)
        except RequestError as exc:
            context.abort(_CODES.get(exc.status, grpc.StatusCode.INVALID_ARGUMENT), exc.message)
        except Overloaded as exc:
            # The OTLP exporters honour RetryInfo as the backoff (gRPC's Retry-After).
            info = RetryInfo(retry_delay=Duration(seconds=exc.retry_after_s))
            context.set_trailing_metadata((("google.rpc.retryinfo-bin", info.SerializeToString()),))
            context.abort(_CODES[exc.status], exc.message)
        return otlp.encode_response(otlp.PROTOBUF, outcome.rejected, outcome.message, otlp.SIGNALS[signal])

    return export


def _metrics_handler(service: IngestService):
    def refuse(payload: bytes, context: grpc.ServicerContext) -> bytes:
        peer = context.peer().rsplit(":", 1)[0]
        agent = dict(context.invocation_metadata()).get("user-agent", "no user-agent")[:80]
        service.refuse_metrics(f"{peer} ({agent})")
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "metrics are not accepted here; only traces and logs")

    return refuse


def create_server(
    service: IngestService, host: str, port: int, threads: int, max_message_bytes: int, read_timeout_s: float
):
    """-> (grpc.Server, bound port). Started by the caller."""
    server = grpc.server(
        ThreadPoolExecutor(max_workers=threads, thread_name_prefix="grpc-export"),
        # grpcio reads a message before a handler thread is free: cap how many wait in memory
        # (beyond it: RESOURCE_EXHAUSTED, which the OTLP exporters retry).
        maximum_concurrent_rpcs=2 * threads,
        options=[
            ("grpc.max_receive_message_length", min(max_message_bytes, GRPC_MAX_MESSAGE_BYTES)),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
            ("grpc.max_connection_age_ms", GRPC_MAX_CONNECTION_AGE_MS),
            ("grpc.max_connection_age_grace_ms", int(read_timeout_s * 1000)),
        ],
    )
    handlers = [
        grpc.method_handlers_generic_handler(name, {"Export": grpc.unary_unary_rpc_method_handler(
            _export_handler(service, signal))})
        for signal, name in SERVICES.items()
    ]
    handlers.append(grpc.method_handlers_generic_handler(
        METRICS_SERVICE, {"Export": grpc.unary_unary_rpc_method_handler(_metrics_handler(service))}))
    server.add_generic_rpc_handlers(tuple(handlers))
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind gRPC to {host}:{port}")
    return server, bound
