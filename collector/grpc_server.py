"""OTLP/gRPC: opentelemetry.proto.collector.trace.v1.TraceService/Export on grpcio.

The handler takes the raw message bytes (no deserializer) so decoding happens once, in the
decode workers. Logs and metrics services are not registered: grpcio answers UNIMPLEMENTED.
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

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"

_CODES = {
    401: grpc.StatusCode.UNAUTHENTICATED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}


def _export_handler(service: IngestService):
    def export(payload: bytes, context: grpc.ServicerContext) -> bytes:
        metadata = dict(context.invocation_metadata())
        try:
            tenant, authenticated = service.authenticate(metadata.get("authorization"))
            with service.admitted(len(payload)):
                outcome = service.export(payload, None, None, tenant, authenticated)
        except RequestError as exc:
            context.abort(_CODES.get(exc.status, grpc.StatusCode.INVALID_ARGUMENT), exc.message)
        except Overloaded as exc:
            # The OTLP exporters honour RetryInfo as the backoff (gRPC's Retry-After).
            info = RetryInfo(retry_delay=Duration(seconds=exc.retry_after_s))
            context.set_trailing_metadata((("google.rpc.retryinfo-bin", info.SerializeToString()),))
            context.abort(_CODES[exc.status], exc.message)
        return otlp.encode_response(otlp.PROTOBUF, outcome.rejected, outcome.message)

    return export


def create_server(service: IngestService, host: str, port: int, threads: int, max_message_bytes: int):
    """-> (grpc.Server, bound port). Started by the caller."""
    server = grpc.server(
        ThreadPoolExecutor(max_workers=threads, thread_name_prefix="grpc-export"),
        # grpcio reads a message before a handler thread is free: cap how many wait in memory
        # (beyond it: RESOURCE_EXHAUSTED, which the OTLP exporters retry).
        maximum_concurrent_rpcs=2 * threads,
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ],
    )
    handler = grpc.unary_unary_rpc_method_handler(_export_handler(service))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Export": handler}),))
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind gRPC to {host}:{port}")
    return server, bound
