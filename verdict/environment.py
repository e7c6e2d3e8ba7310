"""Every environment variable Verdict reads, in one table (docs/cli.md "Environment" is checked against it).

Readers of the Verdict-specific ones go through `get` so that a renamed variable keeps working for one
release under its old name (with one warning on stderr). The OpenTelemetry and provider variables are the
upstream names, read where the upstream convention says; they are listed here so one page documents them.
Stdlib only: the SDK imports it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    read_by: str  # "sdk", "cli" (the `verdict` commands), "collector", "daemon", "demo", "tests"
    meaning: str
    replaces: str | None = None  # the deprecated old name still accepted (one warning per process)


VARIABLES: tuple[Variable, ...] = (
    Variable("VERDICT_TENANT", "sdk, cli", "tenant id: the SDK's spans, and `--tenant` of every command",
             replaces="VERDICT_TENANT_ID"),
    Variable("VERDICT_DATA_DIR", "cli, collector", "`--data-dir`: the span lake and state.duckdb directory",
             replaces="VERDICT_COLLECTOR_DATA_DIR"),
    Variable("VERDICT_LAKE_URL", "cli", "`--lake-url` of `verdict sql`, `pipeline`, `report`, `cluster` and `review "
             "correlate` when none is given: one lake on object storage, s3://BUCKET/PREFIX (the collector's own is "
             "VERDICT_COLLECTOR_LAKE_URL; the daemon's are `[lake] urls`)"),
    Variable("VERDICT_DEBUG", "cli", "set (not empty, not 0/false/no): an unexpected error re-raises with its "
             "traceback instead of the closed internal_error"),
    Variable("VERDICT_API_KEY", "sdk", "bearer token the SDK sends to the collector"),
    Variable("VERDICT_MAX_CONTENT_BYTES", "sdk", "cap on each recorded message's bytes"),
    Variable("VERDICT_REVIEWER", "cli", "`verdict review label --reviewer`"),
    Variable("VERDICT_JUDGE_MODEL", "demo", "`verdict demo --judge-model`"),
    Variable("VERDICT_COLLECTOR_<OPTION>", "collector", "every `verdict collector --<option>` (upper case, "
             "dashes as underscores), e.g. VERDICT_COLLECTOR_HTTP_PORT"),
    Variable("VERDICT_COLLECTOR_TEST_WRITE_DELAY_MS", "tests", "sleep before each segment write (slow disk)"),
    Variable("VERDICT_COLLECTOR_TEST_CRASH_AT", "tests", "os._exit at a named compaction step"),
    Variable("OPENAI_API_KEY", "sdk, cli, daemon", "key of `openai/...` judge and target models"),
    Variable("OPENAI_BASE_URL", "sdk, cli, daemon", "endpoint of `openai/...` models (Ollama, vLLM, ...)"),
    Variable("ANTHROPIC_API_KEY", "sdk, cli, daemon", "key of `anthropic/...` models"),
    Variable("ANTHROPIC_BASE_URL", "sdk, cli, daemon", "endpoint of `anthropic/...` models"),
    Variable("OTEL_EXPORTER_OTLP_ENDPOINT", "sdk", "collector endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT wins)"),
    Variable("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "sdk", "collector traces endpoint"),
    Variable("OTEL_EXPORTER_OTLP_HEADERS", "sdk", "extra export headers (..._TRACES_HEADERS wins)"),
    Variable("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "sdk", "extra trace export headers"),
    Variable("OTEL_EXPORTER_OTLP_PROTOCOL", "sdk", "http/protobuf or grpc (..._TRACES_PROTOCOL wins)"),
    Variable("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "sdk", "trace export protocol"),
    Variable("OTEL_EXPORTER_OTLP_TIMEOUT", "sdk", "export timeout in milliseconds"),
    Variable("OTEL_BSP_MAX_QUEUE_SIZE", "sdk", "span queue bound of the batch processor"),
    Variable("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "sdk", "spans per export"),
    Variable("OTEL_BSP_SCHEDULE_DELAY", "sdk", "milliseconds between exports"),
    Variable("OTEL_RESOURCE_ATTRIBUTES", "sdk", "extra resource attributes"),
    Variable("OTEL_SEMCONV_STABILITY_OPT_IN", "sdk", "gen_ai_latest_experimental / gen_ai/dup attribute names"),
    Variable("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "sdk", "NO_CONTENT turns content capture off"),
)

_BY_NAME = {v.name: v for v in VARIABLES}
_warned: set[str] = set()


def get(name: str) -> str | None:
    """The value of a Verdict variable of VARIABLES: its own, else its deprecated old name's (warning once
    per process on stderr); None when neither is set or the value is empty."""
    variable = _BY_NAME[name]  # a KeyError here: an undocumented variable (add it to VARIABLES)
    value = os.environ.get(name)
    if not value and variable.replaces and os.environ.get(variable.replaces):
        warn_deprecated(variable.replaces, name)
        value = os.environ[variable.replaces]
    return value or None


def warn_deprecated(old: str, new: str) -> None:
    """One line on stderr, once per process and old name: `old` still works for this release."""
    if old not in _warned:
        _warned.add(old)
        sys.stderr.write(f"verdict: warning: {old} is deprecated and will be removed; use {new}\n")


def debug() -> bool:
    """VERDICT_DEBUG: the one reader (verdict.cli_runner.run_command, and the demo's report step)."""
    return (get("VERDICT_DEBUG") or "").strip().lower() not in ("", "0", "false", "no")
