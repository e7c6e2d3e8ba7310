"""The judge client's timeout is a deadline and its replies have a size limit (limits.py): both real SDKs
against the fake servers over loopback; each failure is one clear ModelError stating the requests sent."""

from __future__ import annotations

import pytest

from tests.fakes import Fail, Reply
from verdict.models.base import Message, ModelError, ModelRequest
from verdict.models.limits import DEFAULT_MAX_REPLY_BYTES
from verdict.models.options import split_model_string
from verdict.models.retry import RetryPolicy

REQUEST = ModelRequest(messages=(Message("user", "Rate this answer."),))
ONCE = RetryPolicy(max_attempts=1)


def test_a_dripping_reply_ends_at_the_deadline(provider):
    # 0.05 s per byte: the per-read timeout (0.5 s) never trips, the whole reply would take 20 s or more.
    server, make = provider
    server.handler = lambda request: Reply("a reply that takes its time " * 4, drip=0.05)
    with pytest.raises(ModelError) as caught:
        make(timeout=0.5, retry=ONCE).complete(REQUEST)
    assert caught.value.kind == "timeout" and caught.value.requests == 1
    assert "(1 request sent)" in caught.value.message


def test_a_reply_past_the_size_limit_is_refused_before_it_is_read(provider):
    server, make = provider
    server.handler = lambda request: Reply("word " * 2_000)  # 5 kB or more, with a content-length
    with pytest.raises(ModelError) as caught:
        make(max_reply_bytes=2_000).complete(REQUEST)
    error = caught.value
    assert error.kind == "too_large" and not error.retryable
    assert "2000 bytes" in error.message and server.request_count == 1  # the same reply again: not retried


def test_a_streamed_reply_past_the_size_limit_is_refused(provider):
    # Chunked, no content-length: the limit is checked as the body arrives.
    server, make = provider
    server.handler = lambda request: Reply("word " * 400, drip=0.0001)
    with pytest.raises(ModelError) as caught:
        make(max_reply_bytes=500).complete(REQUEST)
    assert caught.value.kind == "too_large" and server.request_count == 1


def test_a_reply_within_the_limits_is_read(provider):
    server, make = provider
    server.handler = lambda request: Reply("fine", drip=0.001)
    assert make(timeout=5.0, max_reply_bytes=DEFAULT_MAX_REPLY_BYTES).complete(REQUEST).text == "fine"


def test_the_error_states_the_real_number_of_requests(provider):
    server, make = provider
    server.handler = lambda request: Fail(503, "loading model")
    with pytest.raises(ModelError) as caught:
        make(retry=RetryPolicy(max_attempts=3, base_delay=0)).complete(REQUEST)
    assert server.request_count == 3 and caught.value.requests == 3
    assert caught.value.message.endswith("(3 requests sent)")


def test_a_negotiation_repeat_is_counted(fake_openai, openai_model):
    fake_openai.enqueue(Fail(400, "unsupported parameter: seed"), Fail(503, "down"))
    with pytest.raises(ModelError) as caught:
        openai_model(retry=ONCE).complete(ModelRequest(REQUEST.messages, params={"seed": 1}))
    assert fake_openai.request_count == 2 and caught.value.requests == 2


def test_max_reply_bytes_is_a_model_string_option():
    assert split_model_string("openai/m?max_reply_bytes=4096&timeout=30") == (
        "openai/m", {"max_reply_bytes": 4096, "timeout": 30.0})
