"""A loopback replica of how llama-cpp-python's OpenAI-compatible server (0.3.x) treats a request.

A handler for `FakeOpenAI`: what the real server refuses, it refuses with the real server's status and
text; what it accepts is answered by `reply` (a function of the request, or a fixed Reply). Modelled:
- `response_format` of type json_schema → HTTP 500 with pydantic's "Input should be 'text' or
  'json_object'" (the server validates the type as a literal and reports every error as a 500);
  json_object, with or without a `schema` (which the real server turns into a grammar), is accepted;
- a prompt plus max_tokens beyond `context_length` → HTTP 400 "This model's maximum context length is
  N tokens ..." (code context_length_exceeded), counting words as tokens;
- parameters in `refuse` (e.g. {"seed"}) → HTTP 500 naming the parameter, like other servers' validators.
Every reply takes `latency` seconds, so that `FakeOpenAI.max_in_flight` shows how many calls the
client had in flight on a server that, like llama.cpp, computes one at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

from .behaviours import Behaviour, Fail, RecordedRequest, Reply
from .server import prompt_text

RESPONSE_FORMAT_REFUSAL = ("1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should "
                           "be 'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]")


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
            return Fail(500, RESPONSE_FORMAT_REFUSAL, error_type="internal_server_error", latency=self.latency)
        refused = sorted(self.refuse & set(body))
        if refused:
            return Fail(500, f"1 validation error for CreateChatCompletionRequest\n{refused[0]}\n  Extra inputs are "
                             "not permitted [type=extra_forbidden]", error_type="internal_server_error",
                        latency=self.latency)
        if self.context_length is not None:
            prompt = len(prompt_text(body.get("messages")).split())
            completion = int(body.get("max_tokens") or 0)
            if prompt + completion > self.context_length:
                return Fail(400, f"This model's maximum context length is {self.context_length} tokens. However, "
                                 f"you requested {prompt + completion} tokens ({prompt} in the messages, "
                                 f"{completion} in the completion). Please reduce the length of the messages or "
                                 "completion.", error_type="context_length_exceeded", latency=self.latency)
        reply = self.reply(request) if callable(self.reply) else self.reply
        return replace(reply, latency=max(reply.latency, self.latency))
