"""Counters behind the /stats endpoint (thread-safe; read as one snapshot)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # collector.call_audit reads the lake, whose modules count into Stats
    from collector.call_audit import RecentAudit

_COUNTERS = (
    "requests",
    "spans_received",
    "spans_written",
    "spans_rejected",
    "spans_outside_retention",
    "requests_acked",
    "requests_invalid",
    "requests_unauthenticated",
    "client_disconnects",
    "refused_overload",
    "refused_disk",
    "segments_written",
    "write_errors",
    "compactions",
    "partitions_expired",
    "logs_received",
    "logs_written",
    "logs_rejected",
    "logs_outside_retention",
    "spans_claim_ignored",
    "logs_claim_ignored",
    "metrics_refused",
    "segments_shipped",
    "bytes_shipped",
    "segments_deleted_after_ship",
    "ship_errors",
    "lake_merged_objects",
    "lake_deleted_objects",
    "lake_compaction_errors",
)
MAX_SCOPES = 256  # distinct unrecognised scope names kept; the rest are counted under "(other)"


class Stats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(_COUNTERS, 0)
        self._dialects: dict[str, int] = {}
        self._unrecognised: dict[str, int] = {}
        self._last_write_s = 0.0
        self._call_audit: RecentAudit | None = None
        self._started = time.time()

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                self._counts[name] += delta

    def add_spans_by_dialect(self, dialects: dict[str, int], unrecognised: dict[str, int]) -> None:
        """Spans per recognised dialect, and per instrumentation scope for spans none recognised."""
        with self._lock:
            for name, n in dialects.items():
                self._dialects[name] = self._dialects.get(name, 0) + n
            for scope, n in unrecognised.items():
                if scope not in self._unrecognised and len(self._unrecognised) >= MAX_SCOPES:
                    scope = "(other)"
                self._unrecognised[scope] = self._unrecognised.get(scope, 0) + n

    def set_call_audit(self, audit: RecentAudit) -> None:
        self._call_audit = audit

    def observe_write(self, seconds: float) -> None:
        self._last_write_s = seconds

    def snapshot(self) -> dict:
        with self._lock:
            out: dict[str, Any] = dict(self._counts)
            out["spans_by_dialect"] = dict(self._dialects)
            out["unrecognised_scopes"] = dict(self._unrecognised)
        out["llm_calls_audit"] = self._call_audit.as_json() if self._call_audit is not None else None
        out["last_write_ms"] = round(self._last_write_s * 1000, 2)
        out["uptime_s"] = round(time.time() - self._started, 1)
        return out
