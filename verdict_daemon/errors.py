"""The daemon's closed error vocabulary: every failure a CLI or a job log reports is one of these codes."""

from __future__ import annotations

import json
import sys

ERROR_CODES: dict[str, str] = {
    "invalid_config": "the config file or a command-line option is invalid (the message names the field)",
    "tenant_required": "no tenant was given, or the tenant id is invalid",
    "storage_locked": "state.duckdb stayed locked by another process past the lock timeout",
    "storage_error": "state.duckdb or the span lake could not be read or written",
    "provider_unavailable": "the judge model could not be reached or refused every call",
    "evaluator_error": "the configured evaluator could not be loaded or built",
    "judge_unhealthy": "a judge failed its sentinel health check (not healthy), so nothing was judged or analysed",
    "drift_input_error": "the judgments could not be analysed for drift",
    "webhook_failed": "the alert webhook did not accept a delivery after every retry",
    "already_running": "another verdict-daemon holds this data directory",
    "unknown_tenant": "the tenant has no spans and no state in this data directory (verdict report)",
    "item_not_found": "no review item with that id for this tenant",
    "evaluator_ambiguous": "judgments by several evaluators are present: choose one (the message names them)",
    "invalid_signals": "a user-signal file is missing or malformed (the message names the line)",
    "no_labels": "no reviewer labels to work with yet",
    "invalid_suite": "a probe suite is malformed or unknown (the message names the file, the probe and the field)",
    "probe_error": "some probes could not be executed or judged (target, follow-up or judge failure): their expectations are ERROR",
    "component_failed": "a demo component (collector, daemon, app) exited early, did not become ready or stopped making progress (the message names it and its log)",
    "no_active_registry": "--registry-mode active (or [clustering] registry_mode = \"active\"), but the tenant has no "
                          "active cluster registry version (verdict-cluster: fit, assign, validate, activate)",
    "model_unavailable": "the active registry version is semantic/hybrid and its embedding model cannot be loaded",
    "invalid_cases": "verdict gate: the cases file is missing, malformed, repeats an id or labels an unknown dimension",
    "judge_error": "verdict gate: the judge produced no usable judgment for at least one case",
    "invalid_tenant": "verdict sql: the tenant id is invalid (exit 3; the other commands say tenant_required)",
    "no_data_dir": "verdict sql: the data directory does not exist (exit 4)",
    "query_error": "verdict sql: no query, or the query failed or could not read the span lake (exit 5)",
    "access_denied": "verdict sql: the query is not a SELECT or reads outside the tenant's views (exit 6)",
    "internal_error": "an unexpected failure (a bug); details only with VERDICT_DEBUG=1",
}


class DaemonError(Exception):
    """A failure with a code from ERROR_CODES and a message safe to print (no secrets, no traceback)."""

    def __init__(self, code: str, message: str, details: dict | None = None) -> None:
        super().__init__(f"{_closed(code)}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}  # extra JSON-ready fields of the CLI's error object


def internal_error(exc: BaseException) -> DaemonError:
    """A bug as a closed `internal_error`: the exception type only (its text may hold paths, data or
    secrets); `VERDICT_DEBUG=1` makes the CLIs re-raise it with the traceback instead."""
    return DaemonError("internal_error", f"{type(exc).__name__} (rerun with VERDICT_DEBUG=1 for details)")


def _closed(code: str) -> str:
    if code not in ERROR_CODES:
        raise ValueError(f"unknown daemon error code {code!r}")
    return code


def error_json(code: str, message: str, details: dict | None = None) -> str:
    """The one machine-readable error of every `verdict` subcommand: `{"error": {"code", "message", ...}}`."""
    return json.dumps({"error": {"code": _closed(code), "message": message, **(details or {})}})


def print_error(code: str, message: str, details: dict | None = None, *, text_prog: str | None = None) -> None:
    """Report one error on stderr: that JSON object on one line or, for a command whose documented default
    is human text (`verdict report` without --json), the line `PROG: error [CODE]: MESSAGE`."""
    line = error_json(code, message, details) if text_prog is None else f"{text_prog}: error [{_closed(code)}]: {message}"
    sys.stderr.write(line + "\n")  # sys.stderr looked up per call: tests may have replaced it
