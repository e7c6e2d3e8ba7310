"""Model clients the judges call. See docs/models.md.

Names are imported lazily so that `import verdict` never pulls in the provider SDKs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Model": "base", "ModelRequest": "base", "ModelResponse": "base", "Message": "base",
    "TokenLogprob": "base", "Usage": "base", "ModelError": "base",
    "resolve_model": "registry",
    "Provider": "registry", "register_provider": "registry",
    "OpenAIModel": "openai_model",
    "AnthropicModel": "anthropic_model",
    "RetryPolicy": "retry",
    "RateLimits": "ratelimit",
    "ResponseCache": "cache",
    "Price": "pricing", "PriceTable": "pricing",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'verdict.models' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
