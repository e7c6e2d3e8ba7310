"""The fake Gemini API the Gemini senders are recorded against (tests/peers/harness.py): the wire shapes
google-genai reads — candidates with the `model` role, usage metadata, SSE chunks with the finish reason and
usage on the last — and its errors. (The real client is in the record-only side venv, so plain HTTP here.)"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from verdict_demo.fake_llm import FakeGemini, Reply

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
