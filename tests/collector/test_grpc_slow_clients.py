"""Issue 16 item 2, gRPC: slow or silent gRPC calls cannot starve the real OTLP gRPC exporter.

The real collector process; slow clients are real grpcio channels whose calls send headers and
then no message, and raw HTTP/2 connections that send part of a message and stop (trickling).
"""

from __future__ import annotations

import socket
import struct
import threading

import grpc
import psutil
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.collector.conftest import read_spans

EXPORT_PATH = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
SILENT_CALLS = 48  # more than the 32 calls the old server admitted at once (2 x 16 handler threads)
TRICKLING_CONNECTIONS = 4
RECEIVE_TIMEOUT_S = "2"


def _tree_rss(pid: int) -> int:
    server = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [server, *server.children(recursive=True)])


class SilentCalls:
    """`calls` Export calls that send headers and never a message; each one that ends is replaced
    at once while the pressure is on, so honest exports always meet `calls` waiting calls."""

    def __init__(self, port: int, calls: int):
        self._channels = [grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)])
                          for _ in range(calls // 3)]
        self._calls = calls
        self._release = threading.Event()  # ends the (blocked) request iterators at teardown
        self._pressure = threading.Event()
        self.codes: list[grpc.StatusCode | None] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._hold, args=(i,), daemon=True) for i in range(calls)]

    def _never(self):
        self._release.wait()
        return
        yield

    def _hold(self, i: int) -> None:
        export: grpc.StreamUnaryMultiCallable[bytes, bytes] = self._channels[i % len(self._channels)].stream_unary(EXPORT_PATH)
        while True:
            call = export.future(self._never())  # no client deadline: only the server can end it
            try:
                call.result(timeout=60)  # the connection's maximum age (120 s) must not be what ends it
                code = grpc.StatusCode.OK
            except grpc.FutureTimeoutError:
                code = None  # the server never ended it
                call.cancel()
            except grpc.RpcError as exc:
                code = exc.code()
            with self._lock:
                self.codes.append(code)
            if not self._pressure.is_set():
                return

    def start(self) -> None:
        self._pressure.set()
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        """Stop replacing calls; wait until the server has ended the last ones."""
        self._pressure.clear()
        for t in self._threads:
            t.join(90)
        self._release.set()
        for channel in self._channels:
            channel.close()


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _literal(name: str, value: str) -> bytes:  # HPACK literal without indexing, new name, no Huffman
    return b"\x00" + bytes([len(name)]) + name.encode() + bytes([len(value)]) + value.encode()


class TricklingConnection:
    """Raw HTTP/2: one Export call announcing a 1 MiB message, 60 KiB of it sent, then silence."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + _frame(4, 0, 0, b""))
        self._buffer = b""
        while True:  # acknowledge the server's SETTINGS, as a real client does
            kind, flags, _, _ = self._read_frame()
            if kind == 4 and not flags & 1:
                self.sock.sendall(_frame(4, 1, 0, b""))
                break
        headers = b"".join(_literal(n, v) for n, v in (
            (":method", "POST"), (":scheme", "http"), (":path", EXPORT_PATH), (":authority", "127.0.0.1"),
            ("content-type", "application/grpc"), ("te", "trailers")))
        prefix = b"\x00" + struct.pack(">I", 1024 * 1024)  # uncompressed, 1 MiB announced
        message = prefix + b"\x0a" * 60_000  # within the initial flow-control window; frames of 16 KiB at most
        self.sock.sendall(_frame(1, 4, 1, headers) + b"".join(
            _frame(0, 0, 1, message[at:at + 16_384]) for at in range(0, len(message), 16_384)))

    def _read_frame(self) -> tuple[int, int, int, bytes]:
        while len(self._buffer) < 9 or len(self._buffer) < 9 + int.from_bytes(self._buffer[:3], "big"):
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self._buffer += chunk
        size = int.from_bytes(self._buffer[:3], "big")
        kind, flags = self._buffer[3], self._buffer[4]
        stream = int.from_bytes(self._buffer[5:9], "big") & 0x7FFFFFFF
        payload, self._buffer = self._buffer[9:9 + size], self._buffer[9 + size:]
        return kind, flags, stream, payload

    def ended_by_server(self) -> bool:
        """True once the server ends the call itself (trailers with END_STREAM, or RST_STREAM), well
        before the connection's maximum age (120 s) would end it; not a closed connection."""
        try:
            while True:
                kind, flags, stream, _ = self._read_frame()
                if stream == 1 and ((kind == 1 and flags & 1) or kind == 3):
                    return True
        except (TimeoutError, ConnectionError, OSError):
            return False
        finally:
            self.sock.close()


def test_slow_grpc_calls_do_not_starve_the_otlp_grpc_exporter(collector_factory):
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    collector = collector_factory("--read-timeout-s", RECEIVE_TIMEOUT_S)
    rss_before = _tree_rss(collector.proc.pid)
    silent = SilentCalls(collector.grpc_port, SILENT_CALLS)
    silent.start()
    trickling = [TricklingConnection(collector.grpc_port) for _ in range(TRICKLING_CONNECTIONS)]

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("grpc-starvation")
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=10)
    results: list[SpanExportResult] = []
    sent: set[str] = set()
    try:
        for batch in range(6):
            for i in range(5):
                with tracer.start_as_current_span(f"honest-{batch}-{i}"):
                    pass
            spans = memory.get_finished_spans()
            memory.clear()
            sent.update(format(s.context.span_id, "016x") for s in spans)
            results.append(exporter.export(spans))
        rss_during = _tree_rss(collector.proc.pid)
    finally:
        exporter.shutdown()
        silent.stop()
    trickle_ended = [conn.ended_by_server() for conn in trickling]

    assert results == [SpanExportResult.SUCCESS] * 6  # every honest batch acknowledged within its timeout ...
    assert sent <= {r["span_id"] for r in read_spans(collector.data_dir)}  # ... and stored
    # Every slow call was ended by the server: evicted by newer calls while more than 32 waited for
    # their message (the bound on partly received messages), or past its receive deadline (the last ones).
    assert len(silent.codes) >= SILENT_CALLS
    assert set(silent.codes) == {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED}, silent.codes
    assert all(trickle_ended)
    assert rss_during - rss_before < 200 * 2**20
    assert collector.stop() == 0
    assert not [line for line in collector.log if "Traceback" in line or "ERROR" in line], collector.log
