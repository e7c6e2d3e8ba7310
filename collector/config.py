"""Collector configuration: command-line flags, each with an environment-variable fallback.

Precedence: flag > VERDICT_COLLECTOR_<FLAG> environment variable > default. `--help` lists all.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
from dataclasses import dataclass
from pathlib import Path

from collector.redaction import MODES, SDK_REDACTION_ATTRIBUTE, TRUST_MODES
from verdict.cli_errors import ArgumentParser, CliError
from verdict.environment import warn_deprecated

ENV_PREFIX = "VERDICT_COLLECTOR_"
MIB = 1024 * 1024


@dataclass(frozen=True)
class CollectorConfig:
    data_dir: Path
    http_host: str
    http_port: int
    grpc_host: str
    grpc_port: int  # -1 disables gRPC
    tokens: Path | None
    allow_claimed_tenant: bool
    max_body_bytes: int
    max_spans_per_request: int
    max_attribute_chars: int
    redact: str
    trust_sdk_redaction: str
    batch_delay_ms: int
    max_batch_spans: int
    queue_max_bytes: int
    min_free_disk_bytes: int
    read_timeout_s: float
    body_idle_timeout_s: float
    decode_workers: int
    grpc_threads: int
    retention_days: int
    compact_interval_s: float
    compact_min_segments: int
    compact_after_segments: int
    maintenance_interval_s: float
    delete_grace_s: float
    log_level: str
    maintenance_once: bool
    lake_url: str | None = None  # s3://bucket/prefix: finished segments are shipped there (collector.shipping)
    ship_seal_after_s: float = 60.0
    ship_delete_after_s: float = 86400.0
    lake_compact_interval_s: float = 300.0
    lake_delete_grace_s: float = 600.0
    # Test-only: sleep before each segment write to simulate a slow disk (env var only).
    test_write_delay_ms: int = 0


@dataclass(frozen=True)
class _Option:
    flag: str
    type: type
    default: object
    help: str

    @property
    def env(self) -> str:
        if self.flag == "data-dir":  # the one data-dir variable of every command (verdict.environment)
            return "VERDICT_DATA_DIR"
        return ENV_PREFIX + self.flag.upper().replace("-", "_")

    @property
    def dest(self) -> str:
        return self.flag.replace("-", "_")


_OPTIONS = (
    _Option("data-dir", Path, Path("./verdict-data"), "span lake directory (created if missing)"),
    _Option("http-host", str, "127.0.0.1", "OTLP/HTTP bind address"),
    _Option("http-port", int, 4318, "OTLP/HTTP port (0: pick a free port, logged at start)"),
    _Option("grpc-host", str, "127.0.0.1", "OTLP/gRPC bind address"),
    _Option("grpc-port", int, 4317, "OTLP/gRPC port (0: pick a free port; -1: gRPC off)"),
    _Option("tokens", Path, None, "YAML token file (token -> tenant); required for a non-loopback bind"),
    _Option("allow-claimed-tenant", bool, False,
            "tokenless mode only: land spans in the tenant their resource claims "
            "(verdict.tenant_id) instead of __verdict_local__"),
    _Option("max-body-bytes", int, 16 * MIB, "request body limit, before and after decompression (413 above)"),
    _Option("max-spans-per-request", int, 10_000,
            "spans in one request (and 32 times as many attribute values); beyond it 413: bounds decoding memory"),
    _Option("max-attribute-chars", int, 256 * 1024,
            "longer string attribute values are cut and marked '…[truncated by verdict collector: N chars]'"),
    _Option("redact", str, "content", f"server-side re-redaction: {', '.join(MODES)}"),
    _Option("trust-sdk-redaction", str, "authenticated",
            f"{' or '.join(TRUST_MODES)}: with 'authenticated', message content of spans sent with a valid "
            f"token whose instrumentation scope has {SDK_REDACTION_ATTRIBUTE} = this collector's version (the "
            "Verdict SDK already redacted it) is not redacted again; 'never' re-redacts everything"),
    _Option("batch-delay-ms", int, 200, "group commit: longest a request waits for its batch to be written"),
    _Option("max-batch-spans", int, 50_000, "group commit: write as soon as this many spans are waiting"),
    _Option("queue-max-bytes", int, 128 * MIB, "decoded spans waiting for disk; above it requests get 429 (request bodies in flight get a "
            "budget of the same size)"),
    _Option("min-free-disk-bytes", int, 1024 * MIB, "below this much free space requests get 503"),
    _Option("read-timeout-s", float, 30.0, "request headers must arrive within this time (else the connection is closed), then the body "
            "(else 408)"),
    _Option("body-idle-timeout-s", float, 5.0, "a request body that stops arriving for this long gets 408 (its "
            "connection held no budget but bytes received; a slow client is cut off early)"),
    _Option("decode-workers", int, min(2, os.cpu_count() or 1),
            "processes decoding OTLP in parallel (0: decode in the server process)"),
    _Option("grpc-threads", int, 16, "gRPC export threads (each waits for its call's decode and fsync); twice as many "
            "calls may wait for their message at once"),
    _Option("retention-days", int, 0, "delete date partitions older than this many days, and refuse spans and log "
            "records already that old (partial_success) rather than acknowledge what the next run deletes (0: keep "
            "all)"),
    _Option("compact-interval-s", float, 300.0, "how often small segments are merged (0: only after --compact-after-segments)"),
    _Option("compact-min-segments", int, 8, "merge a partition once it has at least this many segments"),
    _Option("compact-after-segments", int, 1000,
            "compact before the interval once this many segments were written since the last compaction "
            "(bounds the fresh segments queries read at moderate rates, where requests are written alone; 0: "
            "interval only)"),
    _Option("maintenance-interval-s", float, 3600.0, "how often retention runs"),
    _Option("delete-grace-s", float, 600.0,
            "segments compaction replaced, partitions retention expired and segments shipping delivered are hidden "
            "from new readers at once and deleted this long afterwards (keep it above the longest query: a reader "
            "that listed them before still reads them)"),
    _Option("lake-url", str, None,
            "ship every finished segment to this object store (s3://BUCKET/PREFIX; gs://, az:// alike), "
            "credentials and endpoint from the standard variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
            "AWS_REGION, AWS_ENDPOINT_URL, ...); needs the `s3` extra"),
    _Option("ship-seal-after-s", float, 60.0,
            "with --lake-url: fresh span segments older than this are compacted (sealed) so they can be shipped"),
    _Option("ship-delete-after-s", float, 86400.0,
            "with --lake-url: delete a local segment this long after it was shipped and verified (readers take "
            "it from the store then; compaction deduplicates late exporter retries against local segments only)"),
    _Option("lake-compact-interval-s", float, 300.0,
            "with --lake-url: how often this collector tries to take the lake compactor's lease and, holding it, "
            "merges every collector's shipped segments (and applies --retention-days to the bucket); 0: never"),
    _Option("lake-delete-grace-s", float, 600.0,
            "with --lake-url: objects the lake compactor merged or expired are deleted this long afterwards "
            "(a query that listed the lake before may still read them)"),
    _Option("log-level", str, "INFO", "DEBUG, INFO, WARNING or ERROR"),
    _Option("maintenance-once", bool, False,
            "run retention and compaction once, then exit (e.g. from cron while no collector runs)"),
)


# `--help` lists the common options first (under "options"), the others under these headings, in this order.
GROUPS: dict[str, tuple[str, ...]] = {
    "limits and throughput": ("max-body-bytes", "max-spans-per-request", "max-attribute-chars", "batch-delay-ms",
                              "max-batch-spans", "queue-max-bytes", "min-free-disk-bytes", "read-timeout-s",
                              "body-idle-timeout-s", "decode-workers", "grpc-threads"),
    "redaction": ("redact", "trust-sdk-redaction"),
    "retention and compaction": ("retention-days", "compact-interval-s", "compact-min-segments",
                                 "compact-after-segments", "maintenance-interval-s", "delete-grace-s",
                                 "maintenance-once"),
    "object storage (--lake-url)": ("lake-url", "ship-seal-after-s", "ship-delete-after-s", "lake-compact-interval-s",
                                    "lake-delete-grace-s"),
}


_EPILOG = """\
endpoints: POST /v1/traces (OTLP/HTTP, application/x-protobuf or application/json, gzip allowed; also
at /api/public/otel/v1/traces, where the Langfuse SDK posts);
gRPC opentelemetry.proto.collector.trace.v1.TraceService/Export; GET /healthz (200 ok, 503
degraded); GET /stats (spans received/written/rejected, queue depth, segment count, ...).
tokens file: YAML mapping token -> tenant, token plain (>= 16 chars) or "sha256:<hex>"; clients
send "Authorization: Bearer <token>" (or Basic auth with the token as password). Refusals: 400 malformed, 401 token, 408 slow or stalled body,
413 too large or too many spans, 415 content type, 431 headers too large, 429 queue full, 503 disk low / shutting down / write failed (429 and 503
with Retry-After). SIGTERM/SIGINT: stop accepting, finish in-flight requests, write everything
queued, exit 0. Exit code 2: it cannot start, with one line {"error": {"code", "message"}} on stderr:
invalid_config (an option, its environment variable or the token file), already_running (the data
dir is in use), storage_error (the data dir cannot be created or written), internal_error (a bug;
VERDICT_DEBUG=1 shows the traceback).
Test-only env vars: VERDICT_COLLECTOR_TEST_WRITE_DELAY_MS, VERDICT_COLLECTOR_TEST_CRASH_AT.

examples:
  verdict collector --data-dir ./verdict-data
  verdict collector --data-dir /var/lib/verdict --tokens tokens.yaml --http-host 0.0.0.0 --grpc-port -1
  verdict collector --data-dir ./verdict-data --retention-days 30 --maintenance-once
"""


_OLD_DATA_DIR_ENV = ENV_PREFIX + "DATA_DIR"  # before VERDICT_DATA_DIR; still read for one release


class ConfigError(CliError, ValueError):
    """An invalid option or environment variable: the closed `invalid_config` error."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_config", message)


def _env_value(option: _Option, environ) -> object:
    raw = environ.get(option.env)
    if raw is None and option.flag == "data-dir" and (old := environ.get(_OLD_DATA_DIR_ENV)) is not None:
        warn_deprecated(_OLD_DATA_DIR_ENV, option.env)
        raw = old
    if raw is None:
        return option.default
    if option.type is bool:
        if raw.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if raw.strip().lower() in ("0", "false", "no", "off", ""):
            return False
        raise ConfigError(f"{option.env}={raw!r}: expected true or false")
    try:
        return option.type(raw)
    except ValueError:
        raise ConfigError(f"{option.env}={raw!r}: expected {option.type.__name__}") from None


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    pass


DESCRIPTION = ("Receive OTLP traces (HTTP and gRPC) and land them durably as a Parquet span lake. "
               "Every option can also be set with the environment variable shown.")


def add_arguments(parser: argparse.ArgumentParser, environ=os.environ) -> None:
    """The collector's options on `parser` (`verdict collector`, or the `verdict-collector` alias)."""
    parser.formatter_class = _HelpFormatter
    parser.epilog = _EPILOG
    parser.usage = "%(prog)s [--data-dir DIR] [--http-port PORT] [--grpc-port PORT] [--tokens FILE] [OPTION ...]"
    groups = {title: parser.add_argument_group(title) for title in GROUPS}
    group_of = {flag: groups[title] for title, flags in GROUPS.items() for flag in flags}
    for option in _OPTIONS:
        default = _env_value(option, environ)
        help_text = f"{option.help} [env {option.env}]"
        where = group_of.get(option.flag, parser)  # not in GROUPS: a common option
        if option.type is bool:
            where.add_argument(f"--{option.flag}", action="store_true", default=default, help=help_text)
        else:
            where.add_argument(f"--{option.flag}", type=option.type, default=default, help=help_text)


def build_parser(environ=os.environ) -> argparse.ArgumentParser:
    """Usage errors raise verdict.cli_errors.UsageError (run_command prints the one error envelope)."""
    parser = ArgumentParser(prog="verdict collector", description=DESCRIPTION)
    add_arguments(parser, environ)
    return parser


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load(argv: list[str] | None = None, environ=os.environ) -> CollectorConfig:
    return from_args(build_parser(environ).parse_args(argv), environ)


def from_args(args: argparse.Namespace, environ=os.environ) -> CollectorConfig:
    """The validated configuration of parsed options (ConfigError names the bad one)."""
    values = {option.dest: getattr(args, option.dest) for option in _OPTIONS}
    delay = environ.get("VERDICT_COLLECTOR_TEST_WRITE_DELAY_MS", "0")
    if not delay.isdigit():
        raise ConfigError(f"VERDICT_COLLECTOR_TEST_WRITE_DELAY_MS={delay!r}: expected an integer")
    config = CollectorConfig(
        data_dir=values.pop("data_dir"),
        min_free_disk_bytes=values.pop("min_free_disk_bytes"),
        test_write_delay_ms=int(delay),
        **values,
    )
    validate(config)
    return config


def validate(config: CollectorConfig) -> None:
    if config.redact not in MODES:
        raise ConfigError(f"--redact must be one of {', '.join(MODES)}, got {config.redact!r}")
    if config.trust_sdk_redaction not in TRUST_MODES:
        raise ConfigError(
            f"--trust-sdk-redaction must be one of {', '.join(TRUST_MODES)}, got {config.trust_sdk_redaction!r}"
        )
    exposed = [h for h, port in ((config.http_host, 0), (config.grpc_host, config.grpc_port)) if port != -1
               and not is_loopback(h)]
    if exposed and config.tokens is None:
        raise ConfigError(
            f"binding to non-loopback address {exposed[0]} requires a token file (--tokens tokens.yaml)"
        )
    for name in ("max_body_bytes", "max_spans_per_request", "max_attribute_chars", "batch_delay_ms", "max_batch_spans", "queue_max_bytes",
                 "grpc_threads"):
        if getattr(config, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
    for option in _OPTIONS:
        if option.type is float and not math.isfinite(getattr(config, option.dest)):
            raise ConfigError(f"--{option.flag} must be a finite number")
    for name in ("read_timeout_s", "body_idle_timeout_s"):
        if getattr(config, name) <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be positive")
    if config.lake_url is not None:
        from collector.objectstore import ObjectLake, ObjectStoreError

        try:
            ObjectLake(config.lake_url)
        except ObjectStoreError as exc:
            raise ConfigError(f"--lake-url: {exc}") from None
        except Exception as exc:  # obstore refuses the URL or the environment's settings
            raise ConfigError(f"--lake-url {config.lake_url!r}: {type(exc).__name__}: {exc}") from None
    if config.ship_seal_after_s <= 0:
        raise ConfigError("--ship-seal-after-s must be positive")
    for name in ("decode_workers", "retention_days", "ship_delete_after_s", "lake_compact_interval_s",
                 "lake_delete_grace_s", "delete_grace_s", "min_free_disk_bytes", "compact_min_segments",
                 "compact_after_segments"):
        if getattr(config, name) < 0:
            raise ConfigError(f"--{name.replace('_', '-')} must not be negative")
    if config.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError(f"--log-level must be DEBUG, INFO, WARNING or ERROR, got {config.log_level!r}")
