"""Client-side rate limiting per model: requests/min and tokens/min token buckets, shared across threads.

Every attempt (retries included) takes one request and its estimated tokens before it is sent;
after the reply the token bucket is corrected with the real usage. A server Retry-After pauses
every thread using the same limiter, not only the one that was told to wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class RateLimits:
    """Per-model budget. None disables that budget; `RateLimits(None, None)` disables limiting.

    The buckets hold `burst_seconds` worth of budget, so an idle client may send that much at
    once and is then held to the per-minute rate.
    """

    requests_per_minute: float | None = 3000
    tokens_per_minute: float | None = 2_000_000
    burst_seconds: float = 10.0

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0 or None, got {value}")
        if self.burst_seconds <= 0:
            raise ValueError(f"burst_seconds must be > 0, got {self.burst_seconds}")


class TokenBucket:
    """`capacity` units refilled continuously at `per_second`. The owner serialises access."""

    def __init__(self, capacity: float, per_second: float, now: float) -> None:
        self.capacity = capacity
        self.per_second = per_second
        self.level = capacity
        self._updated = now

    def _refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self._updated) * self.per_second)
        self._updated = now

    def wait_time(self, amount: float, now: float) -> float:
        """Seconds until `amount` (capped at capacity, so a huge request is not starved) is available."""
        self._refill(now)
        missing = min(amount, self.capacity) - self.level
        return max(missing, 0.0) / self.per_second

    def take(self, amount: float, now: float) -> None:
        """Debit `amount` (negative refunds); the level may go below zero, delaying later takers."""
        self._refill(now)
        self.level = min(self.capacity, self.level - amount)


class RateLimiter:
    """Both buckets of one model behind one lock; `acquire` blocks the calling thread until allowed."""

    def __init__(self, limits: RateLimits, *, clock: Clock = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.limits = limits
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        now = clock()
        self._requests = self._bucket(limits.requests_per_minute, now)
        self._tokens = self._bucket(limits.tokens_per_minute, now)
        self._paused_until = now

    def _bucket(self, per_minute: float | None, now: float) -> TokenBucket | None:
        if per_minute is None:
            return None
        per_second = per_minute / 60.0
        return TokenBucket(max(per_second * self.limits.burst_seconds, 1.0), per_second, now)

    def acquire(self, tokens: int) -> float:
        """Take one request and `tokens` tokens, waiting as needed; returns the clock time of the grant."""
        while True:
            with self._lock:
                now = self._clock()
                wait = self._paused_until - now
                if self._requests is not None:
                    wait = max(wait, self._requests.wait_time(1, now))
                if self._tokens is not None:
                    wait = max(wait, self._tokens.wait_time(tokens, now))
                if wait <= 0:
                    if self._requests is not None:
                        self._requests.take(1, now)
                    if self._tokens is not None:
                        self._tokens.take(tokens, now)
                    return now
            self._sleep(wait)

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the token bucket once the real usage of a call is known."""
        if self._tokens is not None and actual != estimated:
            with self._lock:
                self._tokens.take(actual - estimated, self._clock())

    def pause(self, seconds: float) -> None:
        """Hold every caller back for `seconds` (a server's Retry-After)."""
        with self._lock:
            self._paused_until = max(self._paused_until, self._clock() + seconds)


_shared: dict[tuple[str, RateLimits], RateLimiter] = {}
_shared_lock = threading.Lock()


def shared_limiter(key: str, limits: RateLimits | None) -> RateLimiter | None:
    """The process-wide limiter for `key` (model name and endpoint) with these limits."""
    if limits is None or (limits.requests_per_minute is None and limits.tokens_per_minute is None):
        return None
    with _shared_lock:
        limiter = _shared.get((key, limits))
        if limiter is None:
            limiter = _shared[(key, limits)] = RateLimiter(limits)
        return limiter


def estimate_tokens(text_chars: int, max_output_tokens: int | None) -> int:
    """Rough pre-call token estimate (~4 characters per token plus the output allowance)."""
    return text_chars // 4 + 1 + (max_output_tokens or 0)
