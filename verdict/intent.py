"""Intent keys: one validation rule for the SDK, the collector and the daemon (stdlib only).

An intent key names the product feature a call serves ("billing.v1"). It becomes a span attribute,
a cluster label and a path-safe identifier, so it must be short, plain and never personal data.
"""

from __future__ import annotations

import re

MAX_INTENT_KEY_LENGTH = 64

_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")


def validate_intent_key(key: object) -> str:
    """Return `key` if it is a valid intent key, else raise ValueError saying why.

    Valid: 1-64 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-', starting with a letter or digit,
    and unchanged by redaction (a key that redaction would rewrite, such as an API key, an IP
    address or a phone number, would carry personal data or secrets into every span).
    """
    if not isinstance(key, str):
        raise ValueError(f"intent key must be a string, got {type(key).__name__}")
    if not key:
        raise ValueError("intent key must not be empty")
    if len(key) > MAX_INTENT_KEY_LENGTH:
        raise ValueError(
            f"intent key is {len(key)} characters long; the limit is {MAX_INTENT_KEY_LENGTH}"
        )
    if "@" in key:
        raise ValueError("intent key looks like an e-mail address; use a feature name such as 'billing.v1'")
    if not _KEY_RE.fullmatch(key):
        raise ValueError(
            f"invalid intent key {key!r}: use letters, digits, '.', '_', ':' or '-', "
            "starting with a letter or digit"
        )
    # Imported here: verdict.redact is stdlib-only but not needed until a key is checked.
    from verdict.redact import redact_text

    if redact_text(key) != key:
        raise ValueError(
            f"intent key {key!r} would be changed by redaction (it looks like personal data or a "
            "secret); use a feature name such as 'billing.v1'"
        )
    return key
