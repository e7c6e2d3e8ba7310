"""Issue 25's senders as pure mapper cases, beside their recorded fixtures (tests/fixtures/dialects/mlflow,
logfire-stream, litellm-otel, replayed by test_peer_fixtures.py): the shapes the recordings do not show."""

from __future__ import annotations

import json

import pytest

from collector.dialects import normalise

QUESTION, ANSWER = "Why was I charged twice?", "A pending authorisation."
_REQUEST = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]),
            "logfire.msg_template": "Chat Completion with {request_data[model]!r}", "logfire.span_type": "span"}
_ANSWERED = {"gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text",
                                                                                    "content": ANSWER}]}]),
             "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 5}


@pytest.mark.parametrize(("extra", "operation"), [
    ({}, "stream_request"),  # semconv v2: the request alone, the answer follows in the `streaming response` log
    ({"request_data": json.dumps({"model": "gpt-4o-mini", "stream": True, "messages": []})}, "stream_request"),
    (_ANSWERED, "chat"),  # a plain call: the request span got the response
    ({"logfire.level_num": 17}, "chat"),  # a call that failed: an error row, not half of a stream
    ({"logfire.span_type": "log", **_ANSWERED}, "chat"),  # the `streaming response` log span is the call
])
def test_logfire_request_span_of_a_streamed_call_is_part_of_the_call(extra, operation):
    dialect, call = normalise("logfire.openai", "Chat Completion with 'gpt-4o-mini'", {**_REQUEST, **extra}, {}, [])
    assert dialect == "pydantic_ai" and call.operation == operation


def test_a_span_outside_logfires_llm_integrations_is_never_a_stream_request():
    dialect, call = normalise("pydantic-ai", "chat gpt-4o-mini", dict(_REQUEST), {}, [])
    assert dialect == "pydantic_ai" and call.operation == "chat"


def _mlflow(span_type: str, **attrs) -> dict:
    return {"mlflow.spanType": json.dumps(span_type), **{k: json.dumps(v) for k, v in attrs.items()}}


@pytest.mark.parametrize(("span_type", "operation"), [
    ("CHAIN", None), ("RETRIEVER", None), ("AGENT", "invoke_agent"), ("TOOL", "execute_tool"),
    ("UNKNOWN", None)])
def test_mlflow_steps_are_no_call(span_type, operation):
    dialect, call = normalise("mlflow.tracing.provider", "step", _mlflow(span_type, **{
        "mlflow.spanInputs": {"messages": [{"role": "user", "content": QUESTION}]}}), {}, [])
    assert dialect == "mlflow" and call.operation == operation and call.input_messages is None


def test_mlflow_responses_api_call_and_mlflow2_conversation():
    _, responses = normalise("mlflow.tracing.provider", "Responses", _mlflow(
        "CHAT_MODEL", **{"mlflow.message.format": "openai",
                         "mlflow.spanInputs": {"model": "gpt-4o-mini", "instructions": "Be brief.", "input": QUESTION},
                         "mlflow.spanOutputs": {"id": "resp_1", "output": [
                             {"type": "reasoning", "summary": []},
                             {"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                                   "text": ANSWER}]}]}}), {}, [])
    assert (responses.operation, responses.provider, responses.request_model, responses.response_id) == (
        "chat", "openai", "gpt-4o-mini", "resp_1")
    assert responses.input_messages == [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    assert responses.system_instructions == [{"type": "text", "content": "Be brief."}]
    assert isinstance(responses.output_messages, list)
    assert [m["role"] for m in responses.output_messages] == ["assistant"]
    assert json.dumps(responses.output_messages).count(ANSWER) == 1

    _, legacy = normalise("mlflow.tracing.provider", "ChatModel", _mlflow(
        "CHAT_MODEL", **{"mlflow.message.format": "langchain", "mlflow.chat.messages": [
            {"role": "user", "content": QUESTION}, {"role": "assistant", "content": ANSWER}]}), {}, [])
    assert legacy.provider is None  # a framework's message format names no provider
    assert legacy.input_messages == [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    assert legacy.output_messages == [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]


def test_litellm_raw_request_span_is_no_call_and_the_given_name_is_split():
    dialect, raw = normalise("litellm", "raw_gen_ai_request", {
        "llm.openai.messages": json.dumps([{"role": "user", "content": QUESTION}])}, {}, [])
    assert dialect == "litellm" and raw.operation is None
    _, call = normalise("litellm", "litellm_request", {"gen_ai.operation.name": "chat",
                                                       "litellm.provider.model": "groq/llama-3.1-8b-instant"}, {}, [])
    assert (call.provider, call.request_model) == ("groq", "llama-3.1-8b-instant")
