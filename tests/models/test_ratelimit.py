"""Token-bucket limiter: exact math on an injected clock, and one budget shared by threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from verdict.models.ratelimit import RateLimiter, RateLimits, estimate_tokens, shared_limiter


class FakeClock:
    """Time that only moves when someone sleeps; safe to share between threads."""

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


def limiter(clock: FakeClock, **limits) -> RateLimiter:
    return RateLimiter(RateLimits(**limits), clock=clock, sleep=clock.sleep)


def test_requests_per_minute_burst_then_steady_rate():
    clock = FakeClock()
    rl = limiter(clock, requests_per_minute=60, tokens_per_minute=None, burst_seconds=2)
    grants = [rl.acquire(0) for _ in range(5)]
    assert grants == pytest.approx([0.0, 0.0, 1.0, 2.0, 3.0])


def test_tokens_per_minute_wait_and_settle_refund():
    clock = FakeClock()
    rl = limiter(clock, requests_per_minute=None, tokens_per_minute=600, burst_seconds=10)  # 10/s, holds 100
    assert rl.acquire(80) == 0.0
    assert rl.acquire(50) == pytest.approx(3.0)  # 20 left, 30 missing at 10 tokens/s
    rl.settle(estimated=50, actual=10)  # the call used less: 40 tokens come back
    assert rl.acquire(40) == pytest.approx(3.0)


def test_request_larger_than_the_bucket_is_not_starved_but_paid_for():
    clock = FakeClock()
    rl = limiter(clock, requests_per_minute=None, tokens_per_minute=600, burst_seconds=10)
    assert rl.acquire(500) == 0.0  # a full bucket lets it through, the level goes to -400
    assert rl.acquire(10) == pytest.approx(41.0)


def test_under_reported_estimate_is_charged_afterwards():
    clock = FakeClock()
    rl = limiter(clock, requests_per_minute=None, tokens_per_minute=600, burst_seconds=10)
    rl.acquire(10)
    rl.settle(estimated=10, actual=110)  # level 100 - 110 = -10
    assert rl.acquire(20) == pytest.approx(3.0)


def test_pause_holds_back_every_caller():
    clock = FakeClock()
    rl = limiter(clock, requests_per_minute=6000, tokens_per_minute=None)
    rl.pause(5.0)
    rl.pause(2.0)  # a shorter pause never shortens a longer one
    assert rl.acquire(0) == pytest.approx(5.0)


def test_limits_are_validated():
    with pytest.raises(ValueError, match="requests_per_minute must be > 0"):
        RateLimits(requests_per_minute=0)
    with pytest.raises(ValueError, match="burst_seconds"):
        RateLimits(burst_seconds=0)


def _max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(sum(1 for t in times[i:] if t < start + window) for i, start in enumerate(times))


def _grants_from_threads(get_limiter, threads: int, each: int) -> list[float]:
    barrier = threading.Barrier(threads)

    def work(index: int) -> list[float]:
        rl = get_limiter(index)
        barrier.wait()
        return [rl.acquire(0) for _ in range(each)]

    with ThreadPoolExecutor(threads) as pool:
        return [t for grants in pool.map(work, range(threads)) for t in grants]


# Real clock here: threads sleep concurrently, which a single fake clock cannot model.
THREADED = RateLimits(requests_per_minute=1200, tokens_per_minute=None, burst_seconds=0.15)  # 20/s, burst 3


def test_threads_share_one_budget_per_model():
    shared = RateLimiter(THREADED)
    grants = _grants_from_threads(lambda i: shared, threads=6, each=3)
    assert len(grants) == 18
    # Token-bucket bound: any 0.25 s window holds at most burst + rate * 0.25 = 8 grants.
    assert _max_in_window(grants, 0.25) <= 8
    assert max(grants) - min(grants) >= (18 - 3) / 20 - 1e-6


def test_separate_limiters_would_not_bound_the_total():
    """Control for the test above: per-thread limiters let every thread burst at once."""
    grants = _grants_from_threads(lambda i: RateLimiter(THREADED), threads=6, each=3)
    assert _max_in_window(grants, 0.25) > 8


def test_same_model_and_endpoint_share_a_process_wide_limiter():
    limits = RateLimits(requests_per_minute=100)
    assert shared_limiter("openai/m@http://x", limits) is shared_limiter("openai/m@http://x", limits)
    assert shared_limiter("openai/m@http://x", limits) is not shared_limiter("openai/m@http://y", limits)
    assert shared_limiter("openai/m@http://x", RateLimits(None, None)) is None
    assert shared_limiter("openai/m@http://x", None) is None


def test_models_share_the_limiter(fake_openai, openai_model):
    limits = RateLimits(requests_per_minute=1234)
    first, second = openai_model(rate_limits=limits), openai_model(rate_limits=limits)
    assert first._limiter is second._limiter is not None


def test_token_estimate():
    assert estimate_tokens(400, 50) == 151
    assert estimate_tokens(0, None) == 1
