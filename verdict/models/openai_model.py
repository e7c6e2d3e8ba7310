"""`openai/<model>`: the official `openai` client against OpenAI or any OpenAI-compatible server.

Chat Completions is used because every compatible server (vLLM, Ollama, llama.cpp, TGI)
implements it. JSON schemas go out as `response_format={"type": "json_schema", ...}` (strict
when the schema allows it); `top_logprobs` asks for `logprobs=True, top_logprobs=n`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from .base import Message, ModelRequest, ModelResponse, TokenLogprob, Usage
from .errors import malformed, sdk_error
from .provider import DEFAULT_TIMEOUT, ProviderModel, credentials, split_params

MAX_TOP_LOGPROBS = 20  # the OpenAI API's upper bound


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
        client: Any = None,
        **options: Any,
    ) -> None:
        import openai

        if client is None:
            api_key, base_url = credentials("openai", api_key, base_url, "OPENAI_API_KEY", "OPENAI_BASE_URL")
            client = openai.OpenAI(api_key=api_key, base_url=base_url, organization=organization)
        # Our RetryPolicy replaces the SDK's retries (see retry.py); the timeout is per attempt.
        self._client = client.with_options(max_retries=0, timeout=timeout)
        self._supports_logprobs = supports_logprobs
        self._supports_json_schema = supports_json_schema
        self._accepted = frozenset(inspect.signature(self._client.chat.completions.create).parameters)
        super().__init__(model, endpoint=str(self._client.base_url), timeout=timeout, **options)

    @property
    def supports_json_schema(self) -> bool:
        return self._supports_json_schema

    @property
    def supports_logprobs(self) -> bool:
        return self._supports_logprobs

    def _attempt(self, request: ModelRequest, params: dict[str, Any]) -> ModelResponse:
        import openai

        known, extra = split_params(params, self._accepted)
        kwargs: dict[str, Any] = {**known, "model": self.model, "messages": _messages(request.messages)}
        if extra:
            kwargs["extra_body"] = extra
        if request.json_schema is not None:
            schema = dict(request.json_schema)
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "response", "schema": schema, "strict": strict_compatible(schema)}}
        if request.top_logprobs is not None:
            kwargs["logprobs"] = True
            if request.top_logprobs > 0:
                kwargs["top_logprobs"] = min(request.top_logprobs, MAX_TOP_LOGPROBS)
        try:
            completion = self._client.chat.completions.create(**kwargs)
        except Exception as exc:
            error = sdk_error(exc, openai, self.name)
            if error is None:
                raise
            raise error from None
        return self._response(completion)

    def _response(self, completion: Any) -> ModelResponse:
        try:
            choice = completion.choices[0]
            text = choice.message.content or ""
            logprobs = None
            if choice.logprobs is not None and choice.logprobs.content is not None:
                logprobs = tuple(
                    TokenLogprob(t.token, float(t.logprob), tuple((a.token, float(a.logprob)) for a in t.top_logprobs or ()))
                    for t in choice.logprobs.content
                )
            usage = completion.usage
            tokens = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage is not None else Usage()
            return ModelResponse(text=text, model=completion.model or self.model, finish_reason=choice.finish_reason,
                                 logprobs=logprobs, usage=tokens)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            raise malformed(self.name, "no usable choice in the completion") from None
