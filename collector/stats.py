"""Counters behind the /stats endpoint (thread-safe; read as one snapshot)."""

from __future__ import annotations

import threading
import time

_COUNTERS = (
    "requests",
    "spans_received",
    "spans_written",
    "spans_rejected",
    "requests_acked",
    "requests_invalid",
    "requests_unauthenticated",
    "refused_overload",
    "refused_disk",
    "segments_written",
    "write_errors",
    "compactions",
    "partitions_expired",
)


class Stats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(_COUNTERS, 0)
        self._last_write_s = 0.0
        self._started = time.time()

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                self._counts[name] += delta

    def observe_write(self, seconds: float) -> None:
        self._last_write_s = seconds

    def snapshot(self) -> dict:
        with self._lock:
            out = dict(self._counts)
        out["last_write_ms"] = round(self._last_write_s * 1000, 2)
        out["uptime_s"] = round(time.time() - self._started, 1)
        return out
