"""Fake OpenAI-compatible API: chat completions, Responses API and embeddings, plain and streamed."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import struct
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from verdict.models.base import TokenLogprob

from .behaviours import Fail, RecordedRequest, Rendered, Reply, ToolCall, render, token_logprobs
from .server import Endpoint, FakeServer, json_response, prompt_text, sse, sse_response

_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_exceeded"}
_HEADERS = {"x-request-id": "req_fake"}
_ids = itertools.count(1)


def _arguments(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _call_id(call: ToolCall, index: int) -> str:
    return call.id or f"call_fake_{index}"


def _logprob_entry(lp: TokenLogprob) -> dict[str, Any]:
    return {
        "token": lp.token, "logprob": lp.logprob, "bytes": list(lp.token.encode()),
        "top_logprobs": [{"token": t, "logprob": p, "bytes": list(t.encode())} for t, p in lp.top],
    }


class FakeOpenAI(FakeServer):
    """OpenAI wire format at /v1/chat/completions, /v1/responses and /v1/embeddings."""

    client_prefix = "/v1"
    sdk = ("openai", "OpenAI", "AsyncOpenAI")
    api_key = "sk-test-fake"
    reply_headers = _HEADERS

    def endpoints(self) -> dict[str, Endpoint]:
        return {
            "/v1/chat/completions": self._chat,
            "/v1/responses": self._responses,
            "/v1/embeddings": self._embeddings,
        }

    # Entries of GET /v1/models (e.g. {"id": "m", "max_model_len": 4096} as vLLM reports it); None: 404.
    listed_models: list[dict[str, Any]] | None = None

    def reset(self) -> None:
        super().reset()
        self.listed_models = None

    def listings(self) -> list[Route]:
        async def models(request: Request) -> Response:
            if self.listed_models is None:
                return self.error_response(Fail(404, "no model list on this server"))
            data = [{"object": "model", "created": 0, "owned_by": "fake", **entry} for entry in self.listed_models]
            return JSONResponse({"object": "list", "data": data})

        return [Route("/v1/models", models, methods=["GET"])]

    def error_body(self, fail: Fail) -> dict[str, Any]:
        default_type = "server_error" if fail.status >= 500 else _ERROR_TYPES.get(fail.status, "invalid_request_error")
        error_type = fail.error_type or default_type
        return {"error": {"message": fail.message, "type": error_type, "param": None, "code": error_type}}

    # -- chat completions --------------------------------------------------------------------
    def _chat(self, request: RecordedRequest, reply: Reply) -> Response:
        body = request.body
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        rendered = render(reply, body, limit, prompt_text(body.get("messages")))
        top_n = int(body.get("top_logprobs") or 0)
        logprobs = token_logprobs(reply, rendered.tokens, top_n) if body.get("logprobs") else None
        base = {"id": f"chatcmpl-fake{next(_ids)}", "created": int(time.time()), "model": rendered.model,
                "system_fingerprint": "fp_fake"}
        usage = {
            "prompt_tokens": rendered.input_tokens, "completion_tokens": rendered.output_tokens,
            "total_tokens": rendered.input_tokens + rendered.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens, "audio_tokens": 0,
                                      "cache_write_tokens": reply.cache_write_tokens},
            "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        }
        if request.stream:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = self._chat_chunks(base, reply, rendered, logprobs, usage if include_usage else None)
            return sse_response(events, reply, {**_HEADERS, **reply.headers})
        message: dict[str, Any] = {"role": "assistant", "content": rendered.text if rendered.tokens or not reply.tool_calls else None,
                                   "refusal": None, "annotations": []}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": _call_id(c, i), "type": "function", "function": {"name": c.name, "arguments": _arguments(c)}}
                for i, c in enumerate(reply.tool_calls)
            ]
        choice = {"index": 0, "message": message, "finish_reason": rendered.finish_reason,
                  "logprobs": {"content": [_logprob_entry(lp) for lp in logprobs], "refusal": None} if logprobs is not None else None}
        return json_response({**base, "object": "chat.completion", "choices": [choice], "usage": usage}, reply, _HEADERS)

    def _chat_chunks(self, base: Mapping[str, Any], reply: Reply, rendered: Rendered,
                     logprobs: Sequence[TokenLogprob] | None, usage: Mapping[str, Any] | None) -> Iterator[bytes | None]:
        def chunk(delta: Mapping[str, Any], finish: str | None = None, lps: Sequence[TokenLogprob] | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish,
                      "logprobs": {"content": [_logprob_entry(lp) for lp in lps], "refusal": None} if lps else None}
            data = {**base, "object": "chat.completion.chunk", "choices": [choice]}
            if usage is not None:
                data["usage"] = None
            return sse(data)

        yield chunk({"role": "assistant", "content": "", "refusal": None})
        for index, token in enumerate(rendered.tokens):
            if reply.abort_after is not None and index >= reply.abort_after:
                yield from self._abort(reply)
                return
            yield chunk({"content": token}, lps=logprobs[index:index + 1] if logprobs else None)
        for i, call in enumerate(reply.tool_calls):
            yield chunk({"tool_calls": [{"index": i, "id": _call_id(call, i), "type": "function",
                                         "function": {"name": call.name, "arguments": ""}}]})
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": _arguments(call)}}]})
        yield chunk({}, rendered.finish_reason)
        if usage is not None:
            yield sse({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        yield sse("[DONE]")

    @staticmethod
    def _abort(reply: Reply) -> Iterator[bytes | None]:
        if reply.abort_mode == "error_event":
            yield sse({"error": {"message": "fake stream error", "type": "server_error", "param": None, "code": None}})
        else:
            yield None

    # -- Responses API -----------------------------------------------------------------------
    def _responses(self, request: RecordedRequest, reply: Reply) -> Response:
        body = request.body
        rendered = render(reply, body, body.get("max_output_tokens"), prompt_text([body.get("instructions"), body.get("input")]))
        response_id = f"resp_fake{next(_ids)}"
        message_item = {"id": f"msg_{response_id}", "type": "message", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": rendered.text, "annotations": [], "logprobs": []}]}
        calls = [{"id": f"fc_{response_id}_{i}", "type": "function_call", "status": "completed", "call_id": _call_id(c, i),
                  "name": c.name, "arguments": _arguments(c)} for i, c in enumerate(reply.tool_calls)]
        output = ([message_item] if rendered.tokens or not calls else []) + calls
        incomplete = rendered.finish_reason == "length"
        final = {
            "id": response_id, "object": "response", "created_at": time.time(), "model": rendered.model,
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "error": None, "instructions": body.get("instructions"), "metadata": {}, "output": output,
            "parallel_tool_calls": True, "temperature": body.get("temperature"), "top_p": body.get("top_p"),
            "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools", []),
            "max_output_tokens": body.get("max_output_tokens"), "text": body.get("text", {"format": {"type": "text"}}),
            "usage": {"input_tokens": rendered.input_tokens,
                      "input_tokens_details": {"cached_tokens": reply.cache_read_tokens,
                                               "cache_write_tokens": reply.cache_write_tokens},
                      "output_tokens": rendered.output_tokens,
                      "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
                      "total_tokens": rendered.input_tokens + rendered.output_tokens},
        }
        if not request.stream:
            return json_response(final, reply, _HEADERS)
        return sse_response(self._response_events(final, reply, rendered), reply, {**_HEADERS, **reply.headers})

    def _response_events(self, final: Mapping[str, Any], reply: Reply, rendered: Rendered) -> Iterator[bytes | None]:
        seq = itertools.count()

        def event(kind: str, **fields: Any) -> bytes:
            return sse({"type": kind, "sequence_number": next(seq), **fields}, event=kind)

        pending = {**final, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}
        yield event("response.created", response=pending)
        yield event("response.in_progress", response=pending)
        for index, item in enumerate(final["output"]):
            if item["type"] == "message":
                yield event("response.output_item.added", output_index=index,
                            item={**item, "status": "in_progress", "content": []})
                part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                yield event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=part)
                for n, token in enumerate(rendered.tokens):
                    if reply.abort_after is not None and n >= reply.abort_after:
                        if reply.abort_mode == "error_event":
                            yield event("error", code="server_error", message="fake stream error", param=None)
                        else:
                            yield None
                        return
                    yield event("response.output_text.delta", item_id=item["id"], output_index=index,
                                content_index=0, delta=token, logprobs=[])
                yield event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                            text=rendered.text, logprobs=[])
                yield event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0,
                            part={**part, "text": rendered.text})
            else:
                yield event("response.output_item.added", output_index=index,
                            item={**item, "status": "in_progress", "arguments": ""})
                yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                            delta=item["arguments"])
                yield event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                            name=item["name"], arguments=item["arguments"])
            yield event("response.output_item.done", output_index=index, item=item)
        yield event("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)

    # -- embeddings --------------------------------------------------------------------------
    def _embeddings(self, request: RecordedRequest, reply: Reply) -> Response:
        body = request.body
        inputs = body.get("input")
        items = [inputs] if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], int)) else list(inputs or [])
        dims = int(body.get("dimensions") or 8)
        data = []
        for index, item in enumerate(items):
            vector = embedding_vector(json.dumps(item), dims)
            encoded: Any = vector
            if body.get("encoding_format") == "base64":
                encoded = base64.b64encode(struct.pack(f"<{dims}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = max(len(prompt_text(items).split()), 1)
        payload = {"object": "list", "data": data, "model": reply.model or body.get("model"),
                   "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        return json_response(payload, reply, _HEADERS)


def embedding_vector(text: str, dims: int) -> list[float]:
    """Deterministic vector in [-1, 1) from the text's SHA-256 (exactly representable in float32)."""
    digest = b""
    counter = 0
    while len(digest) < dims:
        digest += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    return [(b - 128) / 128 for b in digest[:dims]]
