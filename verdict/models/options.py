"""Client options carried by a model string: `openai/NAME?json_schema=false&max_concurrency=1`.

The one place model strings are split into provider, model name and options, so that `Judge("…")`,
`--judge-model`, `VERDICT_JUDGE_MODEL` and `[[evaluators]] model` all accept the same options. Each
option is validated here (type and range); an unknown one is a ValueError naming the known ones.
Values are percent-decoded, so a base URL can be given as `base_url=http%3A%2F%2F127.0.0.1%3A8080%2Fv1`
(or unencoded, as long as it has no `&`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("expected an integer >= 1")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError("expected a number > 0")
    return value


def _url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise ValueError("expected an http:// or https:// URL")
    return text


@dataclass(frozen=True, slots=True)
class Option:
    keyword: str  # the client constructor's keyword argument
    parse: Callable[[str], Any]
    providers: tuple[str, ...]
    help: str


OPTIONS: dict[str, Option] = {
    "json_schema": Option("supports_json_schema", _bool, ("openai",),
                          "false: never send response_format json_schema (start at json_object)"),
    "logprobs": Option("supports_logprobs", _bool, ("openai",), "false: the server returns no logprobs"),
    "context_length": Option("context_length", _positive_int, ("openai",),
                             "the model's context window in tokens (prompt + max_tokens stay within it)"),
    "max_concurrency": Option("max_concurrency", _positive_int, ("openai", "anthropic"),
                              "at most this many calls in flight to this endpoint (1 for a serial local server)"),
    "timeout": Option("timeout", _positive_float, ("openai", "anthropic"),
                      "seconds per attempt, counted from when the request is sent: a deadline for the whole reply"),
    "max_reply_bytes": Option("max_reply_bytes", _positive_int, ("openai", "anthropic"),
                              "the largest reply body read, in bytes (default 8 MiB); a larger one is a too_large error"),
    "base_url": Option("base_url", _url, ("openai", "anthropic"), "the server's base URL"),
}


def split_model_string(spec: str) -> tuple[str, dict[str, Any]]:
    """("provider/name", {constructor keyword: value}) of `provider/name?option=value&...`."""
    base, sep, query = spec.partition("?")
    if not sep:
        return spec, {}
    provider = base.partition("/")[0]
    known = ", ".join(sorted(OPTIONS))
    options: dict[str, Any] = {}
    for part in query.split("&"):
        key, eq, raw = part.partition("=")
        option = OPTIONS.get(key)
        if option is None:
            raise ValueError(f"unknown option {key!r} in model string {spec!r}: known options are {known}")
        if provider not in option.providers:
            raise ValueError(f"option {key!r} does not apply to {provider!r} models (model string {spec!r})")
        if not eq:
            raise ValueError(f"option {key!r} in model string {spec!r} needs a value ({key}=...)")
        try:
            value = option.parse(unquote(raw))
        except ValueError as exc:
            raise ValueError(f"option {key}={raw!r} in model string {spec!r}: {exc}") from None
        if option.keyword in options:
            raise ValueError(f"option {key!r} is given twice in model string {spec!r}")
        options[option.keyword] = value
    return base, options
