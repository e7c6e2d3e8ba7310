"""Fake Gemini API (`google-genai`'s Developer API wire format): `models/{model}:generateContent` and
`:streamGenerateContent?alt=sse`, so the Gemini instrumentations can be recorded against the real client."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from starlette.responses import Response

from verdict_demo.fake_llm.behaviours import Fail, RecordedRequest, Rendered, Reply, render
from verdict_demo.fake_llm.server import (
    Endpoint,
    FakeServer,
    json_response,
    prompt_text,
    sse,
    sse_response,
)

_FINISH = {"stop": "STOP", "length": "MAX_TOKENS"}
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
_ids = itertools.count(1)


class FakeGemini(FakeServer):
    """Gemini wire format at /v1(beta)/models/{model}:{method} (the client's base_url is the bare origin)."""

    client_prefix = ""
    api_key = "fake-gemini-key"

    def endpoints(self) -> dict[str, Endpoint]:
        return {"/v1/models/{call}": self._models, "/v1beta/models/{call}": self._models}  # google-genai 3.x: v1

    def error_body(self, fail: Fail) -> dict[str, Any]:
        return {"error": {"code": fail.status, "message": fail.message,
                          "status": fail.error_type or _STATUS.get(fail.status, "UNKNOWN")}}

    def _models(self, request: RecordedRequest, reply: Reply) -> Response:
        model, _, method = request.path.rsplit("/", 1)[-1].partition(":")
        if method not in ("generateContent", "streamGenerateContent"):
            return self.error_response(Fail(404, f"method {method!r} is not served by the fake"))
        body = request.body
        config = body.get("generationConfig") or {}
        rendered = render(reply, {**body, "model": model}, config.get("maxOutputTokens"),
                          prompt_text([body.get("systemInstruction"), body.get("contents")]))
        answer = self._answer(model, rendered)
        if method == "streamGenerateContent":
            return sse_response(self._chunks(answer, rendered), reply, {})
        return json_response(answer, reply, {})

    @staticmethod
    def _answer(model: str, rendered: Rendered) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": rendered.text}]},
                                "finishReason": _FINISH.get(rendered.finish_reason, "OTHER"), "index": 0}],
                "usageMetadata": {"promptTokenCount": rendered.input_tokens,
                                  "candidatesTokenCount": rendered.output_tokens,
                                  "totalTokenCount": rendered.input_tokens + rendered.output_tokens},
                "modelVersion": model, "responseId": f"fake-gemini-{next(_ids)}"}

    @staticmethod
    def _chunks(answer: Mapping[str, Any], rendered: Rendered) -> Iterator[bytes | None]:
        """One chunk per token, the finish reason and usage on the last (as the API sends them)."""
        for n, token in enumerate(rendered.tokens):
            last = n == len(rendered.tokens) - 1
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": token}]}, "index": 0}
            chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": answer["modelVersion"],
                                     "responseId": answer["responseId"]}
            if last:
                candidate["finishReason"] = answer["candidates"][0]["finishReason"]
                chunk["usageMetadata"] = answer["usageMetadata"]
            yield sse(chunk)
