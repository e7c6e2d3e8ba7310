"""Retries, Retry-After, timeouts, error kinds, cache and cost: both real SDKs against the fakes."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.fakes import Fail, Malformed, Reply
from verdict.models.base import Message, ModelError, ModelRequest, Usage
from verdict.models.cache import ResponseCache
from verdict.models.pricing import Price
from verdict.models.ratelimit import RateLimits
from verdict.models.retry import RetryPolicy

REQUEST = ModelRequest(messages=(Message("user", "Rate this answer."),))


def test_429_waits_at_least_retry_after(provider):
    server, make = provider
    server.enqueue(Fail(429, retry_after=0.3), Reply("ok now"))
    response = make(retry=RetryPolicy(max_attempts=2, base_delay=0.0)).complete(REQUEST)
    assert response.text == "ok now"
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.3


def test_retry_after_ms_header_is_honoured(fake_openai, openai_model):
    fake_openai.enqueue(Fail(429, headers={"retry-after-ms": "250"}), Reply("fine"))
    assert openai_model(retry=RetryPolicy(max_attempts=2, base_delay=0.0)).complete(REQUEST).text == "fine"
    first, second = fake_openai.requests
    assert second.received_at - first.received_at >= 0.25


@pytest.mark.parametrize("status", [500, 503, 529])
def test_server_error_then_success(provider, status):
    server, make = provider
    server.enqueue(Fail(status), Reply("recovered"))
    assert make().complete(REQUEST).text == "recovered"
    assert server.request_count == 2


LEAKED = "sk-proj-LeakedKey0123456789abcdefghijklmnop"


@pytest.mark.parametrize(("fail", "kind", "attempts"), [
    # The same 500 twice is a deterministic refusal, not an outage: not retried further.
    (Fail(500, message=f"internal detail {LEAKED}"), "refused", 2),
    (Fail(429, retry_after=0.01), "rate_limited", 3),
    (Fail(401, message=f"bad key {LEAKED}"), "auth", 1),
    (Fail(400, message="bad param"), "bad_request", 1),
    (Fail(500, headers={"x-should-retry": "false"}), "server_error", 1),
])
def test_final_error_kind_and_redacted_provider_text(provider, fail, kind, attempts):
    server, make = provider
    server.handler = lambda request: fail
    with pytest.raises(ModelError) as caught:
        make(api_key="sk-my-secret-key").complete(REQUEST)
    error = caught.value
    assert error.kind == kind
    assert server.request_count == attempts
    text = str(error)
    assert LEAKED not in text and "sk-my-secret-key" not in text
    # The server's reason is kept (redacted, bounded): it is what tells an operator what to fix.
    assert fail.message.replace(LEAKED, "<API_KEY>") in text
    assert f"HTTP {fail.status}" in text
    assert error.__cause__ is None and error.__suppress_context__
    if kind == "rate_limited":
        assert f"({attempts} requests sent)" in text


def test_server_text_is_bounded(fake_openai, openai_model):
    fake_openai.handler = lambda request: Fail(400, "x" * 5000)
    with pytest.raises(ModelError) as caught:
        openai_model().complete(REQUEST)
    assert len(caught.value.message) < 400 and caught.value.message.endswith("... (1 request sent)")


@pytest.mark.parametrize(("error_type", "shown"), [("rate_limit_exceeded", True), ("sk-ant-api03-Secret", False),
                                                  ("see https://example.com/help", False)])
def test_error_message_carries_only_an_identifier_like_code(provider, error_type, shown):
    server, make = provider
    server.enqueue(Fail(400, error_type=error_type))
    with pytest.raises(ModelError) as caught:
        make().complete(REQUEST)
    assert (error_type in str(caught.value)) is shown


def test_retry_after_beyond_the_cap_fails_at_once(provider):
    server, make = provider
    server.handler = lambda request: Fail(429, retry_after=3600)
    with pytest.raises(ModelError) as caught:
        make().complete(REQUEST)
    assert (caught.value.kind, caught.value.retry_after, server.request_count) == ("rate_limited", 3600.0, 1)


@pytest.mark.parametrize(("body", "content_type"), [
    (b'{"id": "x", "choices": [', "application/json"),
    (b"<html>proxy error</html>", "application/json"),
    (b"<html>proxy error</html>", "text/html"),
    (b'{"unexpected": true}', "application/json"),
])
def test_malformed_body_is_malformed_reply(provider, body, content_type):
    server, make = provider
    server.handler = lambda request: Malformed(body, content_type=content_type)
    with pytest.raises(ModelError) as caught:
        make(retry=RetryPolicy(max_attempts=2, base_delay=0.0)).complete(REQUEST)
    assert caught.value.kind == "malformed_reply"
    assert server.request_count == 2


def test_malformed_then_good_reply_is_retried(provider):
    server, make = provider
    server.enqueue(Malformed(), Reply("good"))
    assert make().complete(REQUEST).text == "good"


def test_slow_reply_times_out(provider):
    server, make = provider
    server.handler = lambda request: Reply(latency=1.0)
    with pytest.raises(ModelError) as caught:
        make(timeout=0.2, retry=RetryPolicy(max_attempts=2, base_delay=0.0)).complete(REQUEST)
    assert caught.value.kind == "timeout"
    assert server.request_count == 2


def test_slow_reply_within_the_timeout_succeeds(provider):
    server, make = provider
    server.enqueue(Reply("late but fine", latency=0.2))
    assert make(timeout=5).complete(REQUEST).text == "late but fine"


def test_unreachable_server_is_connection_error(provider):
    _, make = provider
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ModelError) as caught:
        make(base_url=f"http://127.0.0.1:{port}", retry=RetryPolicy(max_attempts=1)).complete(REQUEST)
    assert caught.value.kind == "connection"


def test_cache_hit_skips_the_server(provider, tmp_path):
    server, make = provider
    server.enqueue(Reply("first", usage=(100, 10)), Reply("second"), Reply("salted"))
    model = make(cache=ResponseCache(tmp_path), prices={make().model: Price(1.0, 1.0)})
    live = model.complete(REQUEST)
    again = make(cache=tmp_path).complete(REQUEST)  # a new client over the same directory: a rerun
    assert (live.text, live.cached, again.text, again.cached) == ("first", False, "first", True)
    assert server.request_count == 1
    assert live.usage.cost_usd > 0 and again.usage == Usage(100, 10, 0.0)
    other = ModelRequest(REQUEST.messages, params={"temperature": 0.5})
    assert model.complete(other).text == "second"
    salted = ModelRequest(REQUEST.messages, params={"cache_salt": 1})
    assert model.complete(salted).text == "salted"
    assert server.request_count == 3
    assert "cache_salt" not in server.last_request.body
    assert "cache_salt" not in str(server.last_request.body.get("extra_body", ""))


def test_cache_is_not_shared_between_endpoints_serving_one_model_name(fake_openai, openai_model, tmp_path):
    from tests.fakes import FakeOpenAI

    fake_openai.enqueue(Reply("from the first server"))
    assert openai_model(cache=tmp_path).complete(REQUEST).text == "from the first server"
    with FakeOpenAI() as other:
        other.enqueue(Reply("from the second server"))
        second = openai_model(base_url=other.base_url, cache=tmp_path).complete(REQUEST)
        assert (second.text, second.cached, other.request_count) == ("from the second server", False, 1)


def test_cost_sums_with_an_overridden_price_table(provider):
    server, make = provider
    model = make("house-model", prices={"house-model": Price(input_per_mtok=2.0, output_per_mtok=8.0)})
    server.enqueue(Reply("a", usage=(1000, 100)), Reply("b", usage=(3000, 400)))
    total = sum((model.complete(REQUEST).usage for _ in range(2)), Usage())
    assert (total.input_tokens, total.output_tokens) == (4000, 500)
    assert total.cost_usd == pytest.approx((4000 * 2.0 + 500 * 8.0) / 1e6)


def test_unpriced_model_costs_nothing(provider):
    server, make = provider
    server.enqueue(Reply("x", usage=(1000, 1000)))
    assert make("llama-local").complete(REQUEST).usage.cost_usd == 0.0


def test_many_threads_share_one_client(provider):
    server, make = provider
    server.handler = lambda request: Reply(f"echo {request.body['messages'][-1]['content']}")
    model = make()
    requests = [ModelRequest((Message("user", f"q{i}"),)) for i in range(40)]
    with ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(lambda r: model.complete(r).text, requests))
    assert texts == [f"echo q{i}" for i in range(40)]
    assert server.request_count == 40


def test_key_comes_from_the_environment(provider, monkeypatch):
    server, make = provider
    env = "OPENAI_API_KEY" if server.client_prefix else "ANTHROPIC_API_KEY"
    monkeypatch.setenv(env, "sk-from-env-42")
    make(api_key=None).complete(REQUEST)
    headers = server.last_request.headers
    assert "sk-from-env-42" in headers.get("authorization", "") + headers.get("x-api-key", "")
    assert "sk-from-env-42" not in repr(make(api_key=None))


def test_retry_after_holds_back_other_callers_of_the_model(provider):
    """A 429's Retry-After pauses the shared limiter, so a second client of the same model waits too."""
    server, make = provider
    limits = RateLimits(requests_per_minute=60_000, tokens_per_minute=None)
    first, second = make(rate_limits=limits, retry=RetryPolicy(max_attempts=2, base_delay=0.0)), make(rate_limits=limits)
    assert first._limiter is second._limiter  # one limiter per model, endpoint and limits
    server.enqueue(Fail(429, retry_after=0.5), Reply("first"), Reply("second"))
    worker = threading.Thread(target=first.complete, args=(REQUEST,))
    worker.start()
    deadline = time.monotonic() + 5
    while first._limiter._paused_until <= time.monotonic() and time.monotonic() < deadline:  # the 429 arrived
        time.sleep(0.005)
    assert second.complete(REQUEST).text in ("first", "second")
    worker.join()
    rejected, *others = server.requests
    assert len(others) == 2
    assert all(r.received_at - rejected.received_at >= 0.5 for r in others)
