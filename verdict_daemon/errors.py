"""The daemon's closed error vocabulary: every failure a CLI or a job log reports is one of these codes."""

from __future__ import annotations

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
    "internal_error": "an unexpected failure (a bug); details only with VERDICT_DEBUG=1",
}


class DaemonError(Exception):
    """A failure with a code from ERROR_CODES and a message safe to print (no secrets, no traceback)."""

    def __init__(self, code: str, message: str, details: dict | None = None) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown daemon error code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}  # extra JSON-ready fields of the CLI's error object


def internal_error(exc: BaseException) -> DaemonError:
    """A bug as a closed `internal_error`: the exception type only (its text may hold paths, data or
    secrets); `VERDICT_DEBUG=1` makes the CLIs re-raise it with the traceback instead."""
    return DaemonError("internal_error", f"{type(exc).__name__} (rerun with VERDICT_DEBUG=1 for details)")
