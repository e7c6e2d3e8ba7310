"""`anthropic/<model>`: the official `anthropic` client against the Messages API.

Structured output uses forced tool use, which every Claude model and Anthropic-compatible
gateway supports: the JSON schema becomes the input schema of a single tool `respond`,
`tool_choice` forces it, and the tool's input (JSON) is the reply text. The Messages API has no
log-probabilities, so `supports_logprobs` is False. System messages become the `system`
parameter; OpenAI-style `stop` is translated to `stop_sequences`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

from .base import ModelRequest, ModelResponse, Usage
from .errors import malformed, sdk_error
from .limits import install
from .provider import DEFAULT_TIMEOUT, ProviderModel, credentials, split_params

TOOL_NAME = "respond"
DEFAULT_MAX_TOKENS = 1024  # the Messages API requires max_tokens
_WRAPPED = "value"  # tool inputs must be objects; other schemas are wrapped under this key


def tool_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """(input schema for the tool, whether the reply must be unwrapped from `value`)."""
    if schema.get("type") == "object":
        return dict(schema), False
    defs = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
    inner = {k: v for k, v in schema.items() if k not in defs}
    return {"type": "object", "properties": {_WRAPPED: inner}, "required": [_WRAPPED], **defs}, True


class AnthropicModel(ProviderModel):
    """Thread-safe; one HTTP connection pool per instance (`resolve_model` reuses instances)."""

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        client: Any = None,
        **options: Any,
    ) -> None:
        import anthropic

        if client is None:
            api_key, base_url = credentials("anthropic", api_key, base_url, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
            client = anthropic.Anthropic(api_key=api_key, base_url=base_url)
        # Our RetryPolicy replaces the SDK's retries (see retry.py); the timeout is per attempt.
        self._client = client.with_options(max_retries=0, timeout=timeout)
        install(self._client._client)  # the SDK's HTTP client: whole-reply deadline, size limit, request count
        self.default_max_tokens = default_max_tokens
        self._accepted = frozenset(inspect.signature(self._client.messages.create).parameters)
        super().__init__(model, endpoint=str(self._client.base_url), timeout=timeout, **options)

    @property
    def supports_json_schema(self) -> bool:
        return True

    @property
    def supports_logprobs(self) -> bool:
        return False

    def _attempt(self, request: ModelRequest, params: dict[str, Any]) -> ModelResponse:
        import anthropic

        params = dict(params)
        if "stop" in params:
            stop = params.pop("stop")
            params["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        known, extra = split_params(params, self._accepted)
        kwargs: dict[str, Any] = {
            "max_tokens": self.default_max_tokens, **known, "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"],
        }
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        if system:
            kwargs["system"] = system
        if extra:
            kwargs["extra_body"] = extra
        wrapped = False
        if request.json_schema is not None:
            input_schema, wrapped = tool_schema(request.json_schema)
            kwargs["tools"] = [{"name": TOOL_NAME, "description": "Give the response in this structure.",
                                "input_schema": input_schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        try:
            message = self._client.messages.create(**{"timeout": self.start_attempt(kwargs["max_tokens"]), **kwargs})
        except Exception as exc:
            error = sdk_error(exc, anthropic, self.name)
            if error is None:
                raise
            raise error from None
        if not isinstance(message, anthropic.types.Message):
            raise malformed(self.name, "the body is not a Messages API message")
        return self._response(message, structured=request.json_schema is not None, wrapped=wrapped)

    def _response(self, message: Any, *, structured: bool, wrapped: bool) -> ModelResponse:
        try:
            text = "".join(block.text for block in message.content if block.type == "text")
            if structured:
                calls = [b.input for b in message.content if b.type == "tool_use" and b.name == TOOL_NAME]
                if calls:
                    value = calls[0][_WRAPPED] if wrapped and _WRAPPED in calls[0] else calls[0]
                    text = json.dumps(value, ensure_ascii=False)
            usage = message.usage
            input_tokens = (usage.input_tokens or 0) + (usage.cache_creation_input_tokens or 0) \
                + (usage.cache_read_input_tokens or 0)
            return ModelResponse(text=text, model=message.model or self.model, finish_reason=message.stop_reason,
                                 usage=Usage(input_tokens, usage.output_tokens or 0))
        except (AttributeError, KeyError, TypeError, ValueError):
            raise malformed(self.name, "no usable content in the message") from None
