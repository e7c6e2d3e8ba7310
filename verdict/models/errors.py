"""Turn SDK and transport exceptions into ModelError with a closed `kind`.

Both official SDKs share the exception shapes (APITimeoutError ⊂ APIConnectionError,
APIStatusError with `status_code`, `response.headers` and the decoded error `body`), so one
classifier serves both. Messages carry the model name, HTTP status, the provider's short error
code and the server's own error text, redacted (credentials, e-mail addresses, ...) and cut to
`MAX_SERVER_TEXT` characters: the reason a server gives ("Input should be 'text' or 'json_object'")
is what an operator needs to fix a refusal.

A 4xx/500 whose text or `param` names a request parameter is `unsupported_parameter` (not retried:
the same request gets the same answer); the client may drop or replace that parameter
(openai_model.py's capability negotiation).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from .base import ModelError
from .limits import ReplyTooLarge
from .retry import parse_retry_after

# Identifier-like codes only ("rate_limit_exceeded", "overloaded_error"): nothing key- or text-shaped.
_CODE = re.compile(r"[a-z_]{1,40}")
MAX_SERVER_TEXT = 300
# Python traceback frames some servers put in their error text (llama-cpp-python): they name local paths and
# source lines, never the reason, so they are dropped before the text is kept.
_FRAMES = re.compile(r'Traceback \(most recent call last\):|^\s*File "[^"\n]*", line \d+(?:, in [^\n]*)?$', re.MULTILINE)
# Request parameters a server may refuse, as they appear in its error text; the one named first in the
# text wins ("'max_tokens' is not supported ... use 'max_completion_tokens'"). Phrases of servers that validate `response_format.type`
# without naming it (llama-cpp-python: "Input should be 'text' or 'json_object'") map to it too.
_PARAMETERS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE)) for name, pattern in (
        ("response_format", r"response_format|json_schema|'json_object'|\bjson_object\b"),
        ("max_completion_tokens", r"\bmax_completion_tokens\b"),
        ("max_tokens", r"\bmax_tokens\b"),
        ("top_logprobs", r"\btop_logprobs\b"),
        ("logprobs", r"\blogprobs\b"),
        ("stream_options", r"\bstream_options\b"),
        ("seed", r"\bseed\b"),
    ))
# A validation error's location, as pydantic prints it ("'loc': ('body', 'frequency_penalty')", llama-cpp-python)
# or FastAPI sends it ('"loc": ["body", "top_logprobs"]'): it names the refused parameter exactly.
_LOCATION = re.compile(r"""['"]loc['"]:\s*[(\[]\s*['"]body['"],\s*['"](\w+)['"]""")
# Statuses with which servers refuse a request they cannot serve (llama.cpp answers 500 to a
# response_format it does not know); 401/403/404/408/429 and the gateway errors mean something else.
_REFUSAL_STATUSES = frozenset({400, 422, 500, 501})


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


def server_text(body: Any) -> str:
    """The server's error message (OpenAI `error.message`, FastAPI `detail`, or the raw body), redacted,
    whitespace collapsed, at most MAX_SERVER_TEXT characters."""
    text: Any = body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        text = inner.get("message", inner.get("detail", inner)) if isinstance(inner, Mapping) else inner
    if text is None:
        return ""
    from verdict.redact import redact_text

    text = _FRAMES.sub("", text if isinstance(text, str) else str(text))
    flat = " ".join(redact_text(text).split())
    return flat if len(flat) <= MAX_SERVER_TEXT else flat[: MAX_SERVER_TEXT - 3] + "..."


def refused_parameter(status: int, body: Any, text: str) -> str | None:
    """The request parameter a refusal names (its `param` field or its text), None if it names none."""
    if status not in _REFUSAL_STATUSES:
        return None
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    param = inner.get("param") if isinstance(inner, Mapping) else None
    candidates = [param] if isinstance(param, str) and param else []
    candidates.append(text)
    for candidate in candidates:
        location = _LOCATION.search(candidate)
        if location:
            return location.group(1)
        found = [(match.start(), name) for name, pattern in _PARAMETERS if (match := pattern.search(candidate))]
        if found:
            return min(found)[1]
    return None


def status_error(model: str, status: int, headers: Mapping[str, str], body: Any) -> ModelError:
    code = _error_code(body)
    text = server_text(body)
    message = f"HTTP {status} from {model}" + (f" ({code})" if code else "") + (f": {text}" if text else "")
    signature = f"{status} {text}"
    parameter = refused_parameter(status, body, text)
    if parameter is not None:
        return ModelError("unsupported_parameter", f"{message} [refused parameter: {parameter}]",
                          parameter=parameter, signature=signature)
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
    return ModelError(kind, message, retryable=retryable, retry_after=retry_after,  # type: ignore[arg-type]  # kind: one of ErrorKind's literals above
                      signature=signature)


def malformed(model: str, what: str) -> ModelError:
    # A garbled 200 body usually comes from a proxy or an overloaded server: worth another try.
    return ModelError("malformed_reply", f"{model} sent an unusable reply: {what}", retryable=True)


def sdk_error(exc: BaseException, sdk: ModuleType, model: str) -> ModelError | None:
    """The ModelError for an exception raised by an `openai`/`anthropic` call; None if unknown."""
    try:  # the HTTP library under the SDK: httpx2 for openai 3.x / anthropic 2.x, httpx before
        import httpx2 as http
    except ImportError:  # pragma: no cover - older SDKs
        import httpx as http  # type: ignore[no-redef, import-not-found]  # not installed with current SDKs

    too_large = exc if isinstance(exc, ReplyTooLarge) else exc.__cause__
    if isinstance(too_large, ReplyTooLarge):
        return ModelError("too_large", f"{model} sent a reply larger than the client's limit of {too_large.limit} "
                          "bytes (max_reply_bytes); it was not read further")
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
