"""Per-endpoint concurrency limits: how many calls may be in flight to one server at once.

A local server (llama.cpp, a single-GPU Ollama) computes one request at a time and queues the rest;
calls queued past the client timeout are abandoned while the server keeps computing them. The gate
holds callers back on the client side instead, where waiting costs nothing and does not count
towards the per-attempt timeout. The limit comes from the model options (`max_concurrency`) or is
learned: a timeout while several calls were in flight halves the limit (down to 1), logged once
per change.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("verdict.models")


class ConcurrencyGate:
    def __init__(self, endpoint: str, limit: int | None = None) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {limit}")
        self.endpoint = endpoint
        self.limit = limit
        self.in_flight = 0
        self._changed = threading.Condition()

    def acquire(self) -> int:
        """Take one slot (waiting for one); the number of calls in flight with it. Give it back with `release`."""
        with self._changed:
            while self.limit is not None and self.in_flight >= self.limit:
                self._changed.wait()
            self.in_flight += 1
            return self.in_flight

    def release(self) -> None:
        with self._changed:
            self.in_flight -= 1
            self._changed.notify()

    @contextmanager
    def slot(self) -> Iterator[int]:
        """Hold one slot for the duration of a call; yields the number of calls in flight with it."""
        in_flight = self.acquire()
        try:
            yield in_flight
        finally:
            self.release()

    def timed_out(self, in_flight: int) -> None:
        """A call that had `in_flight` calls in flight (itself included) timed out: the server was likely
        queueing them, so allow half as many from now on."""
        if in_flight <= 1:
            return
        with self._changed:
            learned = max(1, in_flight // 2)
            if self.limit is None or learned < self.limit:
                self.limit = learned
                log.warning("%s: a call timed out with %d calls in flight; limiting this endpoint to %d "
                            "concurrent call(s) (set max_concurrency to choose)", self.endpoint, in_flight, learned)


_gates: dict[tuple[str, int | None], ConcurrencyGate] = {}
_gates_lock = threading.Lock()


def shared_gate(endpoint: str, limit: int | None) -> ConcurrencyGate:
    """The process-wide gate of `endpoint` for clients configured with `limit` (None: learned only)."""
    with _gates_lock:
        gate = _gates.get((endpoint, limit))
        if gate is None:
            gate = _gates[(endpoint, limit)] = ConcurrencyGate(endpoint, limit)
        return gate
