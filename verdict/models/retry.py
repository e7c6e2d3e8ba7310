"""Transport retries: exponential backoff with full jitter, honouring the server's Retry-After.

The SDKs' own retries are switched off (`max_retries=0`) and this policy is used instead, so
that every attempt passes through the shared rate limiter, a Retry-After pauses all threads
calling the same model, and the final failure is one `ModelError` with a closed `kind`.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from .base import ModelError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry a call that failed with a retryable ModelError.

    The wait before retry n (1-based) is uniform in [0, min(max_delay, base_delay * 2**(n-1))]
    ("full jitter"); when the server sent Retry-After, the wait is at least that (capped at
    max_retry_after; a longer demand is not waited for and fails the call at once).
    """

    max_attempts: int = 4  # total tries including the first
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("retry delays must be >= 0")

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float | None:
        """Seconds to wait before retry number `retry` (1-based), or None to give up."""
        if retry >= self.max_attempts:
            return None
        if retry_after is not None and retry_after > self.max_retry_after:
            return None
        backoff = rng.uniform(0.0, min(self.max_delay, self.base_delay * 2 ** (retry - 1)))
        return max(backoff, retry_after or 0.0)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms`, `retry-after` (seconds or HTTP date); None when absent/invalid."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def call_with_retries(
    attempt: Callable[[], T],
    policy: RetryPolicy,
    *,
    on_retry_after: Callable[[float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """Run `attempt` until it succeeds, raises a non-retryable ModelError, or the policy gives up.

    `on_retry_after` hears every server-demanded pause (the rate limiter uses it to hold back
    other threads too). An HTTP 500 with the same specific error text twice for the same request
    is a deterministic refusal (a server that cannot serve this request, not one that is down): it
    becomes `refused` and is not retried further.
    """
    rng = rng or random.Random()
    retry = 0
    previous: str | None = None
    while True:
        try:
            return attempt()
        except ModelError as error:
            retry += 1
            if error.retryable and _deterministic(error.signature, previous):
                raise ModelError("refused", f"{error.message} (the same error twice: a refusal of this request, "
                                 "not an outage; not retried)", signature=error.signature) from None
            previous = error.signature
            wait = policy.delay(retry, error.retry_after, rng) if error.retryable else None
            if wait is None:
                raise  # the caller states how many requests were sent (ModelError.after)
            if error.retry_after and on_retry_after is not None:
                on_retry_after(error.retry_after)
            sleep(wait)


# What overloaded servers and proxies say: the same text twice from them is still an outage.
_TRANSIENT = re.compile(r"server error|internal error|overload|unavailable|try again|timed? ?out|busy|capacity",
                        re.IGNORECASE)


def _deterministic(signature: str | None, previous: str | None) -> bool:
    """A 500 that gives the same specific reason twice (502/503/504/529 are gateways and overload)."""
    if signature is None or signature != previous or not signature.startswith("500 "):
        return False
    reason = signature[4:].strip()
    return bool(reason) and not _TRANSIENT.search(reason)
