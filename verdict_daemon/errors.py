"""The daemon's errors: the closed vocabulary and envelope of every CLI (verdict.cli_errors), with the
daemon's exception type. Every failure a CLI or a job log reports has a code from ERROR_CODES."""

from __future__ import annotations

from verdict.cli_errors import ERROR_CODES, CliError, error_json, print_error

__all__ = ["ERROR_CODES", "DaemonError", "error_json", "internal_error", "print_error"]


class DaemonError(CliError):
    """A failure with a code from ERROR_CODES and a message safe to print (no secrets, no traceback)."""


def internal_error(exc: BaseException) -> DaemonError:
    """A bug as a closed `internal_error`: the exception type only (its text may hold paths, data or
    secrets); `VERDICT_DEBUG=1` makes the CLIs re-raise it with the traceback instead."""
    return DaemonError("internal_error", f"{type(exc).__name__} (rerun with VERDICT_DEBUG=1 for details)")
