"""`verdict collector`: wire config, lake, writer, decoders, HTTP and gRPC servers; drain on SIGTERM.

`verdict-collector` and `python -m collector` are its deprecated aliases (one release)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from collector import config as collector_config
from collector import lake
from collector.auth import TokenFileError, TokenStore
from collector.config import CollectorConfig
from collector.decoding import DecoderPool, DecodeSettings
from collector.ingest import IngestService
from collector.maintenance import Maintenance
from collector.redaction import ServerRedaction
from collector.stats import Stats
from collector.writer import SegmentWriter, WriterLimits
from verdict.cli_errors import CliError
from verdict.cli_runner import alias_main

if TYPE_CHECKING:
    import uvicorn

    from collector.grpc_server import GrpcReceiver
    from collector.shipping import Shipper

log = logging.getLogger("verdict.collector")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(False)
    return sock


def _listen(host: str, port: int, flag: str) -> socket.socket:
    """The listening socket, or invalid_config naming the address and the flag that chose it."""
    try:
        return _bind(host, port)
    except OSError as exc:
        raise CliError("invalid_config", f"cannot listen on {host}:{port} ({exc.strerror}): choose another port with "
                       f"{flag} (env VERDICT_COLLECTOR_{flag[2:].upper().replace('-', '_')}), or stop the process "
                       "holding it") from None


def _segment_count(config: CollectorConfig) -> int:
    total = 0
    for _root, _dirs, files in os.walk(lake.spans_root(config.data_dir)):
        total += sum(1 for f in files if f.endswith(lake.SEGMENT_SUFFIX))
    return total


def _open_lake(config: CollectorConfig) -> lake.LakeLock:
    config.data_dir.mkdir(parents=True, exist_ok=True)
    lock = lake.LakeLock(config.data_dir)
    lock.acquire()
    lake.prepare(config.data_dir)
    removed = lake.remove_temp_files(config.data_dir)
    if removed:
        log.warning("removed %d leftover temp file(s) from an earlier crash", len(removed))
    return lock


def maintain_once(config: CollectorConfig) -> int:
    lock = _open_lake(config)
    try:
        stats = Stats()
        Maintenance(config).run_once(stats)
        snapshot = stats.snapshot()
        log.info("maintenance: %d compaction(s), %d partition(s) expired", snapshot["compactions"],
                 snapshot["partitions_expired"])
    finally:
        lock.release()
    return 0


def _writer_limits(config: CollectorConfig) -> WriterLimits:
    return WriterLimits(
        batch_delay_s=config.batch_delay_ms / 1000,
        max_batch_spans=config.max_batch_spans,
        queue_max_bytes=config.queue_max_bytes,
        min_free_disk_bytes=config.min_free_disk_bytes,
        test_write_delay_s=config.test_write_delay_ms / 1000,
    )


def _decode_settings(config: CollectorConfig) -> DecodeSettings:
    return DecodeSettings(
        max_body_bytes=config.max_body_bytes,
        max_attribute_chars=config.max_attribute_chars,
        redact=config.redact,
        allow_claimed_tenant=config.allow_claimed_tenant,
        trust_sdk_redaction=config.trust_sdk_redaction,
        max_spans_per_request=config.max_spans_per_request,
        retention_days=config.retention_days,
    )


@dataclass(frozen=True)
class _Status:
    """What the collector's /health and /stats endpoints report."""

    config: CollectorConfig
    stats: Stats
    writer: SegmentWriter
    service: IngestService
    shipper: Shipper | None

    def health(self) -> dict:
        reasons = []
        try:
            self.writer.check_admission()
        except Exception as exc:  # Overloaded: report why, as the endpoint's status
            reasons.append(str(getattr(exc, "message", exc)))
        for failure in (self.writer.write_failure(), self.shipper and self.shipper.failure()):
            if failure:
                reasons.append(failure)
        return {"status": "degraded" if reasons else "ok", "reasons": reasons}

    def report(self) -> dict:
        queued_spans, held_bytes = self.writer.queue_depth()
        report = {**self.stats.snapshot(), "queue_spans": queued_spans, "queue_bytes": held_bytes,
                  "inflight_bytes": self.service.inflight_bytes(), "segment_count": _segment_count(self.config)}
        if self.shipper is not None:
            backlog = self.shipper.backlog()
            report |= {"outbox_segments": backlog.segments, "outbox_oldest_age_s": backlog.oldest_age_s}
        return report


def _start_grpc(config: CollectorConfig, service: IngestService) -> tuple[GrpcReceiver | None, str]:
    """The started gRPC receiver and its address, or (None, "off") when --grpc-port is -1."""
    if config.grpc_port == -1:
        return None, "off"
    from collector import grpc_server

    receiver = grpc_server.GrpcReceiver(service, config.grpc_host, config.grpc_port, grpc_server.GrpcLimits(
        max_message_bytes=config.max_body_bytes,
        receive_timeout_s=config.read_timeout_s,
        receiving_calls=2 * config.grpc_threads,
        export_threads=config.grpc_threads,
    ))
    return receiver, f"{config.grpc_host}:{receiver.start()}"


def _http_server(config: CollectorConfig, service: IngestService, status: _Status) -> uvicorn.Server:
    import uvicorn

    from collector import http_server

    app = http_server.create_app(
        service,
        body_limits=http_server.BodyLimits(config.max_body_bytes, config.read_timeout_s, config.body_idle_timeout_s),
        threads=max(16, config.grpc_threads),
        health=status.health,
        stats=status.report,
    )
    return uvicorn.Server(
        uvicorn.Config(
            app,
            http=http_server.guarded_protocol(http_server.HeadLimits(config.read_timeout_s)),
            log_level="warning",
            access_log=False,
            timeout_keep_alive=30,
            timeout_graceful_shutdown=60,
            limit_concurrency=512,
            lifespan="on",
        )
    )


def serve(config: CollectorConfig) -> int:
    tokens = TokenStore.load(config.tokens) if config.tokens else None
    ServerRedaction.create(config.redact, config.trust_sdk_redaction)  # fail here, clearly, rather than in every decode worker
    # The ports first: a busy one is refused before the data dir is created or locked.
    sock = _listen(config.http_host, config.http_port, "--http-port")
    if config.grpc_port > 0:  # gRPC binds its own socket later: a probe now (gRPC would share a port by SO_REUSEPORT)
        _listen(config.grpc_host, config.grpc_port, "--grpc-port").close()
    lock = _open_lake(config)
    stats = Stats()
    shipper = None
    if config.lake_url is not None:
        from collector.objectstore import ObjectLake
        from collector.shipping import Shipper

        shipper = Shipper(config.data_dir, ObjectLake(config.lake_url), config.ship_delete_after_s, stats)
    lake_compactor = None
    if config.lake_url is not None and config.lake_compact_interval_s > 0:
        from collector.lake_compactor import LakeCompactor

        lake_compactor = LakeCompactor(config.data_dir, ObjectLake(config.lake_url), config.lake_compact_interval_s,
                                       config.lake_delete_grace_s, config.retention_days, stats)
    maintenance = Maintenance(config, on_compacted=shipper.wake if shipper else lambda: None)
    maintenance.recover()

    writer = SegmentWriter(config.data_dir, _writer_limits(config), stats, on_segments=maintenance.segments_written)
    writer.start()
    pool = DecoderPool(_decode_settings(config), config.decode_workers)
    service = IngestService(tokens, pool, writer, stats, max_inflight_bytes=config.queue_max_bytes)
    grpc_srv, grpc_addr = _start_grpc(config, service)
    http_addr = f"{config.http_host}:{sock.getsockname()[1]}"
    server = _http_server(config, service, _Status(config, stats, writer, service, shipper))
    maintenance.start(stats)
    log.info("verdict-collector ready http=%s grpc=%s data_dir=%s auth=%s lake_url=%s", http_addr, grpc_addr,
             config.data_dir, "tokens" if tokens else "none (local tenant)", config.lake_url or "off")
    if shipper is not None:  # after "ready": a restart's backlog ships while the collector already serves
        shipper.start()
    if lake_compactor is not None:
        lake_compactor.start()
    # uvicorn re-raises the signal it caught once it has stopped; with this handler in place that
    # no longer kills the process before the queued spans are flushed below.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: log.info("already draining"))
    try:
        server.run(sockets=[sock])  # returns after SIGTERM/SIGINT once in-flight requests finished
    finally:
        log.info("draining")
        if grpc_srv is not None:
            grpc_srv.stop(grace=30)
        writer.close()
        maintenance.stop()
        if shipper is not None:
            shipper.stop()
        if lake_compactor is not None:
            lake_compactor.stop()
        pool.shutdown()
        lock.release()
        log.info("stopped: %s", stats.snapshot())
    return 0


def _start_error(exc: Exception) -> CliError | None:
    """The closed error of a failure to start; None for anything unexpected (run_command: internal_error)."""
    if isinstance(exc, lake.LakeLockedError):
        return CliError("already_running", str(exc))
    if isinstance(exc, TokenFileError | RuntimeError):
        return CliError("invalid_config", str(exc))  # RuntimeError: server-side redaction cannot be set up
    if isinstance(exc, OSError):  # with a file name: the data dir; without: a port to bind (in use, denied)
        return CliError("storage_error" if exc.filename else "invalid_config", str(exc))
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = collector_config.DESCRIPTION
    collector_config.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Exit 0 after a clean stop; a failure to start is a CliError (invalid_config, already_running,
    storage_error)."""
    config = collector_config.from_args(args)
    logging.basicConfig(
        level=config.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return maintain_once(config) if config.maintenance_once else serve(config)
    except CliError:
        raise
    except Exception as exc:
        error = _start_error(exc)
        if error is None:
            raise
        raise error from None


def main(argv: list[str] | None = None) -> int:
    """`verdict-collector`: the deprecated alias of `verdict collector`."""
    return alias_main("verdict-collector", "collector", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
