"""The one error shape of every Verdict console script, and its closed set of codes.

Every failure a CLI reports is one line `{"error": {"code": CODE, "message": ...}}` on stderr (extra
JSON-ready fields may follow `message`), CODE one of ERROR_CODES (documented in docs/daemon.md, "Error
codes"), and nothing half-written on stdout. It lives here, in the bottom layer, so that `collector/`
and `verdict_daemon/` both report through it without one importing the other (stdlib only).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import NoReturn

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
    "already_running": "another process holds this data directory (a verdict-daemon, or a verdict-collector on the "
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
                          "active cluster registry version (verdict-cluster: fit, assign, validate, activate)",
    "model_unavailable": "the embedding model (of the active registry version, or --model-path) cannot be loaded; "
                         "no download is attempted",
    "unknown_version": "verdict-cluster: no registry version with this id exists for this tenant",
    "unknown_cluster": "verdict-cluster: no version of this tenant's registry has a cluster with this id",
    "generation_conflict": "verdict-cluster: --expected-generation is not the tenant's current generation (someone "
                           "else changed the active pointer first); re-read it with inspect and retry",
    "validation_failed": "verdict-cluster: the version failed validation, or has not passed it yet (activate needs "
                         "a validated version)",
    "rollback_target_not_activated": "verdict-cluster: rollback may only return to a version that was activated before",
    "analysis_index_pending": "verdict-cluster: traces before the cutoff are not in the analysis index yet; run "
                              "normalize until it prints \"complete\": true",
    "invalid_cases": "verdict gate: the cases file is missing, malformed, repeats an id or labels an unknown dimension",
    "judge_error": "verdict gate: the judge produced no usable judgment for at least one case",
    "invalid_tenant": "verdict sql: the tenant id is invalid (exit 3; the other commands say tenant_required)",
    "no_data_dir": "verdict sql: the data directory does not exist (exit 4)",
    "query_error": "verdict sql: no query, or the query failed or could not read the span lake (exit 5)",
    "access_denied": "verdict sql: the query is not a SELECT or reads outside the tenant's views (exit 6)",
    "internal_error": "an unexpected failure (a bug); details only with VERDICT_DEBUG=1",
}

EXIT_USAGE = 2  # a usage error (unknown option, malformed value): code invalid_config, every script
USAGE_CODE = "invalid_config"


def closed(code: str) -> str:
    """`code` if it is in the closed set; a ValueError (a bug in the caller) otherwise."""
    if code not in ERROR_CODES:
        raise ValueError(f"unknown error code {code!r}")
    return code


class CliError(Exception):
    """A failure with a code from ERROR_CODES and a message safe to print (no secrets, no traceback)."""

    def __init__(self, code: str, message: str, details: dict | None = None) -> None:
        super().__init__(f"{closed(code)}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}  # extra JSON-ready fields of the error object


def error_json(code: str, message: str, details: dict | None = None) -> str:
    """The one machine-readable error: `{"error": {"code", "message", ...}}` (strict JSON: no NaN)."""
    return json.dumps({"error": {"code": closed(code), "message": message, **(details or {})}}, default=str)


# Line breaks and other control characters a message may echo from the command line (str.splitlines
# breaks at all of these): escaped, so the human line stays one line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def error_line(prog: str, code: str, message: str) -> str:
    """The human form of the same error: `PROG: error [CODE]: MESSAGE`, one line."""
    message = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), message)
    return f"{prog}: error [{closed(code)}]: {message}"


def print_error(code: str, message: str, details: dict | None = None, *, text_prog: str | None = None) -> None:
    """Report one error on stderr: that JSON object on one line or, for a command whose documented default
    is human text (`verdict report` without --json), the line `PROG: error [CODE]: MESSAGE`."""
    line = error_json(code, message, details) if text_prog is None else error_line(text_prog, code, message)
    sys.stderr.write(line + "\n")  # sys.stderr looked up per call: tests may have replaced it


class UsageError(CliError):
    """argparse's complaint about the command line, as the closed `invalid_config` error."""

    def __init__(self, message: str) -> None:
        super().__init__(USAGE_CODE, message)


class ArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise UsageError (the caller prints the envelope and exits
    EXIT_USAGE) instead of printing argparse's usage text; `--help` stays plain text on stdout."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")
