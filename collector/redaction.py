"""Server-side re-redaction (defence in depth: the SDK already redacted before export).

Modes: `content` (default) re-redacts the GenAI message-content attributes only — that is
where personal data lives, and scanning every attribute costs throughput; `all` also runs the
redactor over every other string attribute value, event and link attribute; `off` trusts the
SDK. The engine is `verdict.redact`, imported when the collector starts.

Trusting the SDK per span (`--trust-sdk-redaction authenticated`, the default): message content
is not redacted a second time for spans whose instrumentation scope carries the attribute
`verdict.redaction.version` equal to this collector's engine version, *and* which came with a
valid token. Everything else (no token, another exporter, an older or newer SDK) is redacted
as configured. Re-redacting already-redacted content changes nothing (the engine is
idempotent) but is the collector's largest CPU cost.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from verdict.redact import SDK_REDACTION_ATTRIBUTE  # the claim the SDK's tracer scope carries

MODES = ("content", "all", "off")
TRUST_MODES = ("authenticated", "never")
CONTENT_CACHE_ENTRIES = 2048


def redaction_version() -> str:
    """The engine version an SDK must claim to be trusted: the `verdict` package version it ships in."""
    from verdict import __version__

    return __version__


def _identity(value):
    return value


@dataclass(frozen=True)
class ServerRedaction:
    mode: str
    content: Callable[[str], str]  # applied to message-content strings
    other: Callable[[object], object]  # applied to every other attribute value
    trust_sdk: bool = False  # skip `content` for authenticated spans whose scope claims `version`
    version: str = ""

    @classmethod
    def create(cls, mode: str, trust_sdk: str = "authenticated") -> ServerRedaction:
        if mode not in MODES:
            raise ValueError(f"redaction mode must be one of {', '.join(MODES)}, got {mode!r}")
        if trust_sdk not in TRUST_MODES:
            raise ValueError(f"SDK redaction trust must be one of {', '.join(TRUST_MODES)}, got {trust_sdk!r}")
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
        other = redactor.value if mode == "all" else _identity
        return cls(mode, content, other, trust_sdk == "authenticated", redaction_version())

    def content_for_scope(self, scope_attributes, authenticated: bool) -> Callable[[str], str]:
        """The content redactor for one scope's spans: identity when the sender is a trusted SDK."""
        if not (self.trust_sdk and authenticated):
            return self.content
        for kv in scope_attributes:
            if kv.key == SDK_REDACTION_ATTRIBUTE:
                return _identity if kv.value.string_value == self.version else self.content
        return self.content
