"""Conversation ids: one validation rule for the SDK and the collector (stdlib only).

A conversation id groups the traces (turns) of one multi-turn conversation. It is a key, not content: it
is stored as sent and grouped on, so a value that redaction would rewrite (an e-mail address, a phone
number) is refused rather than stored redacted, where every such conversation would share one `<EMAIL>`.
"""

from __future__ import annotations

MAX_CONVERSATION_ID_LENGTH = 128
DEFAULT_INACTIVITY_MINUTES = 30  # a conversation closes after this long without a new turn


def validate_conversation_id(value: object) -> str:
    """Return `value` if it is a valid conversation id, else raise ValueError saying why.

    Valid: a string of 1-128 printable characters without whitespace, unchanged by redaction.
    """
    if not isinstance(value, str):
        raise ValueError(f"conversation id must be a string, got {type(value).__name__}")
    if not value:
        raise ValueError("conversation id must not be empty")
    if len(value) > MAX_CONVERSATION_ID_LENGTH:
        raise ValueError(
            f"conversation id is {len(value)} characters long; the limit is {MAX_CONVERSATION_ID_LENGTH}")
    if not value.isprintable() or any(c.isspace() for c in value):
        raise ValueError("conversation id must be printable characters without whitespace")
    # Imported here: verdict.redact is stdlib-only but not needed until an id is checked.
    from verdict.redact import redact_text

    if redact_text(value) != value:
        raise ValueError(
            "conversation id would be changed by redaction (it looks like personal data or a secret); "
            "use an opaque id such as a UUID")
    return value
