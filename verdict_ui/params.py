"""Query-string and form values → typed values, or BadRequest with a message that names the parameter.

A malformed value is the client's mistake: it becomes 400 with this message, never a 500.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime

MAX_TEXT = 200  # longest free-text filter or name accepted in a query string
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")  # trace, span, signal and review item ids


class BadRequest(ValueError):
    """A request value that cannot be used; the message is shown to the user (400)."""


def text(params: Mapping[str, str], name: str) -> str | None:
    value = params.get(name, "").strip()
    if not value:
        return None
    if len(value) > MAX_TEXT or any(ord(c) < 32 for c in value):
        raise BadRequest(f"{name}: at most {MAX_TEXT} printable characters")
    return value


def choice(params: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str | None = None) -> str | None:
    value = params.get(name, "").strip() or default
    if value is not None and value not in allowed:
        raise BadRequest(f"{name}: expected one of {', '.join(allowed)}, got {value[:40]!r}")
    return value


def integer(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name}: expected a whole number, got {raw[:40]!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name}: must lie in [{low}, {high}], got {value}")
    return value


def moment(params: Mapping[str, str], name: str) -> datetime | None:
    """An ISO date or date-time (UTC when it names no zone) as a naive UTC datetime, like the lake's times."""
    raw = params.get(name, "").strip()
    if not raw:
        return None
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        raise BadRequest(f"{name}: expected an ISO date or date-time such as 2026-11-20 or "
                         f"2026-11-20T06:00, got {raw[:40]!r}") from None
    if at.tzinfo is not None:
        at = at.astimezone(UTC).replace(tzinfo=None)
    return at


def day(params: Mapping[str, str], name: str) -> date | None:
    at = moment(params, name)
    return None if at is None else at.date()


def identifier(value: str, what: str) -> str:
    if not _ID.match(value):
        raise BadRequest(f"{what}: not a valid id ({value[:40]!r})")
    return value
