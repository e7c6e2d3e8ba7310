"""Fake Amazon Bedrock runtime (boto3's `bedrock-runtime` wire format): `POST /model/{modelId}/converse` and
`POST /model/{modelId}/invoke` with an Anthropic Messages body, so the Bedrock instrumentations can be recorded
against the real boto3 client (credentials and SigV4 signatures are accepted unchecked)."""

from __future__ import annotations

import itertools
from typing import Any

from starlette.responses import Response

from verdict_demo.fake_llm.behaviours import Fail, RecordedRequest, Rendered, Reply, render
from verdict_demo.fake_llm.server import Endpoint, FakeServer, json_response, prompt_text

_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
_ERRORS = {400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
           429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException"}
_ids = itertools.count(1)


class FakeBedrock(FakeServer):
    """Bedrock runtime at /model/{modelId}/converse and /invoke (boto3's `endpoint_url` is the bare origin)."""

    client_prefix = ""

    def endpoints(self) -> dict[str, Endpoint]:
        return {"/model/{model_id}/converse": self._converse, "/model/{model_id}/invoke": self._invoke}

    def error_body(self, fail: Fail) -> dict[str, Any]:
        return {"message": fail.message}

    def error_response(self, fail: Fail) -> Response:
        response = super().error_response(fail)
        response.headers["x-amzn-errortype"] = fail.error_type or _ERRORS.get(fail.status, "InternalServerException")
        return response

    @staticmethod
    def _model(request: RecordedRequest) -> str:
        return request.path.split("/")[2]

    def _converse(self, request: RecordedRequest, reply: Reply) -> Response:
        body = request.body
        config = body.get("inferenceConfig") or {}
        rendered = render(reply, {"model": self._model(request)}, config.get("maxTokens"),
                          prompt_text([body.get("system"), body.get("messages")]))
        answer = {"output": {"message": {"role": "assistant", "content": [{"text": rendered.text}]}},
                  "stopReason": _STOP.get(rendered.finish_reason, rendered.finish_reason),
                  "usage": _usage(rendered, "inputTokens", "outputTokens", "totalTokens"),
                  "metrics": {"latencyMs": 1}}
        return json_response(answer, reply, {"x-amzn-requestid": f"fake-bedrock-{next(_ids)}"})

    def _invoke(self, request: RecordedRequest, reply: Reply) -> Response:
        """An Anthropic model's InvokeModel: the Messages API body in, the Messages API object out."""
        body = request.body
        rendered = render(reply, {"model": self._model(request)}, body.get("max_tokens"),
                          prompt_text([body.get("system"), body.get("messages")]))
        request_id = f"fake-bedrock-{next(_ids)}"
        answer = {"id": f"msg_bdrk_{request_id}", "type": "message", "role": "assistant", "model": rendered.model,
                  "content": [{"type": "text", "text": rendered.text}],
                  "stop_reason": _STOP.get(rendered.finish_reason, rendered.finish_reason), "stop_sequence": None,
                  "usage": _usage(rendered, "input_tokens", "output_tokens")}
        headers = {"x-amzn-requestid": request_id,
                   "x-amzn-bedrock-input-token-count": str(rendered.input_tokens),
                   "x-amzn-bedrock-output-token-count": str(rendered.output_tokens)}
        return json_response(answer, reply, headers)


def _usage(rendered: Rendered, inputs: str, outputs: str, total: str | None = None) -> dict[str, int]:
    usage = {inputs: rendered.input_tokens, outputs: rendered.output_tokens}
    return {**usage, total: rendered.input_tokens + rendered.output_tokens} if total else usage
