"""Attribute names of the OpenTelemetry GenAI semantic conventions (latest experimental) and Verdict's own.

Plain string constants, precomputed once: the hot path only does dict stores with them.
"""

from __future__ import annotations

import os

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"  # deprecated; only with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai/dup
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TOP_P = "gen_ai.request.top_p"
REQUEST_TOP_K = "gen_ai.request.top_k"
REQUEST_SEED = "gen_ai.request.seed"
REQUEST_STOP_SEQUENCES = "gen_ai.request.stop_sequences"
REQUEST_FREQUENCY_PENALTY = "gen_ai.request.frequency_penalty"
REQUEST_PRESENCE_PENALTY = "gen_ai.request.presence_penalty"
REQUEST_CHOICE_COUNT = "gen_ai.request.choice.count"
REQUEST_STREAM = "gen_ai.request.stream"
REQUEST_ENCODING_FORMATS = "gen_ai.request.encoding_formats"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
EMBEDDINGS_DIMENSION_COUNT = "gen_ai.embeddings.dimension.count"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
ERROR_TYPE_OTHER = "_OTHER"

OPERATION_CHAT = "chat"
OPERATION_EMBEDDINGS = "embeddings"

# Verdict's own attributes.
INTENT_KEY = "verdict.intent_key"
WORKLOAD = "verdict.workload"
TENANT_ID = "verdict.tenant_id"

# Context key that GenAI instrumentations (OpenLLMetry and others) set to suppress nested
# inference spans; honoured, and set while a Verdict inference span is current.
SUPPRESS_LANGUAGE_MODEL_KEY = "suppress_language_model_instrumentation"

_STABILITY_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"


def emit_deprecated_system() -> bool:
    """Whether to also emit the deprecated `gen_ai.system` (opt-in value `gen_ai/dup`)."""
    values = {v.strip() for v in os.environ.get(_STABILITY_ENV, "").split(",")}
    return "gen_ai/dup" in values


# Exception modules whose classes are named by their top-level package (openai.RateLimitError).
_PACKAGE_PREFIXES = ("openai", "anthropic", "httpx2", "httpx")


def error_type(exc: BaseException) -> str:
    """The canonical `error.type` of an exception: `openai.RateLimitError`, `TimeoutError`, ..."""
    cls = type(exc)
    module = cls.__module__ or ""
    if module == "builtins":
        return cls.__qualname__
    top = module.partition(".")[0]
    if top in _PACKAGE_PREFIXES:
        return f"{top}.{cls.__qualname__}"
    if not module or "<" in cls.__qualname__:
        return ERROR_TYPE_OTHER
    return f"{module}.{cls.__qualname__}"
