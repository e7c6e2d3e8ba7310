"""Redaction engine shared by the tracing SDK, the collector and artifacts (stdlib only).

    from verdict.redact import Redactor, redact_text, redact_value
    redact_text("mail bob@example.com, key sk-proj-...")   # 'mail <EMAIL>, key <API_KEY>'
    Redactor(mode="hash", secret=b"k").text("bob@example.com")   # '<EMAIL:...12 hex...>'

See docs/redaction.md for the detectors, modes, custom rules and the hook.
"""

from __future__ import annotations

from typing import Any

from verdict.redact.credentials import is_credential_name
from verdict.redact.findings import MAX_DEPTH_MARKER, PRIORITY, TRUNCATED_MARKER, Finding
from verdict.redact.redactor import MODES, Redactor

LABELS: tuple[str, ...] = tuple(PRIORITY)

default_redactor = Redactor()

# Instrumentation-scope attribute the tracing SDK sets when this built-in engine (its default rules)
# redacted the content; an authenticated collector of the same version may then skip re-redacting it.
SDK_REDACTION_ATTRIBUTE = "verdict.redaction.version"


def redact_text(s: str) -> str:
    """`s` redacted by the default Redactor (mode "redact")."""
    return default_redactor.text(s)


def redact_value(obj: Any) -> Any:
    """A redacted copy of a JSON-like value, by the default Redactor (mode "redact")."""
    return default_redactor.value(obj)


__all__ = [
    "LABELS",
    "MAX_DEPTH_MARKER",
    "MODES",
    "TRUNCATED_MARKER",
    "Finding",
    "Redactor",
    "SDK_REDACTION_ATTRIBUTE",
    "default_redactor",
    "is_credential_name",
    "redact_text",
    "redact_value",
]
