"""AnthropicModel through the real `anthropic` client against the fake Messages API."""

from __future__ import annotations

import json

import pytest

from tests.fakes import Reply
from verdict.models.anthropic_model import DEFAULT_MAX_TOKENS, TOOL_NAME
from verdict.models.base import Message, ModelRequest, Usage

MESSAGES = (Message("system", "Grade strictly."), Message("system", "Answer briefly."),
            Message("user", "Is 2+2=4?"), Message("assistant", "Let me check."), Message("user", "Go on."))
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
          "required": ["score"]}


def test_plain_message_maps_reply_and_request(fake_anthropic, anthropic_model):
    fake_anthropic.enqueue(Reply("Yes, it is.", usage=(30, 4)))
    model = anthropic_model()
    response = model.complete(ModelRequest(MESSAGES, params={"temperature": 0.2, "stop": "END"}))
    assert (response.text, response.finish_reason, response.truncated) == ("Yes, it is.", "end_turn", False)
    assert response.usage == Usage(30, 4, pytest.approx((30 * 1.0 + 4 * 5.0) / 1e6), requests=1)  # type: ignore[arg-type]  # approx equals the float cost
    body = fake_anthropic.last_request.body
    assert body["system"] == "Grade strictly.\n\nAnswer briefly."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert (body["max_tokens"], body["temperature"], body["stop_sequences"]) == (DEFAULT_MAX_TOKENS, 0.2, ["END"])
    assert "tools" not in body
    assert model.name == "anthropic/claude-haiku-4-5" and not model.supports_logprobs


def test_json_schema_through_forced_tool_use(fake_anthropic, anthropic_model):
    fake_anthropic.enqueue(Reply('{"score": 5}'))
    response = anthropic_model().complete(ModelRequest(MESSAGES, json_schema=SCHEMA))
    assert json.loads(response.text) == {"score": 5}
    assert response.finish_reason == "tool_use"
    body = fake_anthropic.last_request.body
    assert body["tools"][0]["name"] == TOOL_NAME and body["tools"][0]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}


def test_non_object_schema_is_wrapped_and_unwrapped(fake_anthropic, anthropic_model):
    fake_anthropic.enqueue(Reply('{"value": ["a", "b"]}'))
    schema = {"type": "array", "items": {"type": "string"}}
    response = anthropic_model().complete(ModelRequest(MESSAGES, json_schema=schema))
    assert json.loads(response.text) == ["a", "b"]
    sent = fake_anthropic.last_request.body["tools"][0]["input_schema"]
    assert sent == {"type": "object", "properties": {"value": schema}, "required": ["value"]}


def test_model_ignoring_the_tool_returns_its_text(fake_anthropic, anthropic_model):
    fake_anthropic.enqueue(Reply("I refuse to use tools"))
    response = anthropic_model().complete(ModelRequest(MESSAGES, json_schema=SCHEMA))
    assert response.text == "I refuse to use tools"  # the extractor then rejects it and retries


def test_truncation_is_visible(fake_anthropic, anthropic_model):
    fake_anthropic.enqueue(Reply("one two three"))
    response = anthropic_model().complete(ModelRequest(MESSAGES, params={"max_tokens": 1}))
    assert (response.text, response.finish_reason, response.truncated) == ("one ", "max_tokens", True)
