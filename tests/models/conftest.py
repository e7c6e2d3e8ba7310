"""Model clients wired to the fake servers, with fast retries and no rate limiting."""

from collections.abc import Callable
from typing import Any

import pytest

from verdict.models.anthropic_model import AnthropicModel
from verdict.models.openai_model import OpenAIModel
from verdict.models.ratelimit import RateLimits
from verdict.models.retry import RetryPolicy

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05)
NO_LIMITS = RateLimits(None, None)


@pytest.fixture(autouse=True)
def _forget_learnt_capabilities():
    """What a client learnt from one test's scripted refusals must not leak into the next test."""
    from verdict.models import openai_model as module

    yield
    module._learned.clear()
    module._probed.clear()


@pytest.fixture
def openai_model(fake_openai) -> Callable[..., OpenAIModel]:
    def make(model: str = "gpt-4o-mini", **options: Any) -> OpenAIModel:
        options = {"base_url": fake_openai.base_url, "api_key": "sk-test-key", "retry": FAST_RETRY,
                   "rate_limits": NO_LIMITS, **options}
        return OpenAIModel(model, **options)

    return make


@pytest.fixture
def anthropic_model(fake_anthropic) -> Callable[..., AnthropicModel]:
    def make(model: str = "claude-haiku-4-5", **options: Any) -> AnthropicModel:
        options = {"base_url": fake_anthropic.base_url, "api_key": "sk-ant-test-key", "retry": FAST_RETRY,
                   "rate_limits": NO_LIMITS, **options}
        return AnthropicModel(model, **options)

    return make


@pytest.fixture(params=["openai", "anthropic"])
def provider(request, fake_openai, fake_anthropic, openai_model, anthropic_model):
    """(fake server, model factory) for each provider, for behaviour both clients share."""
    if request.param == "openai":
        return fake_openai, openai_model
    return fake_anthropic, anthropic_model
