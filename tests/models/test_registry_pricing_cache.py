"""resolve_model forms and errors, the price table, and the on-disk cache under concurrency."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from verdict.models.anthropic_model import AnthropicModel
from verdict.models.base import Message, ModelRequest, ModelResponse, TokenLogprob, Usage
from verdict.models.cache import ResponseCache, request_key
from verdict.models.openai_model import OpenAIModel
from verdict.models.pricing import Price, PriceTable
from verdict.models.registry import resolve_model

REQUEST = ModelRequest((Message("user", "hi"),), params={"temperature": 0}, top_logprobs=3)


@pytest.mark.parametrize("spec", ["llama3", "google/gemini-pro", "openai/", "openai/  ", "", "/gpt-4o"])
def test_unknown_forms_name_the_accepted_ones(spec):
    with pytest.raises(ValueError) as caught:
        resolve_model(spec)
    message = str(caught.value)
    assert repr(spec) in message and '"openai/<model>"' in message and '"anthropic/<model>"' in message


def test_non_string_spec_is_rejected():
    with pytest.raises(ValueError, match="got int"):
        resolve_model(42)  # type: ignore[arg-type]


def test_missing_key_is_a_clear_error(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="set the OPENAI_API_KEY environment variable or pass api_key"):
        resolve_model("openai/gpt-4o-mini", timeout=5)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        resolve_model("anthropic/claude-haiku-4-5", timeout=5)


def test_strings_resolve_to_shared_clients(monkeypatch, fake_openai, fake_anthropic):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    model = resolve_model("openai/meta-llama/Llama-3.1-8B-Instruct")
    assert isinstance(model, OpenAIModel) and model.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert resolve_model("openai/meta-llama/Llama-3.1-8B-Instruct") is model
    assert resolve_model(model) is model
    assert model.complete(REQUEST).text == "fake reply"
    assert fake_openai.last_request.body["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    claude = resolve_model("anthropic/claude-sonnet-4-5", timeout=10)
    assert isinstance(claude, AnthropicModel) and claude.timeout == 10
    with pytest.raises(ValueError, match="options apply to model strings only"):
        resolve_model(model, timeout=3)


def test_price_lookup_exact_then_longest_prefix_and_overrides():
    table = PriceTable.default()
    assert table.price("gpt-4o-mini-2024-07-18") == table.price("gpt-4o-mini") != table.price("gpt-4o")
    assert table.price("claude-sonnet-4-5-20250929") == Price(3.0, 15.0)
    assert table.price("llama3") is None and table.cost("llama3", 10**6, 10**6) == 0.0
    custom = table.with_prices({"gpt-4o": (1.0, 2.0), "llama3": Price(0.1, 0.1)})
    assert custom.cost("gpt-4o-2024-08-06", 1_000_000, 500_000) == pytest.approx(2.0)
    assert custom.cost("llama3", 10**6, 0) == pytest.approx(0.1)
    assert table.price("gpt-4o") == Price(2.5, 10.0)  # the original table is untouched
    with pytest.raises(ValueError, match="prices must be >= 0"):
        Price(-1, 0)


def test_cache_key_covers_model_messages_params_schema_logprobs():
    base = request_key("openai/m", REQUEST)
    variants = [
        request_key("openai/other", REQUEST),
        request_key("openai/m", ModelRequest((Message("user", "hi!"),), REQUEST.params, None, 3)),
        request_key("openai/m", ModelRequest(REQUEST.messages, {"temperature": 1}, None, 3)),
        request_key("openai/m", ModelRequest(REQUEST.messages, REQUEST.params, {"type": "object"}, 3)),
        request_key("openai/m", ModelRequest(REQUEST.messages, REQUEST.params, None, 5)),
    ]
    assert len({base, *variants}) == 6
    reordered = ModelRequest(REQUEST.messages, dict(reversed(list({"a": 1, "b": 2}.items()))), None, 3)
    assert request_key("openai/m", reordered) == request_key(
        "openai/m", ModelRequest(REQUEST.messages, {"a": 1, "b": 2}, None, 3))


def test_cache_round_trip_and_corrupt_entries(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    response = ModelResponse("4", "m", "stop", (TokenLogprob("4", -0.1, (("4", -0.1), ("5", -2.0))),),
                             Usage(10, 1, 0.5))
    key = request_key("openai/m", REQUEST)
    assert cache.get(key) is None
    cache.put(key, response)
    hit = cache.get(key)
    assert hit == ModelResponse("4", "m", "stop", response.logprobs, Usage(10, 1, 0.0), cached=True)
    path = next((tmp_path / "cache").rglob(f"{key}.json"))
    path.write_text('{"text": ')  # a torn or foreign file is a miss, not a crash
    assert cache.get(key) is None


def test_cache_concurrent_writers_never_expose_partial_entries(tmp_path):
    cache = ResponseCache(tmp_path)
    keys = [request_key("openai/m", ModelRequest((Message("user", str(i % 5)),))) for i in range(200)]

    def write_and_read(index: int) -> ModelResponse | None:
        key = keys[index]
        cache.put(key, ModelResponse("x" * 5000 + str(index % 5), "m"))
        return cache.get(key)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(write_and_read, range(200)))
    assert all(r is not None and r.text == "x" * 5000 + str(i % 5) for i, r in enumerate(results))
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 5 and not list(tmp_path.rglob(".tmp-*"))
    assert all(json.loads(f.read_text())["model"] == "m" for f in files)
