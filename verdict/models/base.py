"""The contract between the judge-graph engine and the model clients.

The engine only ever sees `Model.complete(ModelRequest) -> ModelResponse` and `ModelError`;
providers (OpenAI-compatible, Anthropic, scripted) live behind it. Transport-level retries
(429/5xx/timeouts with backoff), rate limiting, caching and cost live in the clients; the
engine retries only replies it cannot extract or validate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class ModelRequest:
    messages: tuple[Message, ...]
    # Sampling parameters as the user gave them to `.via(...)` (temperature, max_tokens, top_p, seed, stop, ...).
    params: Mapping[str, Any] = field(default_factory=dict)
    # JSON schema the reply must follow; clients use the provider's structured-output mode when it has one.
    json_schema: Mapping[str, Any] | None = None
    # Ask for log-probabilities of the first tokens with this many alternatives (None = not needed).
    top_logprobs: int | None = None


SCHEMA_INSTRUCTION = "Reply with only a JSON object that follows this JSON schema:\n{schema}"


def with_schema_instruction(messages: tuple[Message, ...], schema: Mapping[str, Any]) -> tuple[Message, ...]:
    """The messages with the schema spelled out after the last user turn, for a model that cannot enforce it.
    Idempotent: the extractor and a client that fell back from JSON-schema mode may both apply it."""
    instruction = SCHEMA_INSTRUCTION.format(schema=json.dumps(schema))
    if messages and messages[-1].role == "user":
        if messages[-1].content.endswith(instruction):
            return messages
        # Appended to the last user turn: some providers refuse two user turns in a row.
        return (*messages[:-1], Message("user", f"{messages[-1].content}\n\n{instruction}"))
    return (*messages, Message("user", instruction))


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    token: str
    logprob: float
    # Alternatives at this position, most likely first: (token, logprob).
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    # HTTP requests sent, retries and negotiation included; 0 from a client that does not count them (the
    # engine counts such a call as one request) and for a cached reply.
    requests: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cost_usd + other.cost_usd,
            self.requests + other.requests,
        )


@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str
    model: str
    # "stop", "length", "content_filter", "tool_calls", ... as the provider reported it.
    finish_reason: str | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    usage: Usage = Usage()
    # True when the reply came from the on-disk response cache (no paid call was made).
    cached: bool = False

    @property
    def truncated(self) -> bool:
        return self.finish_reason in ("length", "max_tokens")


ModelErrorKind = Literal[
    "rate_limited", "server_error", "timeout", "connection", "auth", "bad_request", "malformed_reply", "other",
    # Configuration errors, never retried: the server refused a request parameter it names, or gave the
    # same error twice for the same request (a deterministic refusal, not an outage).
    "unsupported_parameter", "refused",
    # The reply passed the client's size limit (`max_reply_bytes`); not retried.
    "too_large",
]
# Kinds that say the request (model options, parameters) is wrong for this server, not that it is down.
CONFIGURATION_KINDS: frozenset[str] = frozenset({"unsupported_parameter", "refused", "bad_request"})


class ModelError(Exception):
    """A provider call that failed after the client's own retries. Never carries secrets.

    `parameter` names the request parameter a server refused (unsupported_parameter); `signature` is the
    HTTP status and the server's (redacted) error text, to tell a deterministic refusal from an outage.
    `requests` is how many HTTP requests the call sent, retries and negotiation included (None: not counted).
    """

    def __init__(self, kind: ModelErrorKind, message: str, *, retryable: bool = False,
                 retry_after: float | None = None, parameter: str | None = None,
                 signature: str | None = None, requests: int | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.parameter = parameter
        self.signature = signature
        self.requests = requests

    def after(self, requests: int) -> ModelError:
        """This error, its message stating how many requests the failed call sent."""
        sent = "no request sent" if requests == 0 else f"{requests} request{'s' if requests > 1 else ''} sent"
        return ModelError(self.kind, f"{self.message} ({sent})", retryable=self.retryable,
                          retry_after=self.retry_after, parameter=self.parameter, signature=self.signature,
                          requests=requests)


@runtime_checkable
class Model(Protocol):
    """Anything that answers a ModelRequest. Must be safe to call from many threads."""

    @property
    def name(self) -> str:  # e.g. "openai/gpt-4o-mini", "scripted/default"
        ...

    @property
    def supports_json_schema(self) -> bool: ...

    @property
    def supports_logprobs(self) -> bool: ...

    def complete(self, request: ModelRequest) -> ModelResponse: ...
