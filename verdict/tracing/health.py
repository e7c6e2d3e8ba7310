"""Never break the app: instrumentation failures are counted here and logged once per kind."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

log = logging.getLogger("verdict.tracing")

_lock = threading.Lock()
_errors: Counter[str] = Counter()
_events: Counter[str] = Counter()
_omitted: Counter[str] = Counter()  # spans exported without their content, by reason


@dataclass(frozen=True)
class TracingStats:
    """A snapshot of the SDK's own health counters."""

    spans_started: int
    spans_ended: int
    spans_exported: int
    spans_dropped: int
    export_failures: int
    errors: Mapping[str, int] = field(default_factory=dict)
    # Spans exported without their content, by reason ("export_backlog": shed under overload).
    content_omitted: Mapping[str, int] = field(default_factory=dict)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def record_error(kind: str, exc: BaseException | None = None) -> None:
    """Count an instrumentation failure of `kind`; log it the first time that kind is seen."""
    with _lock:
        _errors[kind] += 1
        first = _errors[kind] == 1
    if first:
        # Only the exception type: a message could quote request content.
        detail = type(exc).__name__ if exc is not None else "no exception"
        log.warning("verdict.tracing: %s failed (%s); the call was not affected", kind, detail)


def count(event: str, n: int = 1) -> None:
    # Counter.__iadd__ on one key is not atomic across threads.
    with _lock:
        _events[event] += n


def content_omitted(reason: str, n: int = 1) -> None:
    with _lock:
        _omitted[reason] += n


def stats() -> TracingStats:
    with _lock:
        return TracingStats(
            spans_started=_events["spans_started"],
            spans_ended=_events["spans_ended"],
            spans_exported=_events["spans_exported"],
            spans_dropped=_events["spans_dropped"],
            export_failures=_events["export_failures"],
            errors=MappingProxyType(dict(_errors)),
            content_omitted=MappingProxyType(dict(_omitted)),
        )


def reset_stats() -> None:
    """Zero every counter (tests and long-running apps that report deltas)."""
    with _lock:
        _errors.clear()
        _events.clear()
        _omitted.clear()
