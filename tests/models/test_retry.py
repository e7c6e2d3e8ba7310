"""Backoff math, Retry-After parsing and the retry loop, with injected sleep and random source."""

from __future__ import annotations

import email.utils
import random
import time

import pytest

from verdict.models.base import ModelError
from verdict.models.retry import RetryPolicy, call_with_retries, parse_retry_after


def test_full_jitter_stays_within_the_exponential_bound():
    policy = RetryPolicy(max_attempts=10, base_delay=0.5, max_delay=3.0)
    rng = random.Random(1)
    for retry, bound in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (6, 3.0)]:
        delays = [policy.delay(retry, None, rng) for _ in range(200)]
        waits = [w for w in delays if w is not None]
        assert len(waits) == len(delays)
        assert all(0 <= w <= bound for w in waits)
        assert max(waits) > 0.8 * bound  # the jitter really spreads over the range


def test_retry_after_is_a_floor_and_a_cap():
    policy = RetryPolicy(max_attempts=3, base_delay=0.1, max_retry_after=30)
    rng = random.Random(0)
    assert policy.delay(1, 7.0, rng) == 7.0
    assert policy.delay(1, 31.0, rng) is None
    assert policy.delay(3, None, rng) is None  # the third failure of three attempts is final


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"retry-after": "12"}, 12.0),
    ({"retry-after": "1.5"}, 1.5),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
    ({"retry-after": "soon"}, None),
    ({}, None),
])
def test_parse_retry_after(headers, seconds):
    assert parse_retry_after(headers) == seconds


def test_parse_retry_after_http_date():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": when}) or 0) <= 31


def test_loop_retries_retryable_errors_and_reports_retry_after():
    sleeps: list[float] = []
    pauses: list[float] = []
    outcomes = [ModelError("rate_limited", "429", retryable=True, retry_after=2.0),
                ModelError("server_error", "500", retryable=True), "done"]

    def attempt():
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    result = call_with_retries(attempt, RetryPolicy(max_attempts=3, base_delay=0.1), sleep=sleeps.append,
                               on_retry_after=pauses.append, rng=random.Random(3))
    assert result == "done"
    assert sleeps[0] == 2.0 and 0 <= sleeps[1] <= 0.2
    assert pauses == [2.0]


def test_loop_gives_up_with_attempt_count_and_keeps_kind():
    calls = []

    def attempt():
        calls.append(1)
        raise ModelError("timeout", "openai/x did not answer", retryable=True)

    with pytest.raises(ModelError) as caught:
        call_with_retries(attempt, RetryPolicy(max_attempts=4, base_delay=0), sleep=lambda s: None)
    assert (caught.value.kind, len(calls)) == ("timeout", 4)
    assert caught.value.message == "openai/x did not answer"  # the client adds the requests it sent


def test_non_retryable_error_is_raised_unchanged():
    error = ModelError("auth", "HTTP 401 from openai/x")

    def attempt():
        raise error

    with pytest.raises(ModelError) as caught:
        call_with_retries(attempt, RetryPolicy(), sleep=lambda s: pytest.fail("must not sleep"))
    assert caught.value is error


def test_policy_validation():
    with pytest.raises(ValueError, match="max_attempts must be >= 1"):
        RetryPolicy(max_attempts=0)
