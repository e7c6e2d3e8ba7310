"""What a detector reports, and the labels and precedence of the built-in detectors."""

from __future__ import annotations

from typing import NamedTuple


class Finding(NamedTuple):
    """A span [start, end) of the scanned text that must be redacted as `label`."""

    start: int
    end: int
    label: str
    priority: int


# Overlapping findings are merged into one redaction named after the highest-priority label
# (e.g. `Authorization: Bearer eyJ...` is one <JWT>, not a <SECRET> next to a <JWT>).
PRIORITY: dict[str, int] = {
    "PRIVATE_KEY": 90,
    "URL_CREDENTIALS": 85,
    "JWT": 80,
    "API_KEY": 75,
    "AUTH": 70,
    "EMAIL": 60,
    "CARD": 55,
    "IBAN": 54,
    "SSN": 53,
    "PHONE": 50,
    "IP": 45,
    "SECRET": 40,
}
USER_PRIORITY = 100  # user-supplied patterns win: the user knows their data

# Markers `Redactor.value` leaves where it stops descending; never redacted again.
MAX_DEPTH_MARKER = "<MAX_DEPTH>"
TRUNCATED_MARKER = "<TRUNCATED>"
MARKER_LABELS = ("MAX_DEPTH", "TRUNCATED")
