"""OpenAIModel through the real `openai` client against the fake OpenAI-compatible server."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes import Reply, TokenLogprob
from verdict.models.base import Message, ModelRequest, Usage
from verdict.models.openai_model import strict_compatible

MESSAGES = (Message("system", "You are a strict grader."), Message("user", "Score: 2+2=4"))
STRICT_SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"],
                 "additionalProperties": False}
PYDANTIC_SCHEMA = {"type": "object", "title": "Out", "properties": {"score": {"type": "integer"},
                   "note": {"type": "string", "default": ""}}, "required": ["score"]}


def test_plain_completion_maps_reply_and_sends_params(fake_openai, openai_model):
    fake_openai.enqueue(Reply("The answer is right.", usage=(21, 5), model="gpt-4o-mini-2024-07-18"))
    model = openai_model()
    response = model.complete(ModelRequest(MESSAGES, params={"temperature": 0.0, "seed": 7, "max_tokens": 50}))
    assert (response.text, response.finish_reason, response.truncated) == ("The answer is right.", "stop", False)
    assert response.model == "gpt-4o-mini-2024-07-18"
    assert response.usage == Usage(21, 5, pytest.approx((21 * 0.15 + 5 * 0.60) / 1e6), requests=1)  # type: ignore[arg-type]  # approx equals the float cost
    assert response.logprobs is None and response.cached is False
    body = fake_openai.last_request.body
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == [{"role": "system", "content": "You are a strict grader."},
                                {"role": "user", "content": "Score: 2+2=4"}]
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 7, 50)
    assert "response_format" not in body and "logprobs" not in body
    assert model.name == "openai/gpt-4o-mini" and model.supports_json_schema and model.supports_logprobs


def test_server_specific_params_go_in_the_body(fake_openai, openai_model):
    openai_model().complete(ModelRequest(MESSAGES, params={"top_k": 5, "repetition_penalty": 1.1}))
    body = fake_openai.last_request.body
    assert (body["top_k"], body["repetition_penalty"]) == (5, 1.1)


@pytest.mark.parametrize(("schema", "strict"), [(STRICT_SCHEMA, True), (PYDANTIC_SCHEMA, False)])
def test_json_schema_uses_response_format(fake_openai, openai_model, schema, strict):
    fake_openai.enqueue(Reply('{"score": 4}'))
    response = openai_model().complete(ModelRequest(MESSAGES, json_schema=schema))
    assert response.text == '{"score": 4}'
    fmt = fake_openai.last_request.body["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "response", "schema": schema, "strict": strict}}


def test_strict_compatibility_looks_into_nested_objects():
    nested: dict[str, Any] = {**STRICT_SCHEMA, "properties": {"inner": {"type": "object", "properties": {"a": {"type": "string"}}}},
              "required": ["inner"]}
    assert not strict_compatible(nested)
    closed = {**nested, "properties": {"inner": {**nested["properties"]["inner"], "required": ["a"],
                                                  "additionalProperties": False}}}
    assert strict_compatible(closed)


def test_logprobs_are_mapped_with_alternatives(fake_openai, openai_model):
    scripted = [TokenLogprob("4", -0.3, (("4", -0.3), ("5", -1.5), ("3", -2.5))),
                TokenLogprob(".", -0.01, ((".", -0.01), ("!", -4.6), ("?", -5.0)))]
    fake_openai.enqueue(Reply(logprobs=scripted))
    response = openai_model().complete(ModelRequest(MESSAGES, top_logprobs=2))
    assert response.text == "4."
    assert response.logprobs == (TokenLogprob("4", -0.3, (("4", -0.3), ("5", -1.5))),
                                 TokenLogprob(".", -0.01, ((".", -0.01), ("!", -4.6))))
    body = fake_openai.last_request.body
    assert (body["logprobs"], body["top_logprobs"]) == (True, 2)


def test_logprobs_without_alternatives_and_capped_request(fake_openai, openai_model):
    model = openai_model()
    response = model.complete(ModelRequest(MESSAGES, top_logprobs=0))
    assert [lp.token for lp in response.logprobs] == ["fake ", "reply"]
    assert "top_logprobs" not in fake_openai.last_request.body
    model.complete(ModelRequest(MESSAGES, top_logprobs=50))
    assert fake_openai.last_request.body["top_logprobs"] == 20


def test_truncation_is_visible(fake_openai, openai_model):
    fake_openai.enqueue(Reply("one two three four five"))
    response = openai_model().complete(ModelRequest(MESSAGES, params={"max_completion_tokens": 2}))
    assert (response.text, response.finish_reason, response.truncated) == ("one two ", "length", True)


def test_local_server_needs_no_key(fake_openai, monkeypatch):
    from verdict.models.openai_model import OpenAIModel

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = OpenAIModel("llama3", base_url=fake_openai.base_url)
    assert model.complete(ModelRequest(MESSAGES)).text == "fake reply"
