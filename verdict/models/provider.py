"""What every remote model client does around one provider call: cache, rate limit, concurrency, retry, cost."""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Mapping
from contextvars import copy_context
from dataclasses import replace
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from .base import ModelError, ModelRequest, ModelResponse, Usage
from .cache import ResponseCache, request_key
from .concurrency import shared_gate
from .limits import DEFAULT_MAX_REPLY_BYTES, call, current, start_attempt
from .pricing import Price, PriceTable, price_table
from .ratelimit import RateLimits, estimate_tokens, shared_limiter
from .retry import RetryPolicy, call_with_retries

DEFAULT_TIMEOUT = 60.0
# A request that timed out on an endpoint with a concurrency limit is awaited in the background for up to this
# many times its timeout (holding its slot), polled every HELD_POLL_S seconds by the caller.
SERIAL_GRACE = 3.0
HELD_POLL_S = 0.02
log = logging.getLogger("verdict.models")
# Replies shorter than this are dominated by prompt processing and tell little about the generation pace.
MIN_PACE_TOKENS = 8
# Part of the cache key, never sent: lets an ensemble draw independent samples of one prompt.
CACHE_SALT = "cache_salt"
DEFAULT_RATE_LIMITS = RateLimits()


class ProviderModel:
    """Base of the OpenAI-compatible and Anthropic clients; subclasses implement `_attempt`."""

    provider: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        endpoint: str,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        rate_limits: RateLimits | None = DEFAULT_RATE_LIMITS,
        cache: ResponseCache | str | os.PathLike[str] | None = None,
        prices: PriceTable | Mapping[str, Price | tuple[float, float]] | None = None,
        max_concurrency: int | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        if not model or model != model.strip():
            raise ValueError(f"{self.provider} model name must be non-empty without surrounding spaces, got {model!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        if max_reply_bytes < 1:
            raise ValueError(f"max_reply_bytes must be >= 1, got {max_reply_bytes}")
        self.model = model
        self.timeout = timeout
        self.max_reply_bytes = max_reply_bytes
        self.retry = retry or RetryPolicy()
        self._endpoint = endpoint
        self.endpoint = normalised_endpoint(endpoint)
        self._limiter = shared_limiter(f"{self.name}@{endpoint}", rate_limits)
        self._gate = shared_gate(self.endpoint, max_concurrency)
        self._cache = cache if cache is None or isinstance(cache, ResponseCache) else ResponseCache(cache)
        self._prices = price_table(prices)
        self._rng = random.Random()
        # Seconds per output token seen on completed calls (None until one is long enough to tell).
        self._pace: float | None = None

    @property
    def name(self) -> str:
        return f"{self.provider}/{self.model}"

    @property
    def identity(self) -> dict[str, Any]:
        """What besides the name decides what a judge gets: the endpoint (two servers may serve different
        weights under one model name); part of evaluator fingerprints."""
        return {"endpoint": self.endpoint}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"

    def _attempt(self, request: ModelRequest, params: dict[str, Any]) -> ModelResponse:
        """One provider call; raise ModelError on failure. Usage carries tokens, cost is added here."""
        raise NotImplementedError

    def attempt_timeout(self, max_output: Any) -> float:
        """The per-attempt timeout for a reply of at most `max_output` tokens: the configured one, raised to
        twice the time that budget takes at the pace this endpoint has shown. A non-streamed reply sends no
        byte before it is complete, so on a slow local server a long budget is not a hang."""
        if self._pace is None or not isinstance(max_output, int):
            return self.timeout
        return max(self.timeout, 2 * max_output * self._pace)

    def start_attempt(self, max_output: Any) -> float:
        """Starts the attempt's deadline (its timeout, for the whole reply: limits.py); the SDK timeout of its
        exchange, longer by the grace of a request awaited in the background (`_held_attempt`)."""
        return start_attempt(self.attempt_timeout(max_output))

    def _observe_pace(self, output_tokens: int, seconds: float) -> None:
        if output_tokens >= MIN_PACE_TOKENS:
            pace = seconds / output_tokens
            self._pace = pace if self._pace is None else 0.7 * self._pace + 0.3 * pace

    def _timed_attempt(self, request: ModelRequest, params: dict[str, Any], in_flight: int) -> ModelResponse:
        started = time.monotonic()
        try:
            response = self._attempt(request, params)
        except ModelError as error:
            if error.kind == "timeout":
                self._gate.timed_out(in_flight)
            raise
        self._observe_pace(response.usage.output_tokens, time.monotonic() - started)
        return response

    def _held_attempt(self, request: ModelRequest, params: dict[str, Any], in_flight: int) -> ModelResponse:
        """An attempt on an endpoint with a concurrency limit (a serial server computes what it was sent, asked
        or not): it runs on a worker that keeps the slot until the server has answered, for up to
        SERIAL_GRACE times the timeout, so no other request reaches a server still computing an abandoned one.
        The caller still gets its timeout at the deadline."""
        state = current()
        assert state is not None  # complete() opened the call
        state.grace, state.deadline = SERIAL_GRACE, None
        context = copy_context()
        outcome: list[ModelResponse | BaseException] = []
        done = threading.Event()

        def work() -> None:
            try:
                outcome.append(context.run(self._timed_attempt, request, params, in_flight))
            except BaseException as exc:  # handed to the caller, or logged when it has left
                outcome.append(exc)
                if isinstance(exc, ModelError) and state.deadline is not None and time.monotonic() > state.deadline:
                    log.warning("%s: a request abandoned at its deadline was dropped after its grace too (%s); "
                                "the server may still be computing it", self.name, exc.message)
            finally:
                self._gate.release()
                done.set()

        threading.Thread(target=work, name=f"verdict-held-{self.model}", daemon=True).start()
        while not done.wait(HELD_POLL_S):
            if state.deadline is not None and time.monotonic() > state.deadline:
                raise ModelError("timeout", f"{self.name} did not answer within the timeout; the request is left "
                                 f"to finish and holds one of {self.endpoint}'s {self._gate.limit} slot(s) until "
                                 "the server answers", retryable=True)
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def complete(self, request: ModelRequest) -> ModelResponse:
        # The endpoint is part of the model's identity: two servers may serve different weights under one name.
        cache = self._cache
        key = request_key(f"{self.name}@{self._endpoint}", request) if cache is not None else ""
        if cache is not None:
            hit = cache.get(key)
            if hit is not None:
                return hit
        params = {k: v for k, v in request.params.items() if k != CACHE_SALT}
        limiter = self._limiter
        max_output = params.get("max_tokens", params.get("max_completion_tokens"))
        estimate = estimate_tokens(sum(len(m.content) for m in request.messages),
                                   max_output if isinstance(max_output, int) else None)

        def attempt() -> ModelResponse:
            # Waiting for a slot is not part of the attempt's timeout: the SDK's clock starts at send.
            in_flight = self._gate.acquire()
            try:
                if limiter is not None:
                    limiter.acquire(estimate)
            except BaseException:
                self._gate.release()
                raise
            if self._gate.limit is not None:
                return self._held_attempt(request, params, in_flight)
            try:
                return self._timed_attempt(request, params, in_flight)
            finally:
                self._gate.release()

        with call(self.max_reply_bytes) as sent:
            try:
                response = call_with_retries(attempt, self.retry, rng=self._rng,
                                             on_retry_after=limiter.pause if limiter is not None else None)
            except ModelError as error:
                raise error.after(sent.requests) from None
        tokens = response.usage
        if limiter is not None:
            limiter.settle(estimate, tokens.input_tokens + tokens.output_tokens)
        cost = self._prices.cost(self.model, tokens.input_tokens, tokens.output_tokens)
        response = replace(response, usage=Usage(tokens.input_tokens, tokens.output_tokens, cost, sent.requests))
        if cache is not None:
            cache.put(key, response)
        return response


def credentials(provider: str, api_key: str | None, base_url: str | None,
                key_env: str, url_env: str) -> tuple[str, str | None]:
    """API key and base URL from explicit arguments, else the environment; never logged.

    Local OpenAI/Anthropic-compatible servers (vLLM, Ollama, llama.cpp) ignore the key, so a
    custom base URL without a key gets a placeholder instead of an error.
    """
    base_url = base_url or os.environ.get(url_env) or None
    api_key = api_key or os.environ.get(key_env) or None
    if api_key is None:
        if base_url is None:
            raise ValueError(
                f"no API key for {provider}: set the {key_env} environment variable or pass api_key=...; "
                f"for a local {provider}-compatible server pass base_url=... (or set {url_env})"
            )
        api_key = "not-needed"
    return api_key, base_url


def normalised_endpoint(url: str) -> str:
    """`url` without credentials, query or fragment, lower-case scheme and host, no default port, no
    trailing slash: one spelling per server, safe to store."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = parts.port
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    netloc = host if port is None or port == default else f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))


def split_params(params: Mapping[str, Any], accepted: frozenset[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(keyword arguments the SDK method takes, the rest) — the rest goes out as `extra_body`,
    which is how server-specific options such as vLLM's `top_k` reach OpenAI-compatible servers."""
    known = {k: v for k, v in params.items() if k in accepted and k != "extra_body"}
    extra = {k: v for k, v in params.items() if k not in accepted}
    return known, {**(params.get("extra_body") or {}), **extra}
