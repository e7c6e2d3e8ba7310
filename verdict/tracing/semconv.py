"""The SDK's semconv rules: the deprecated-attribute opt-in, `error.type` values, the suppression key.

The attribute names themselves live in `verdict.semconv`, shared with the collector and the views.
"""

from __future__ import annotations

import os

from verdict.semconv import ERROR_TYPE_OTHER

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
