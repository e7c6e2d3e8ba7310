"""The fake OpenAI server, also answering Ollama's native chat API (`POST /api/chat`, not streamed) with the same
scripted replies, so the `ollama` Python client's senders run against the harness's one OpenAI-style server."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.responses import Response

from verdict_demo.fake_llm import FakeOpenAI, RecordedRequest, Reply
from verdict_demo.fake_llm.behaviours import render
from verdict_demo.fake_llm.server import Endpoint, json_response, prompt_text


class FakeOpenAIAndOllama(FakeOpenAI):
    """OpenAI's wire format (FakeOpenAI) plus Ollama's `/api/chat`: usage as `prompt_eval_count`/`eval_count`."""

    def endpoints(self) -> dict[str, Endpoint]:
        return {**super().endpoints(), "/api/chat": self._ollama_chat}

    def _ollama_chat(self, request: RecordedRequest, reply: Reply) -> Response:
        body = request.body
        rendered = render(reply, body, None, prompt_text(body.get("messages")))
        return json_response({
            "model": rendered.model, "created_at": datetime.now(UTC).isoformat(),
            "message": {"role": "assistant", "content": rendered.text}, "done": True, "done_reason": "stop",
            "total_duration": 1_000_000, "load_duration": 0, "prompt_eval_count": rendered.input_tokens,
            "prompt_eval_duration": 500_000, "eval_count": rendered.output_tokens, "eval_duration": 500_000,
        }, reply, {})
