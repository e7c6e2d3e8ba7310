"""`openai/<model>`: the official `openai` client against OpenAI or any OpenAI-compatible server.

Chat Completions is used because every compatible server (vLLM, Ollama, llama.cpp, TGI)
implements it. JSON schemas go out as `response_format={"type": "json_schema", ...}` (strict
when the schema allows it); `top_logprobs` asks for `logprobs=True, top_logprobs=n`.

Capability negotiation: compatible servers accept different subsets of the API. The first refusal
that names a parameter (see errors.py) moves this endpoint and model one step down, process-wide,
logged once, and the call is repeated at once:
- structured output: json_schema → json_object with the schema (the form llama.cpp turns into a
  grammar) → json_object → none; below json_schema the schema is also spelled out in the prompt;
- `max_tokens` ⇄ `max_completion_tokens`; `top_logprobs`, `seed`, `stream_options` are dropped;
- `logprobs` refused: the model no longer claims logprobs, and this call fails (its extractor needs them);
- a context-length refusal that states the window teaches it, as does the window a server reports in
  `/models` (read once per endpoint and model) and the `context_length` option: `max_tokens` is then
  cut so prompt + output fit.
The structured-output level (`structured_output`) is part of the fingerprint of judges that send a
schema: below json_schema the prompt changes.
"""

from __future__ import annotations

import inspect
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .base import (
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    TokenLogprob,
    Usage,
    with_schema_instruction,
)
from .errors import malformed, sdk_error
from .limits import install
from .provider import DEFAULT_TIMEOUT, ProviderModel, credentials, split_params

MAX_TOP_LOGPROBS = 20  # the OpenAI API's upper bound
STRUCTURED_LEVELS = ("json_schema", "json_object_schema", "json_object", "none")
log = logging.getLogger("verdict.models")
# "exceed context window of 2048" (llama.cpp), "maximum context length is 8192 tokens" (OpenAI, vLLM),
# "exceeds the available context size (4096 tokens)" (llama.cpp's own server).
_CONTEXT = re.compile(r"(?:context window of|maximum context length is|available context size \()\s*(\d+)",
                      re.IGNORECASE)
# The server's own count of the prompt in such a refusal: "(2811 in the messages, ...)" (OpenAI, vLLM,
# llama-cpp-python), "request (5000 tokens) exceeds" (llama.cpp).
_PROMPT_TOKENS = re.compile(r"(\d+) in the messages|request \((\d+) tokens\)", re.IGNORECASE)
# A pessimistic estimate until a server's count calibrates it: it only ever shrinks max_tokens, never refuses.
_CHARS_PER_TOKEN = 3.0


def strict_compatible(schema: Any) -> bool:
    """OpenAI strict mode needs every object closed (`additionalProperties: false`) with all
    properties required; sending strict=True for any other schema is a 400."""
    if isinstance(schema, list):
        return all(strict_compatible(s) for s in schema)
    if not isinstance(schema, Mapping):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False or set(schema.get("required", ())) != set(properties):
            return False
    return all(strict_compatible(v) for v in schema.values())


def _messages(messages: tuple[Message, ...]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _characters(messages: Any) -> int:
    return sum(len(m.get("content") or "") for m in messages)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an endpoint accepts for one model, as configured and then learned from its refusals."""

    structured: str = "json_schema"  # one of STRUCTURED_LEVELS
    logprobs: bool = True
    top_logprobs: bool = True
    max_tokens_param: str | None = None  # None: as the request names it; else the name the server accepts
    seed: bool = True
    stream_options: bool = True
    context_length: int | None = None
    # Learnt from a context-length refusal that counted the prompt: characters per token of this model, and
    # (characters, the server's token count) of the shortest prompt refused because it alone does not fit.
    chars_per_token: float | None = None
    too_long: tuple[int, int] | None = None


# Learned downgrades per (endpoint, model), shared by every client of that pair in this process.
_learned: dict[tuple[str, str], dict[str, Any]] = {}
_probed: set[tuple[str, str]] = set()  # (endpoint, model) pairs whose /models entry was read
_learned_lock = threading.Lock()


def _merge(configured: Capabilities, learned: Mapping[str, Any]) -> Capabilities:
    """The configured capabilities lowered by what was learned (learning never raises a capability)."""
    changes = dict(learned)
    if "structured" in changes:
        changes["structured"] = max(configured.structured, changes["structured"], key=STRUCTURED_LEVELS.index)
    for flag in ("logprobs", "top_logprobs", "seed", "stream_options"):
        if flag in changes:
            changes[flag] = getattr(configured, flag) and changes[flag]
    if configured.context_length is not None and "context_length" in changes:
        changes["context_length"] = min(configured.context_length, changes["context_length"])
    return replace(configured, **changes)


def _downgrade(caps: Capabilities, parameter: str | None) -> dict[str, Any] | None:
    """The next-lower capability after a refusal of `parameter`; None when nothing lower is left."""
    if parameter == "response_format" and caps.structured != "none":
        return {"structured": STRUCTURED_LEVELS[STRUCTURED_LEVELS.index(caps.structured) + 1]}
    if parameter == "top_logprobs" and caps.top_logprobs:
        return {"top_logprobs": False}
    if parameter == "logprobs" and caps.logprobs:
        return {"logprobs": False}
    if parameter in ("max_tokens", "max_completion_tokens") and caps.max_tokens_param is None:
        return {"max_tokens_param": "max_completion_tokens" if parameter == "max_tokens" else "max_tokens"}
    if parameter in ("seed", "stream_options") and getattr(caps, parameter):
        return {parameter: False}
    return None


class OpenAIModel(ProviderModel):
    """Thread-safe; one HTTP connection pool per instance (`resolve_model` reuses instances)."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        organization: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        supports_logprobs: bool = True,
        supports_json_schema: bool = True,
        context_length: int | None = None,
        client: Any = None,
        **options: Any,
    ) -> None:
        import openai

        if client is None:
            api_key, base_url = credentials("openai", api_key, base_url, "OPENAI_API_KEY", "OPENAI_BASE_URL")
            client = openai.OpenAI(api_key=api_key, base_url=base_url, organization=organization)
        if context_length is not None and context_length < 1:
            raise ValueError(f"context_length must be >= 1, got {context_length}")
        # Our RetryPolicy replaces the SDK's retries (see retry.py); the timeout is per attempt.
        self._client = client.with_options(max_retries=0, timeout=timeout)
        install(self._client._client)  # the SDK's HTTP client: whole-reply deadline, size limit, request count
        # json_schema=False starts one level down: json_object carrying the schema, which servers without
        # JSON-schema mode either turn into a grammar (llama.cpp) or refuse (then the next level down).
        self._configured = Capabilities(structured="json_schema" if supports_json_schema else "json_object_schema",
                                        logprobs=supports_logprobs, context_length=context_length)
        self._accepted = frozenset(inspect.signature(self._client.chat.completions.create).parameters)
        super().__init__(model, endpoint=str(self._client.base_url), timeout=timeout, **options)
        self._key = (self.endpoint, model)

    @property
    def capabilities(self) -> Capabilities:
        learned = _learned.get(self._key)
        return _merge(self._configured, learned) if learned else self._configured

    @property
    def supports_json_schema(self) -> bool:
        """True while the server enforces the schema itself (JSON-schema mode)."""
        return self.capabilities.structured == "json_schema"

    @property
    def supports_logprobs(self) -> bool:
        return self.capabilities.logprobs

    @property
    def structured_output(self) -> str:
        """How a JSON schema reaches the server now (one of STRUCTURED_LEVELS); below json_schema the prompt
        also spells the schema out, so judges that send schemas put this in their fingerprint."""
        return self.capabilities.structured

    def _learn(self, caps: Capabilities, error: ModelError, sent: Mapping[str, Any]) -> bool:
        """Record what a refusal taught; True when the same call is worth repeating at once. A refusal naming
        a parameter this call did not send teaches nothing (the text matched something else)."""
        sent_names = set(sent) | set(sent.get("extra_body") or ())
        change = _downgrade(caps, error.parameter) if error.parameter in sent_names else None
        window = _CONTEXT.search(error.message)
        if change is None and window is not None:
            change = self._size_lesson(caps, int(window.group(1)), error, sent)
        if change is None:
            return False
        with _learned_lock:
            learned = _learned.setdefault(self._key, {})
            if _merge(self._configured, {**learned, **change}) == _merge(self._configured, learned):
                return True  # another thread learned it meanwhile
            learned.update(change)
        log.warning("%s at %s refused %s; from now on: %s (%s)", self.name, self.endpoint,
                    error.parameter or "the request size", change, error.message)
        return "logprobs" not in change  # without logprobs this call cannot give what was asked

    def _size_lesson(self, caps: Capabilities, window: int, error: ModelError,
                     sent: Mapping[str, Any]) -> dict[str, Any] | None:
        """What a context-length refusal teaches: the window, and from the server's count of the prompt, its
        characters per token. A prompt the server counts at the window or beyond is recorded (later prompts at
        least as long are refused without a request) and fails now: None, nothing to repeat."""
        change: dict[str, Any] = {} if caps.context_length == window else {"context_length": window}
        counted = _PROMPT_TOKENS.search(error.message)
        if counted is not None:
            tokens = int(counted.group(1) or counted.group(2))
            chars = _characters(sent["messages"])
            if tokens >= window:
                with _learned_lock:
                    learned = _learned.setdefault(self._key, {})
                    learned.setdefault("context_length", window)
                    if learned.get("too_long") is None or chars < learned["too_long"][0]:
                        learned["too_long"] = (chars, tokens)
                return None
            if tokens:
                change["chars_per_token"] = chars / tokens
        return change or None

    def _discover_context(self) -> None:
        """Once per endpoint and model: the context window the server reports in `/models` (vLLM's
        `max_model_len`, llama.cpp's `meta.n_ctx`, `context_length`), learnt like a refusal would teach it.
        Servers that report nothing (or OpenAI itself, which is not asked) are left to their refusals."""
        with _learned_lock:
            if self._key in _probed or self._configured.context_length is not None:
                return
            _probed.add(self._key)
        if "api.openai.com" in self.endpoint:
            return
        try:
            listed = self._client.with_options(timeout=min(self.timeout, 10.0)).models.list().data
        except Exception:  # an optional endpoint: any failure means "not reported"
            return
        for entry in listed:
            data = entry.model_dump() if hasattr(entry, "model_dump") else {}
            if data.get("id") != self.model:
                continue
            meta = data.get("meta")
            if not isinstance(meta, Mapping):
                meta = {}
            window = data.get("max_model_len") or data.get("context_length") or meta.get("n_ctx")
            if isinstance(window, int) and window > 0:
                with _learned_lock:
                    _learned.setdefault(self._key, {}).setdefault("context_length", window)

    def _attempt(self, request: ModelRequest, params: dict[str, Any]) -> ModelResponse:
        import openai

        self._discover_context()
        while True:
            caps = self.capabilities
            kwargs = self._kwargs(request, params, caps)
            try:
                budget = kwargs.get("max_tokens", kwargs.get("max_completion_tokens"))
                completion = self._client.chat.completions.create(**{"timeout": self.start_attempt(budget), **kwargs})
            except Exception as exc:
                error = sdk_error(exc, openai, self.name)
                if error is None:
                    raise
                # Repeated only with something changed (learnt here or by another thread meanwhile).
                if error.kind in ("unsupported_parameter", "bad_request", "server_error") \
                        and self._learn(caps, error, kwargs) and self.capabilities != caps:
                    continue
                raise error from None
            return self._response(completion)

    def _kwargs(self, request: ModelRequest, params: Mapping[str, Any], caps: Capabilities) -> dict[str, Any]:
        params = dict(params)
        budget_name = caps.max_tokens_param or ("max_completion_tokens" if "max_completion_tokens" in params
                                                else "max_tokens")
        budget = params.pop("max_tokens", params.pop("max_completion_tokens", None))
        if not caps.seed:
            params.pop("seed", None)
        if not caps.stream_options:
            params.pop("stream_options", None)
        messages = request.messages
        if request.json_schema is not None:
            schema = dict(request.json_schema)
            if caps.structured != "json_schema":
                messages = with_schema_instruction(messages, schema)
            if caps.structured == "json_schema":
                params["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": "response", "schema": schema, "strict": strict_compatible(schema)}}
            elif caps.structured == "json_object_schema":
                params["response_format"] = {"type": "json_object", "schema": schema}
            elif caps.structured == "json_object":
                params["response_format"] = {"type": "json_object"}
        if caps.context_length is not None:
            budget = self._fit(messages, budget, caps)
        if budget is not None:
            params[budget_name] = budget
        if request.top_logprobs is not None:
            params["logprobs"] = True
            if request.top_logprobs > 0 and caps.top_logprobs:
                params["top_logprobs"] = min(request.top_logprobs, MAX_TOP_LOGPROBS)
        known, extra = split_params(params, self._accepted)
        kwargs: dict[str, Any] = {**known, "model": self.model, "messages": _messages(messages)}
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def _fit(self, messages: tuple[Message, ...], budget: Any, caps: Capabilities) -> Any:
        """`budget` cut so that prompt + output fit the context, by an estimate of the prompt's tokens. The
        estimate never refuses a prompt: only a size the server itself refused is refused here, in its words."""
        assert caps.context_length is not None
        chars = sum(len(m.content) for m in messages)
        if caps.too_long is not None and chars >= caps.too_long[0]:
            refused_chars, counted = caps.too_long
            raise ModelError("bad_request", f"the prompt ({chars} characters) does not fit {self.name}'s context of "
                             f"{caps.context_length} tokens: the server counted {counted} tokens in a prompt of "
                             f"{refused_chars} characters and refused it; not sent")
        prompt = int(chars / (caps.chars_per_token or _CHARS_PER_TOKEN)) + 8 * len(messages)
        room = caps.context_length - prompt
        if room < 1:
            return budget  # the estimate says it does not fit: the server, which counts, decides
        return min(budget, room) if isinstance(budget, int) else room

    def _response(self, completion: Any) -> ModelResponse:
        try:
            choice = completion.choices[0]
            text = choice.message.content or ""
            usage = completion.usage
            tokens = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage is not None else Usage()
            return ModelResponse(text=text, model=completion.model or self.model, finish_reason=choice.finish_reason,
                                 logprobs=parse_logprobs(choice.logprobs), usage=tokens)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            raise malformed(self.name, "no usable choice in the completion") from None


def parse_logprobs(logprobs: Any) -> tuple[TokenLogprob, ...] | None:
    """Per-token logprobs in either shape servers send: OpenAI's `content[]` entries with `top_logprobs`
    lists, or the completions-style `tokens`/`token_logprobs`/`top_logprobs` ({token: logprob} per
    position) that llama.cpp, vLLM and Ollama have used."""
    if logprobs is None:
        return None
    data = logprobs.model_dump() if hasattr(logprobs, "model_dump") else dict(logprobs)
    content = data.get("content")
    if content is not None:
        return tuple(
            TokenLogprob(t["token"], float(t["logprob"]),
                         tuple((a["token"], float(a["logprob"])) for a in t.get("top_logprobs") or ()))
            for t in content)
    tokens, chosen = data.get("tokens"), data.get("token_logprobs")
    if tokens is None or chosen is None:
        return None
    tops = data.get("top_logprobs") or [None] * len(tokens)
    return tuple(
        TokenLogprob(token, float(lp), tuple(sorted(((a, float(b)) for a, b in (top or {}).items()),
                                                    key=lambda pair: pair[1], reverse=True)))
        for token, lp, top in zip(tokens, chosen, tops, strict=False))
