"""The harness's fake server answers Ollama's native chat API (what the recorded ollama senders were run
against): a real HTTP request over loopback, the scripted reply and usage in Ollama's field names."""

from __future__ import annotations

import json
import urllib.request

from tests.peers.fake_ollama import FakeOpenAIAndOllama
from verdict_demo.fake_llm import Reply


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_ollama_chat_is_answered_in_ollamas_format():
    with FakeOpenAIAndOllama() as server:
        server.handler = lambda request: Reply("Refunded within five days.", usage=(23, 11))
        reply = _post(f"{server.url}/api/chat", {
            "model": "llama3.2", "stream": False, "messages": [{"role": "user", "content": "Refund?"}]})
        assert server.requests_to("/api/chat")[0].body["model"] == "llama3.2"
        openai = _post(f"{server.base_url}/chat/completions", {
            "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Refund?"}]})
    assert (reply["model"], reply["message"], reply["done"]) == (
        "llama3.2", {"role": "assistant", "content": "Refunded within five days."}, True)
    assert (reply["prompt_eval_count"], reply["eval_count"]) == (23, 11)
    assert openai["usage"]["prompt_tokens"] == 23  # still the OpenAI server too
