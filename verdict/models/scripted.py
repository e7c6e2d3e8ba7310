"""ScriptedModel: a deterministic Model for tests and offline use.

Replies come from a function of the request or from a list used in order (cycling). A reply is a string,
a ScriptedReply (text plus a probability distribution for the first token's logprobs, a finish reason),
a full ModelResponse, or a ModelError, which is raised: that is how errors are injected. `latency` sleeps
before answering, like a remote model would; `logprobs=True` makes the model report logprobs.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from verdict.models.base import ModelError, ModelRequest, ModelResponse, TokenLogprob, Usage


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    text: str
    # Probabilities of alternative first tokens, e.g. {"4": 0.7, "5": 0.3}; the reply's first token is the
    # chosen one. Empty: the chosen token gets probability 1.
    distribution: Mapping[str, float] = field(default_factory=dict)
    finish_reason: str = "stop"


Reply = str | ScriptedReply | ModelResponse | ModelError
ReplyFn = Callable[[ModelRequest], Reply]


class ScriptedModel:
    def __init__(self, replies: ReplyFn | Sequence[Reply], *, name: str = "scripted/default",
                 latency: float = 0.0, logprobs: bool = False, json_schema: bool = True,
                 price_per_million: tuple[float, float] = (0.0, 0.0), record: bool = False) -> None:
        if not callable(replies) and not replies:
            raise ValueError("ScriptedModel needs a reply function or at least one canned reply")
        self._replies = replies
        self._name = name
        self.latency = latency
        self._logprobs = logprobs
        self._json_schema = json_schema
        self.price_per_million = price_per_million
        # Kept only when asked (else it stays empty): a long benchmark run would otherwise hold every request.
        self.requests: list[ModelRequest] = []
        self._record = record
        self._calls = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def supports_json_schema(self) -> bool:
        return self._json_schema

    @property
    def supports_logprobs(self) -> bool:
        return self._logprobs

    @property
    def calls(self) -> int:
        return self._calls

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            call = self._calls  # also the position in a reply list
            self._calls += 1
        if self._record:
            self.requests.append(request)
        if self.latency:
            time.sleep(self.latency)
        reply = self._replies(request) if callable(self._replies) else self._replies[call % len(self._replies)]
        if isinstance(reply, ModelError):
            raise reply
        if isinstance(reply, ModelResponse):
            return reply
        if isinstance(reply, str):
            reply = ScriptedReply(reply)
        return ModelResponse(
            text=reply.text,
            model=self._name,
            finish_reason=reply.finish_reason,
            logprobs=self._first_token_logprobs(reply) if self._logprobs and request.top_logprobs else None,
            usage=self._usage(request, reply.text),
        )

    def _first_token_logprobs(self, reply: ScriptedReply) -> tuple[TokenLogprob, ...]:
        token = reply.text.strip().split(maxsplit=1)[0] if reply.text.strip() else ""
        distribution = dict(reply.distribution) or {token: 1.0}
        top = tuple(sorted(((t, math.log(p)) for t, p in distribution.items() if p > 0),
                           key=lambda pair: pair[1], reverse=True))
        chosen = dict(top).get(token, top[0][1] if top else 0.0)
        return (TokenLogprob(token, chosen, top),)

    def _usage(self, request: ModelRequest, text: str) -> Usage:
        # Words stand in for tokens: deterministic, and enough to test that usage is summed per run.
        prompt = sum(len(m.content.split()) for m in request.messages)
        completion = len(text.split())
        price_in, price_out = self.price_per_million
        return Usage(prompt, completion, (prompt * price_in + completion * price_out) / 1e6)
