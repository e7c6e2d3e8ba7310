"""Decode + validate + redact + flatten, in worker processes so both cores do it in parallel.

Protobuf field access and redaction are the collector's CPU cost; under the GIL one process
cannot go beyond one core, so requests are decoded in a small process pool. `decode_workers=0`
decodes in a thread of the server process instead (tests, tiny deployments). The workers also
build the Arrow record batches and hand them back as Arrow IPC bytes: unpickling row tuples
and converting them in the server cost it more CPU than the rest of a request (the price is
pyarrow's shared libraries mapped into every worker: more summed RSS, little more real memory).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from collector import otlp
from collector.flatten import IngestPolicy, Partition, flatten
from collector.otlp import RequestError
from collector.redaction import ServerRedaction

log = logging.getLogger("verdict.collector")


@dataclass(frozen=True)
class DecodeSettings:
    max_body_bytes: int
    max_attribute_chars: int
    redact: str
    allow_claimed_tenant: bool
    trust_sdk_redaction: str = "authenticated"  # see collector.redaction.TRUST_MODES


@dataclass(frozen=True)
class EncodedPartition:
    """One partition's spans as an Arrow IPC stream (one record batch in schema.SPAN_COLUMNS order)."""

    tenant: str
    date: str
    spans: int
    ipc: bytes

    def to_arrow(self):
        import pyarrow as pa

        return pa.ipc.open_stream(self.ipc).read_next_batch()  # zero-copy over self.ipc


@dataclass(frozen=True)
class Decoded:
    kind: str  # response encoding: otlp.PROTOBUF or otlp.JSON
    partitions: list[EncodedPartition]
    accepted: int
    rejected: int
    message: str


_settings: DecodeSettings | None = None
_redaction: ServerRedaction | None = None


def init_worker(settings: DecodeSettings, parent_pid: int | None = None) -> None:
    global _settings, _redaction
    _settings = settings
    _redaction = ServerRedaction.create(settings.redact, settings.trust_sdk_redaction)
    if parent_pid is not None:
        threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()


def _exit_with_parent(parent_pid: int) -> None:
    # A kill -9'd server cannot shut its pool down; its workers must not linger.
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    os._exit(0)


def _warm() -> bool:
    return True


def decode_export(
    payload: bytes, content_type: str | None, content_encoding: str | None, tenant: str, authenticated: bool
) -> Decoded:
    """HTTP body (content_type set) or gRPC message bytes (content_type None) -> partition batches."""
    assert _settings is not None and _redaction is not None, "init_worker() not called"
    if content_type is None:
        request, kind = otlp.parse_protobuf(payload), otlp.PROTOBUF
    else:
        request, kind = otlp.decode(payload, content_type, content_encoding, _settings.max_body_bytes)
    policy = IngestPolicy(
        tenant=tenant,
        authenticated=authenticated,
        allow_claimed_tenant=_settings.allow_claimed_tenant,
        max_attribute_chars=_settings.max_attribute_chars,
        redaction=_redaction,
    )
    result = flatten(request, policy, time.time_ns())
    encoded = [_encode(p) for p in result.partitions.values()]
    return Decoded(kind, encoded, result.accepted, result.rejected, result.message())


def _encode(partition: Partition) -> EncodedPartition:
    import pyarrow as pa

    try:
        batch = partition.to_arrow()
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        # A value flatten() let through that Arrow cannot hold: a bug, but a 400, not a 500 loop.
        log.exception("could not convert decoded spans to Arrow")
        raise RequestError(400, f"spans could not be stored ({type(exc).__name__}); see the collector log") from None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as stream:
        stream.write_batch(batch)
    return EncodedPartition(partition.tenant, partition.date, len(partition.rows), sink.getvalue().to_pybytes())


class DecoderPool:
    """A process pool (or one thread) running decode_export; rebuilt if a worker dies."""

    def __init__(self, settings: DecodeSettings, workers: int):
        self._settings = settings
        self._workers = workers
        self._executor = self._create()

    def _create(self) -> Executor:
        if self._workers == 0:
            init_worker(self._settings)
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix="decode")
        # spawn, not fork: the server process has gRPC threads and listening sockets.
        executor = ProcessPoolExecutor(
            max_workers=self._workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=init_worker,
            initargs=(self._settings, os.getpid()),
        )
        for f in [executor.submit(_warm) for _ in range(self._workers)]:
            f.result()
        return executor

    def submit(self, *args) -> Future:
        try:
            return self._executor.submit(decode_export, *args)
        except BrokenProcessPool:
            log.error("a decode worker died; restarting the pool")
            self._executor = self._create()
            return self._executor.submit(decode_export, *args)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
