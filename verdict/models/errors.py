"""Turn SDK and transport exceptions into ModelError with a closed `kind`, without provider text.

Both official SDKs share the exception shapes (APITimeoutError ⊂ APIConnectionError,
APIStatusError with `status_code`, `response.headers` and the decoded error `body`), so one
classifier serves both. Messages carry the model name, HTTP status and the provider's short
error code only: never the provider's free text, request content or credentials.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from .base import ModelError
from .retry import parse_retry_after

# Identifier-like codes only ("rate_limit_exceeded", "overloaded_error"): nothing key- or text-shaped.
_CODE = re.compile(r"[a-z_]{1,40}")


def _error_code(body: Any) -> str | None:
    """The provider's short error code/type from an error body, if it looks like an identifier."""
    if not isinstance(body, Mapping):
        return None
    inner = body.get("error", body)
    if not isinstance(inner, Mapping):
        return None
    for field in ("code", "type"):
        value = inner.get(field)
        if isinstance(value, str) and _CODE.fullmatch(value):
            return value
    return None


def status_error(model: str, status: int, headers: Mapping[str, str], body: Any) -> ModelError:
    code = _error_code(body)
    message = f"HTTP {status} from {model}" + (f" ({code})" if code else "")
    retry_after = parse_retry_after(headers)
    if status == 429:
        kind, retryable = "rate_limited", True
    elif status == 408:
        kind, retryable = "timeout", True
    elif status >= 500:
        kind, retryable = "server_error", True
    elif status in (401, 403):
        kind, retryable = "auth", False
    elif status in (400, 404, 413, 422):
        kind, retryable = "bad_request", False
    else:
        kind, retryable = "other", status == 409  # 409: lock contention on the provider side
    # The (non-standard) x-should-retry header is the server's explicit word on retrying.
    hint = headers.get("x-should-retry")
    if hint in ("true", "false"):
        retryable = hint == "true"
    return ModelError(kind, message, retryable=retryable, retry_after=retry_after)  # type: ignore[arg-type]


def malformed(model: str, what: str) -> ModelError:
    # A garbled 200 body usually comes from a proxy or an overloaded server: worth another try.
    return ModelError("malformed_reply", f"{model} sent an unusable reply: {what}", retryable=True)


def sdk_error(exc: BaseException, sdk: ModuleType, model: str) -> ModelError | None:
    """The ModelError for an exception raised by an `openai`/`anthropic` call; None if unknown."""
    try:  # the HTTP library under the SDK: httpx2 for openai 3.x / anthropic 2.x, httpx before
        import httpx2 as http
    except ImportError:  # pragma: no cover - older SDKs
        import httpx as http

    if isinstance(exc, sdk.APITimeoutError | http.TimeoutException):
        return ModelError("timeout", f"{model} did not answer within the timeout", retryable=True)
    if isinstance(exc, sdk.APIConnectionError | http.TransportError):
        return ModelError("connection", f"could not reach {model}", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        return status_error(model, exc.status_code, exc.response.headers, exc.body)
    if isinstance(exc, sdk.APIResponseValidationError | ValueError):
        return malformed(model, "the body is not the expected JSON")
    if isinstance(exc, sdk.APIError):
        return ModelError("other", f"{model} call failed ({type(exc).__name__})")
    return None
