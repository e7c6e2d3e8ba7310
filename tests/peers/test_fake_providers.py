"""The fake Gemini API and Bedrock runtime the Gemini and Bedrock senders are recorded against
(tests/peers/harness.py): the wire shapes google-genai and boto3 read — Gemini candidates with the `model`
role, usage metadata, SSE chunks with the finish reason and usage on the last; Bedrock's Converse answer and an
Anthropic model's InvokeModel body — and their errors; and the scenario every fake provider plays (a later
conversation turn, the tool scenarios). (The real clients are in record-only side venvs, so plain HTTP here.)"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.peers.fake_bedrock import FakeBedrock
from tests.peers.fake_gemini import FakeGemini
from verdict_demo.fake_llm import Fail, Reply

BODY = {"systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [{"role": "user", "parts": [{"text": "Why was I charged twice?"}]}]}


def post(url: str, body: dict) -> tuple[int, str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def gemini():
    with FakeGemini() as server:
        server.default = Reply("A pending authorisation.", usage=(12, 3))
        yield server


@pytest.mark.parametrize("version", ["v1", "v1beta"])
def test_generate_content_answers_as_the_model_with_usage(gemini, version):
    status, text = post(f"{gemini.url}/{version}/models/gemini-2.0-flash:generateContent", BODY)
    answer = json.loads(text)
    assert status == 200
    (candidate,) = answer["candidates"]
    assert candidate["content"] == {"role": "model", "parts": [{"text": "A pending authorisation."}]}
    assert candidate["finishReason"] == "STOP" and answer["modelVersion"] == "gemini-2.0-flash"
    assert answer["usageMetadata"] == {"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15}
    assert gemini.last_request.body["contents"][0]["parts"][0]["text"] == "Why was I charged twice?"


def test_a_stream_sends_one_chunk_per_token_and_usage_on_the_last(gemini):
    status, text = post(f"{gemini.url}/v1/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
                        {**BODY, "generationConfig": {"maxOutputTokens": 2}})
    chunks = [json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: ")]
    assert status == 200 and len(chunks) == 2  # cut at maxOutputTokens
    assert "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks) == "A pending "
    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None, "MAX_TOKENS"]
    assert "usageMetadata" not in chunks[0] and chunks[1]["usageMetadata"]["candidatesTokenCount"] == 3


def test_an_unknown_method_is_a_gemini_error(gemini):
    status, text = post(f"{gemini.url}/v1/models/gemini-2.0-flash:embedContent", BODY)
    assert status == 404 and json.loads(text)["error"]["status"] == "NOT_FOUND"


MODEL_ID = "anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.fixture
def bedrock():
    with FakeBedrock() as server:
        server.default = Reply("A pending authorisation.", usage=(12, 3))
        yield server


def test_converse_answers_with_bedrock_usage(bedrock):
    status, text = post(f"{bedrock.url}/model/{MODEL_ID}/converse",
                        {"system": [{"text": "Be brief."}], "messages": [{"role": "user", "content": [{"text": "Why?"}]}]})
    answer = json.loads(text)
    assert status == 200 and answer["stopReason"] == "end_turn"
    assert answer["output"]["message"] == {"role": "assistant", "content": [{"text": "A pending authorisation."}]}
    assert answer["usage"] == {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15}


def test_invoke_model_answers_an_anthropic_body_as_anthropic_does(bedrock):
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 2,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Why?"}]}]}
    status, text = post(f"{bedrock.url}/model/{MODEL_ID}/invoke", body)
    answer = json.loads(text)
    assert status == 200 and answer["model"] == MODEL_ID and answer["stop_reason"] == "max_tokens"
    assert answer["content"] == [{"type": "text", "text": "A pending "}]
    assert answer["usage"] == {"input_tokens": 12, "output_tokens": 3}


def test_a_bedrock_error_names_its_type_in_the_header(bedrock):
    bedrock.enqueue(Fail(429, "Too many requests"))
    request = urllib.request.Request(f"{bedrock.url}/model/{MODEL_ID}/converse", data=b'{"messages": []}',
                                     headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as failed:
        urllib.request.urlopen(request, timeout=10)
    assert failed.value.code == 429 and failed.value.headers["x-amzn-errortype"] == "ThrottlingException"


def test_the_scenario_answers_the_question_a_request_carries_last_and_asks_for_each_offered_tool_in_turn():
    """The harness's fake provider (`tests/peers/harness._reply`, over HTTP as the senders reach it): a later turn
    of a conversation carries the earlier question and answer, and is answered for its own question; an agent
    offered both scenario tools gets a call of `lookup_charge`, once its result is in one of `refund_charge`, once
    both are in the answer; a request offering only the first tool is answered after its result, as before."""
    from tests.peers.harness import _peer, fake_providers

    system = {"role": "system", "content": _peer.SYSTEM}
    first, second = ({"role": "user", "content": q} for q in _peer.QUESTIONS)
    tools = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
             for name in (_peer.TOOL, _peer.REFUND_TOOL)]

    def result(name: str, content: str) -> list[dict]:
        return [{"role": "assistant", "tool_calls": [{"id": name, "type": "function",
                                                      "function": {"name": name, "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": name, "content": content}]

    with fake_providers() as (openai_server, _):
        def ask(messages: list[dict], offered: list[dict]) -> dict:
            status, text = post(f"{openai_server.base_url}/chat/completions",
                                {"model": _peer.MODEL, "messages": messages, **({"tools": offered} if offered else {})})
            assert status == 200, text
            message = json.loads(text)["choices"][0]["message"]
            return {"usage": json.loads(text)["usage"]["prompt_tokens"], "content": message.get("content"),
                    "tools": [c["function"]["name"] for c in message.get("tool_calls") or []]}

        later_turn = [system, first, {"role": "assistant", "content": _peer.ANSWERS[0]}, second]
        assert ask(later_turn, [])["content"] == _peer.ANSWERS[1]
        assert ask([system, first], [])["content"] == _peer.ANSWERS[0]
        looked_up = [system, second, *result(_peer.TOOL, _peer.TOOL_RESULT)]
        assert ask([system, second], tools) == {"usage": 29, "content": None, "tools": [_peer.TOOL]}
        assert ask(looked_up, tools) == {"usage": 33, "content": None, "tools": [_peer.REFUND_TOOL]}
        assert ask([*looked_up, *result(_peer.REFUND_TOOL, _peer.REFUND_RESULT)], tools)["content"] == _peer.ANSWERS[1]
        assert ask(looked_up, tools[:1])["content"] == _peer.ANSWERS[1]
