"""A loopback replica of how llama-cpp-python's OpenAI-compatible server (0.3.x) treats a request.

A handler for `FakeOpenAI`: what the real server refuses, it refuses with the real server's status and
text; what it accepts is answered by `reply` (a function of the request, or a fixed Reply). Modelled:
- `response_format` of type json_schema → HTTP 500 with pydantic's "Input should be 'text' or
  'json_object'" (the server validates the type as a literal and reports every error as a 500);
  json_object, with or without a `schema` (which the real server turns into a grammar), is accepted;
- a prompt plus max_tokens beyond `context_length` → HTTP 400 "This model's maximum context length is
  N tokens ..." (param messages, code context_length_exceeded), counting words as tokens (the real server
  refuses only a prompt beyond its context and cuts max_tokens itself: this replica is stricter);
- parameters in `refuse` (e.g. {"seed"}) → HTTP 500 naming the parameter, like other servers' validators.
Error bodies have the real server's top-level shape and words (checked against llama-cpp-python 0.3.36
serving SmolLM2). Every reply takes `latency` seconds, so that `FakeOpenAI.max_in_flight` shows how many
calls the client had in flight on a server that, like llama.cpp, computes one at a time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

from .behaviours import Behaviour, Malformed, RecordedRequest, Reply
from .server import prompt_text

# The server's own words (llama-cpp-python 0.3.36), traceback line included; its error bodies are not nested
# under "error".
_TRACE = ('\n\n  File ".../site-packages/llama_cpp/server/app.py", line 376, in create_chat_completion\n'
          "    POST /v1/chat/completions")
RESPONSE_FORMAT_REFUSAL = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                           "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
                           "'ctx': {'expected': \"'text' or 'json_object'\"}}" + _TRACE)


def refusal(message: str, status: int = 500, error_type: str = "internal_server_error", param: str | None = None,
            code: str | None = None) -> Malformed:
    """An error reply in llama-cpp-python's shape: {"message", "type", "param", "code"} at the top level."""
    body = {"message": message, "type": error_type, "param": param, "code": code}
    return Malformed(json.dumps(body).encode(), status=status)


DEFAULT_REPLY = Reply("4")


class LlamaCppReplica:
    def __init__(self, reply: Reply | Callable[[RecordedRequest], Reply] = DEFAULT_REPLY, *,
                 context_length: int | None = None, refuse: Collection[str] = (), latency: float = 0.0) -> None:
        self.reply = reply
        self.context_length = context_length
        self.refuse = frozenset(refuse)
        self.latency = latency

    def __call__(self, request: RecordedRequest) -> Behaviour:
        body: dict[str, Any] = request.body if isinstance(request.body, dict) else {}
        response_format = body.get("response_format") or {}
        if response_format.get("type") not in (None, "text", "json_object"):
            return refusal(RESPONSE_FORMAT_REFUSAL)
        refused = sorted(self.refuse & set(body))
        if refused:
            return refusal(f"1 validation error:\n  {{'type': 'extra_forbidden', 'loc': ('body', '{refused[0]}'), "
                           f"'msg': 'Extra inputs are not permitted'}}{_TRACE}")
        if self.context_length is not None:
            prompt = len(prompt_text(body.get("messages")).split())
            completion = int(body.get("max_tokens") or 0)
            if prompt + completion > self.context_length:
                return refusal(f"This model's maximum context length is {self.context_length} tokens. However, you "
                               f"requested {prompt + completion} tokens ({prompt} in the messages, {completion} in "
                               "the completion). Please reduce the length of the messages or completion.",
                               400, "invalid_request_error", "messages", "context_length_exceeded")
        reply = self.reply(request) if callable(self.reply) else self.reply
        return replace(reply, latency=max(reply.latency, self.latency))
