"""Fake Anthropic Messages API at /v1/messages, plain and streamed."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from starlette.responses import Response

from .behaviours import Fail, RecordedRequest, Rendered, Reply, ToolCall, render
from .server import Endpoint, FakeServer, json_response, prompt_text, sse, sse_response

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
_HEADERS = {"request-id": "req_fake"}
_ids = itertools.count(1)


def forced_tool(body: Mapping[str, Any]) -> str | None:
    choice = body.get("tool_choice") or {}
    return choice.get("name") if choice.get("type") == "tool" else None


def _tool_calls(reply: Reply, body: Mapping[str, Any]) -> Sequence[ToolCall]:
    """Scripted tool calls; or, when the request forces a tool and the text is a JSON object,
    that object as the tool's input (how structured output over tool use looks on the wire)."""
    if reply.tool_calls:
        return reply.tool_calls
    tool = forced_tool(body)
    if tool is None:
        return ()
    try:
        value = json.loads(reply.text)
    except ValueError:
        return ()
    return (ToolCall(tool, value),) if isinstance(value, dict) else ()


def _input(call: ToolCall) -> Any:
    return json.loads(call.arguments) if isinstance(call.arguments, str) else dict(call.arguments)


class FakeAnthropic(FakeServer):
    """Anthropic wire format at /v1/messages."""

    client_prefix = ""
    sdk = ("anthropic", "Anthropic", "AsyncAnthropic")
    api_key = "sk-ant-test-fake"
    reply_headers = _HEADERS

    def endpoints(self) -> dict[str, Endpoint]:
        return {"/v1/messages": self._messages}

    def error_body(self, fail: Fail) -> dict[str, Any]:
        default_type = "api_error" if fail.status >= 500 and fail.status != 529 else _ERROR_TYPES.get(fail.status, "invalid_request_error")
        return {"type": "error", "error": {"type": fail.error_type or default_type, "message": fail.message},
                "request_id": "req_fake"}

    def _messages(self, request: RecordedRequest, reply: Reply) -> Response:
        body = request.body
        calls = _tool_calls(reply, body)
        # Structured output over a forced tool: the scripted JSON text becomes the tool's input.
        effective = reply if not calls or reply.tool_calls else replace(reply, text="", tool_calls=calls)
        rendered = render(effective, body, body.get("max_tokens"), prompt_text([body.get("system"), body.get("messages")]))
        stop_reason = _STOP_REASONS.get(rendered.finish_reason, rendered.finish_reason)
        content: list[dict[str, Any]] = [{"type": "text", "text": rendered.text}] if rendered.tokens else []
        content += [{"type": "tool_use", "id": c.id or f"toolu_fake{i}", "name": c.name, "input": _input(c)}
                    for i, c in enumerate(calls)]
        message = {"id": f"msg_fake{next(_ids)}", "type": "message", "role": "assistant", "model": rendered.model,
                   "content": content, "stop_reason": stop_reason, "stop_sequence": None,
                   "usage": {"input_tokens": rendered.input_tokens, "output_tokens": rendered.output_tokens,
                             "cache_creation_input_tokens": reply.cache_write_tokens,
                             "cache_read_input_tokens": reply.cache_read_tokens}}
        if request.stream:
            return sse_response(self._events(message, reply, rendered), reply, {**_HEADERS, **reply.headers})
        return json_response(message, reply, _HEADERS)

    @staticmethod
    def _events(message: Mapping[str, Any], reply: Reply, rendered: Rendered) -> Iterator[bytes | None]:
        def event(kind: str, **fields: Any) -> bytes:
            return sse({"type": kind, **fields}, event=kind)

        start_usage = {**message["usage"], "output_tokens": 1}
        yield event("message_start", message={**message, "content": [], "stop_reason": None, "usage": start_usage})
        yield event("ping")
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                yield event("content_block_start", index=index, content_block={"type": "text", "text": ""})
                for n, token in enumerate(rendered.tokens):
                    if reply.abort_after is not None and n >= reply.abort_after:
                        if reply.abort_mode == "error_event":
                            yield event("error", error={"type": "overloaded_error", "message": "Overloaded"})
                        else:
                            yield None
                        return
                    yield event("content_block_delta", index=index, delta={"type": "text_delta", "text": token})
            else:
                yield event("content_block_start", index=index, content_block={**block, "input": {}})
                yield event("content_block_delta", index=index,
                            delta={"type": "input_json_delta", "partial_json": json.dumps(block["input"])})
            yield event("content_block_stop", index=index)
        yield event("message_delta", delta={"stop_reason": message["stop_reason"], "stop_sequence": None},
                    usage={"output_tokens": message["usage"]["output_tokens"]})
        yield event("message_stop")
