"""Decode + validate + redact + flatten, in worker processes so both cores do it in parallel.

Protobuf field access and redaction are the collector's CPU cost; under the GIL one process
cannot go beyond one core, so requests are decoded in a small process pool. `decode_workers=0`
decodes in a thread of the server process instead (tests, tiny deployments). Rows come back
laid out as Arrow column buffers (collector.columns) and become record batches in the server.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import re
import threading
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from collector import otlp, spandata
from collector.columns import ColumnData, encode_rows
from collector.flatten import IngestPolicy, flatten
from collector.logs import flatten_logs
from collector.redaction import ServerRedaction

log = logging.getLogger("verdict.collector")


@dataclass(frozen=True)
class DecodeSettings:
    max_body_bytes: int
    max_attribute_chars: int
    redact: str
    allow_claimed_tenant: bool
    trust_sdk_redaction: str = "authenticated"  # see collector.redaction.TRUST_MODES
    max_spans_per_request: int = 10_000
    retention_days: int = 0  # > 0: older spans and log records are refused (partial_success)


# Decoding memory grows with spans (~5 KB each at peak) and attribute values (~0.15 KB), not
# with body bytes: a 16 MiB body of minimal spans would need ~1.8 GB. A request may carry up to
# this many attribute values (resource, scope, span; events and links count as one) per span allowed.
VALUES_PER_SPAN = 32
# Above this body size a worker hands the freed heap back to the OS after the request.
TRIM_ABOVE_BYTES = 1 << 20


@dataclass(frozen=True)
class EncodedPartition:
    table: str  # "spans" or "logs": which lake directory and schema (collector.schema.SCHEMAS)
    tenant: str
    date: str
    columns: tuple[ColumnData, ...]


@dataclass(frozen=True)
class Decoded:
    kind: str  # response encoding: otlp.PROTOBUF or otlp.JSON
    partitions: list[EncodedPartition]
    accepted: int
    rejected: int
    message: str
    dialects: dict[str, int]  # spans per recognised dialect (for /stats)
    unrecognised: dict[str, int]  # spans no dialect recognised, per instrumentation scope
    outside_retention: int  # of the rejected: older than the retention window
    ignored_claims: dict[str, int]  # items per tenant claimed in vain (collector.flatten.ignored_claim)


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


_TABLES = {"traces": ("spans", flatten), "logs": ("logs", flatten_logs)}


def decode_export(
    payload: bytes, content_type: str | None, content_encoding: str | None, tenant: str, authenticated: bool,
    signal: str = "traces",
) -> Decoded:
    """HTTP body (content_type set) or gRPC message bytes (content_type None) -> partition batches."""
    assert _settings is not None and _redaction is not None, "init_worker() not called"
    spec = otlp.SIGNALS[signal]
    if content_type is None:
        data, kind = payload, otlp.PROTOBUF
    else:
        kind = otlp.media_type(content_type)
        data = otlp.decompress(payload, content_encoding, _settings.max_body_bytes)
    request = _parse(data, kind, spec, _settings)
    policy = IngestPolicy(
        tenant=tenant,
        authenticated=authenticated,
        allow_claimed_tenant=_settings.allow_claimed_tenant,
        max_attribute_chars=_settings.max_attribute_chars,
        redaction=_redaction,
        retention_days=_settings.retention_days,
    )
    table, flatten_request = _TABLES[signal]
    result = flatten_request(request, policy, time.time_ns())
    partitions = [EncodedPartition(table, p.tenant, p.date, encode_rows(p.rows, table))
                  for p in result.partitions.values()]
    decoded = Decoded(kind, partitions, result.accepted, result.rejected, result.message(), result.dialects,
                      result.unrecognised, result.outside_retention, result.ignored_claims)
    if len(payload) > TRIM_ABOVE_BYTES:
        del request, result
        _release_heap()
    return decoded


def _parse(data: bytes, kind: str, spec: otlp.Signal, settings: DecodeSettings):
    """Body -> what the signal's flatten reads, within the request size limit (413 past it)."""
    max_items = settings.max_spans_per_request
    if spec is otlp.TRACES and kind == otlp.PROTOBUF:
        # The compiled decoder counts as _check_request_size does and abstains past the limit (or on what it
        # does not reproduce exactly): then upb parses, and answers the 400 or 413.
        decoded = spandata.compiled(data, settings.max_attribute_chars, max_items, VALUES_PER_SPAN * max_items)
        if decoded is not None:
            return decoded
    request = otlp.parse_protobuf(data, spec) if kind == otlp.PROTOBUF else otlp.parse_json(data, spec)
    _check_request_size(request, spec, max_items)
    return spandata.from_message(request, settings.max_attribute_chars) if spec is otlp.TRACES else request


def _snake(json_key: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), json_key)


def _check_request_size(request, spec: otlp.Signal, max_items: int) -> None:
    """413 before flattening when a request holds more spans / log records or attribute values than memory allows."""
    scopes_field, items_field = _snake(spec.scopes), _snake(spec.items)
    spans = spec is otlp.TRACES  # only spans have events and links
    items = values = 0
    for resource in getattr(request, _snake(spec.resources)):
        values += len(resource.resource.attributes)
        for scope in getattr(resource, scopes_field):
            values += len(scope.scope.attributes)
            batch = getattr(scope, items_field)
            items += len(batch)
            # Runs for every span before anything else: plain attribute access, no tuples built.
            for item in batch:
                values += len(item.attributes)
                if spans:
                    events, links = item.events, item.links
                    if events or links:
                        values += sum(1 + len(nested.attributes) for nested in (*events, *links))
    what = "spans" if spec is otlp.TRACES else "log records"
    if items > max_items:
        raise otlp.RequestError(
            413, f"request has {items} {what}; the limit is {max_items} per request: send smaller batches")
    if values > VALUES_PER_SPAN * max_items:
        raise otlp.RequestError(
            413, f"request has {values} attribute values; the limit is {VALUES_PER_SPAN * max_items} per "
            "request: send smaller batches")


def _release_heap() -> None:
    """glibc keeps freed memory in its heap; a large request would otherwise stay in the worker's RSS."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL(None).malloc_trim(0)


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

    def submit(self, *args) -> Future[Decoded]:
        try:
            return self._executor.submit(decode_export, *args)
        except BrokenProcessPool:
            log.error("a decode worker died; restarting the pool")
            self._executor = self._create()
            return self._executor.submit(decode_export, *args)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
