"""The one error vocabulary of the `verdict` command tree: codes, their exit codes, the envelope.

Every failure a command reports is one line `{"error": {"code": CODE, "message": ...}}` on stderr (extra
JSON-ready fields may follow `message`), CODE one of ErrorCode (described in ERROR_CODES, documented in
docs/cli.md), the exit code EXIT_CODES[CODE], and nothing half-written on stdout. It lives here, in the
bottom layer, so that `collector/` and `verdict_daemon/` both report through it without one importing
the other (stdlib only). verdict.cli_runner.run_command is the one place that prints it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Literal, NoReturn, get_args

ErrorCode = Literal[
    "invalid_config", "tenant_required", "storage_locked", "storage_error", "provider_unavailable",
    "evaluator_error", "judge_unhealthy", "low_coverage", "drift_input_error", "webhook_failed", "export_failed",
    "already_running",
    "unknown_tenant", "item_not_found", "evaluator_ambiguous", "invalid_signals", "no_labels", "invalid_suite",
    "probe_error", "component_failed", "no_active_registry", "model_unavailable", "unknown_version",
    "unknown_cluster", "generation_conflict", "validation_failed", "rollback_target_not_activated",
    "analysis_index_pending", "invalid_cases", "judge_error", "invalid_tenant", "no_data_dir", "query_error",
    "access_denied", "missing_extra", "state_corrupt", "interrupted", "internal_error",
]

ERROR_CODES: dict[ErrorCode, str] = {
    "invalid_config": "the config file or a command-line option is invalid (the message names the field)",
    "tenant_required": "no tenant was given",
    "storage_locked": "state.duckdb stayed locked by another process past the lock timeout",
    "storage_error": "state.duckdb or the span lake could not be read or written",
    "provider_unavailable": "the judge model could not be reached or refused every call",
    "evaluator_error": "the configured evaluator could not be loaded or built",
    "judge_unhealthy": "a judge failed its sentinel health check (not healthy), so nothing was judged or analysed",
    "low_coverage": "verdict pipeline: an evaluator's usable judgments stayed at or below [judging] low_coverage_share "
                    "of at least low_coverage_min_traces traces to judge (default: none of 10 or more); the summary "
                    "is printed first",
    "drift_input_error": "the judgments could not be analysed for drift",
    "webhook_failed": "the alert webhook did not accept a delivery after every retry",
    "export_failed": "the OTLP endpoint of [export.evaluations] did not take a batch of evaluation records (daemon "
                     "log; they are sent again on the next run)",
    "already_running": "another process holds this data directory (a `verdict daemon`, or a `verdict collector` on the "
                       "span lake)",
    "unknown_tenant": "the tenant has no spans and no state in this data directory (verdict report)",
    "item_not_found": "no review item with that id for this tenant",
    "evaluator_ambiguous": "judgments by several evaluators are present: choose one (the message names them)",
    "invalid_signals": "a user-signal file is missing or malformed (the message names the line)",
    "no_labels": "no reviewer labels to work with yet",
    "invalid_suite": "a probe suite is malformed or unknown (the message names the file, the probe and the field)",
    "probe_error": "some probes could not be executed or judged (target, follow-up or judge failure): their expectations are ERROR",
    "component_failed": "a demo component (collector, daemon, app) exited early, did not become ready or stopped making progress (the message names it and its log)",
    "no_active_registry": "--registry-mode active (or [clustering] registry_mode = \"active\"), but the tenant has no "
                          "active cluster registry version (verdict cluster: fit, assign, validate, activate)",
    "model_unavailable": "the embedding model (of the active registry version, or --model-path) cannot be loaded; "
                         "no download is attempted",
    "unknown_version": "verdict cluster: no registry version with this id exists for this tenant",
    "unknown_cluster": "verdict cluster: no version of this tenant's registry has a cluster with this id",
    "generation_conflict": "verdict cluster: --expected-generation is not the tenant's current generation (someone "
                           "else changed the active pointer first); re-read it with inspect and retry",
    "validation_failed": "verdict cluster: the version failed validation, or has not passed it yet (activate needs "
                         "a validated version)",
    "rollback_target_not_activated": "verdict cluster: rollback may only return to a version that was activated before",
    "analysis_index_pending": "verdict cluster: traces before the cutoff are not in the analysis index yet; run "
                              "normalize until it prints \"complete\": true",
    "invalid_cases": "verdict gate: the cases file is missing, malformed, repeats an id or labels an unknown dimension",
    "judge_error": "verdict gate: the judge produced no usable judgment for at least one case",
    "invalid_tenant": "the tenant id is invalid, in every command (exit 3; the message names --tenant)",
    "no_data_dir": "verdict sql: the data directory does not exist (exit 4)",
    "query_error": "verdict sql: no query, or the query failed or could not read the span lake (exit 5)",
    "access_denied": "verdict sql: the query is not a SELECT or reads outside the tenant's views (exit 6)",
    "missing_extra": "the command needs an optional extra that is not installed (the message gives the pip line)",
    "state_corrupt": "state.duckdb is corrupt, truncated, not a Verdict state file, or was deleted or replaced while "
                     "in use (the message and the `file` field name it); nothing was recreated: restore it from a "
                     "backup, or move it away to start with an empty state",
    "interrupted": "verdict pipeline: stopped by SIGTERM (exit 143) after storing the judgments that finished; the "
                   "`summary` field says what was stored, the rest is judged on the next run",
    "internal_error": "an unexpected failure (a bug); details only with VERDICT_DEBUG=1",
}

# The exit-code policy of every command: 0 success; 1 a result below its bar (a gate or probe run under
# the threshold, `pipeline --fail-on-signal` with an adverse signal, `review correlate --fail-on`); an error
# exits EXIT_CODES[code]: 2, except the four `verdict sql` codes that scripts already test for (3-6;
# invalid_tenant is 3 in every command, as its code is the same in every command).
EXIT_ERROR = 2
EXIT_CODES: dict[ErrorCode, int] = {
    **dict.fromkeys(get_args(ErrorCode), EXIT_ERROR),
    "invalid_tenant": 3, "no_data_dir": 4, "query_error": 5, "access_denied": 6,
    "interrupted": 143,  # 128 + SIGTERM, as a shell reports a process the signal ended
}
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (`verdict sql ... | head`), as a shell reports SIGPIPE
USAGE_CODE: ErrorCode = "invalid_config"  # argparse's complaints: an unknown option, a malformed value


def closed(code: str) -> ErrorCode:
    """`code` if it is in the closed set; a ValueError (a bug in the caller) otherwise."""
    if code not in ERROR_CODES:
        raise ValueError(f"unknown error code {code!r}")
    return code  # narrowed to ErrorCode by the membership test above


class CliError(Exception):
    """A failure with a code from the closed set and a message safe to print (no secrets, no traceback)."""

    def __init__(self, code: ErrorCode, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{closed(code)}: {message}")
        self.code: ErrorCode = code
        self.message = message
        self.details = details or {}  # extra JSON-ready fields of the error object


# The extra of verdict-monitor (pyproject.toml) that brings each optional module the commands import;
# a dotted name is matched by its longest listed prefix.
EXTRA_OF_MODULE: dict[str, str] = {
    **dict.fromkeys(("duckdb", "pyarrow", "numpy", "scipy", "apscheduler", "starlette", "uvicorn", "httptools",
                     "uvloop", "orjson", "grpc", "yaml", "tqdm", "google.protobuf", "opentelemetry.proto",
                     "opentelemetry.exporter.otlp.proto.grpc"), "server"),
    "obstore": "s3", "fsspec": "s3", "sentence_transformers": "semantic", "torch": "semantic",
    "openai": "openai", "anthropic": "anthropic",
}


def missing_extra(exc: ModuleNotFoundError) -> CliError | None:
    """missing_extra naming the pip line, when `exc` is an optional module of a known extra; else None."""
    parts = (exc.name or "").split(".")
    for end in range(len(parts), 0, -1):
        extra = EXTRA_OF_MODULE.get(".".join(parts[:end]))
        if extra is not None:
            return CliError("missing_extra", f"this command needs the '{extra}' extra (module {exc.name!r} is "
                            f"not installed): pip install 'verdict-monitor[{extra}]'", {"extra": extra})
    return None


def internal_error(exc: BaseException) -> CliError:
    """A bug as a closed `internal_error`: the exception type only (its text may hold paths, data or
    secrets); VERDICT_DEBUG=1 makes run_command re-raise it with the traceback instead."""
    return CliError("internal_error", f"{type(exc).__name__} (rerun with VERDICT_DEBUG=1 for details)")


def error_json(code: ErrorCode, message: str, details: dict[str, Any] | None = None) -> str:
    """The one machine-readable error: `{"error": {"code", "message", ...}}` (strict JSON: no NaN)."""
    return json.dumps({"error": {"code": closed(code), "message": message, **(details or {})}}, default=str)


def print_error(code: ErrorCode, message: str, details: dict[str, Any] | None = None) -> None:
    """Report one error on stderr as the envelope, one line."""
    sys.stderr.write(error_json(code, message, details) + "\n")  # looked up per call: tests replace sys.stderr


class UsageError(CliError):
    """argparse's complaint about the command line, as the closed `invalid_config` error."""

    def __init__(self, message: str) -> None:
        super().__init__(USAGE_CODE, message)


class ArgumentParser(argparse.ArgumentParser):
    """The parser of every command and subcommand: usage errors raise UsageError (run_command prints the
    envelope, exit 2) instead of argparse's usage text; `--help` stays plain text on stdout (exit 0).
    Unknown arguments are refused by the innermost parser, so the message names the exact subcommand."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras
