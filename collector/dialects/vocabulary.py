"""One vocabulary for every dialect's row: message roles in the GenAI semconv set, model names without a
router's `provider/` prefix (LiteLLM's `openai/gpt-4o-mini`: the provider column takes the prefix when the span
named none; the raw name stays in `attributes`).

Runs on every span after the dialect mapper (collector.dialects.normalise). Semconv message columns arrive as
the sender's JSON text: they are parsed only when a role outside the set appears in them (a regex scan first).
"""

from __future__ import annotations

import re

import orjson

from collector.dialects.common import GenAIFields, Messages, parse_json, provider_name

ROLES = frozenset({"system", "user", "assistant", "tool"})
# Other senders' names for the same roles (Gemini `model`, LangChain `human`/`ai`, OpenAI `developer`/`function`,
# smolagents' `tool-call` (the assistant's request, as text) and `tool-response` (the tool's observation)).
ROLE_ALIASES = {"model": "assistant", "ai": "assistant", "human": "user", "developer": "system", "function": "tool",
                "tool-call": "assistant", "tool-response": "tool"}
_ROLE = re.compile(r'"role"\s*:\s*"([^"\\]*)"')
# Where `_ROLE` would find a role outside ROLES (one C-level search instead of findall and a Python check per role;
# None means every role `_ROLE` finds is in ROLES: tests/collector/test_vocabulary.py compares them).
_OTHER_ROLE = re.compile(r'"role"\s*:\s*"(?!(?:' + "|".join(sorted(ROLES)) + r')")[^"\\]*"')


def role_name(value: str) -> str:
    """A role in the semconv set where it has a known name; anything else as sent."""
    if value in ROLES:
        return value
    lowered = value.strip().lower()
    return lowered if lowered in ROLES else ROLE_ALIASES.get(lowered, value)


def messages(column: Messages, unnamed: str | None = None) -> tuple[Messages, tuple[str, ...]]:
    """(the column with its roles in the semconv set, the roles left as sent because nothing names them). With
    `unnamed`, a role nothing names becomes that one instead (an inference's output is the model's: OpenLLMetry
    writes `unknown` for a streamed LangChain reply)."""
    if isinstance(column, str):
        if _OTHER_ROLE.search(column) is None:
            return column, ()
        found = _ROLE.findall(column)
        if all(r in ROLES for r in found):
            return column, ()
        parsed = parse_json(column)
        if not isinstance(parsed, list):
            return column, tuple(r for r in found if role_name(r) not in ROLES)
        fixed, left = messages(parsed, unnamed)
        return orjson.dumps(fixed).decode(), left
    if not isinstance(column, list):
        return column, ()
    out: list = []
    unknown = []
    for message in column:
        role = message.get("role") if isinstance(message, dict) else None
        if isinstance(role, str) and role not in ROLES:
            named = role_name(role)
            if named not in ROLES:
                unknown.append(named)
                named = unnamed or named
            message = {**message, "role": named}
        out.append(message)
    return out, tuple(unknown)


def model_and_provider(fields: GenAIFields) -> GenAIFields:
    """`provider/model` names (LiteLLM, OpenRouter-style routers) -> the model, and the provider when unstated."""
    changes: dict = {}
    for column in ("request_model", "response_model"):
        name = getattr(fields, column)
        if name and "/" in name:
            prefix, _, model = name.partition("/")
            provider = provider_name(prefix)
            if model and provider in _ROUTED_PROVIDERS:
                changes[column] = model
                if fields.provider in (None, "litellm") and "provider" not in changes:
                    changes["provider"] = provider
    return fields._replace(**changes) if changes else fields


def operation_name(fields: GenAIFields) -> GenAIFields:
    """One operation name per kind of call: a Gemini call is `generate_content` (the semconv name for its API),
    also from senders that call every model call `chat` (OpenInference's google-genai LLM spans)."""
    if fields.operation == "chat" and fields.provider in _GEMINI:
        return fields._replace(operation="generate_content")
    return fields


_GEMINI = frozenset({"gcp.gemini", "gcp.vertex_ai"})
# Prefixes that name a provider (not a model family or an organisation on a model hub: `meta-llama/...`).
_ROUTED_PROVIDERS = frozenset({"openai", "anthropic", "aws.bedrock", "gcp.gemini", "gcp.vertex_ai", "azure.ai.openai",
                               "mistral_ai", "cohere", "groq", "deepseek", "perplexity", "x_ai", "ollama"})
