"""Server-side re-redaction (defence in depth: the SDK already redacted before export).

Modes: `content` (default) re-redacts the GenAI message-content attributes only — that is
where personal data lives, and scanning every attribute costs throughput; `all` also runs the
redactor over every other string attribute value, event and link attribute; `off` trusts the
SDK. The engine is `verdict.redact`, imported when the collector starts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

MODES = ("content", "all", "off")
CONTENT_CACHE_ENTRIES = 2048


def _identity(value):
    return value


@dataclass(frozen=True)
class ServerRedaction:
    mode: str
    content: Callable[[str], str]  # applied to message-content strings
    other: Callable[[object], object]  # applied to every other attribute value

    @classmethod
    def create(cls, mode: str) -> ServerRedaction:
        if mode not in MODES:
            raise ValueError(f"redaction mode must be one of {', '.join(MODES)}, got {mode!r}")
        if mode == "off":
            return cls(mode, _identity, _identity)
        try:
            from verdict.redact import Redactor
        except ImportError as exc:  # the engine ships with verdict; a broken install must not run open
            raise RuntimeError(
                f"server-side redaction needs verdict.redact ({exc}); fix the install or pass --redact off"
            ) from None
        redactor = Redactor()
        # System instructions (and retried payloads) repeat verbatim: remember recent results.
        content = functools.lru_cache(maxsize=CONTENT_CACHE_ENTRIES)(redactor.text)
        return cls(mode, content, redactor.value if mode == "all" else _identity)
