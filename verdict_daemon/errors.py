"""The daemon's errors: the closed vocabulary of every command (verdict.cli_errors), with the daemon's
exception type. Every failure a command or a job log reports has a code from ERROR_CODES."""

from __future__ import annotations

from verdict.cli_errors import ERROR_CODES, CliError

__all__ = ["ERROR_CODES", "DaemonError"]


class DaemonError(CliError):
    """A failure with a code from ERROR_CODES and a message safe to print (no secrets, no traceback)."""
