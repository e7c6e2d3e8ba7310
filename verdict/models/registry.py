"""`resolve_model("openai/gpt-4o-mini")`: model strings to Model instances.

Accepted: a Model instance (returned as is), "openai/<model>" (any OpenAI-compatible server via
`base_url=` or OPENAI_BASE_URL) and "anthropic/<model>". Only the first "/" separates the
provider, so "openai/meta-llama/Llama-3.1-8B-Instruct" names a vLLM model. "offline/heuristic-judge"
is the demo's deterministic offline judge (verdict_daemon/demo/judge.py, no network). Strings resolved
without options are cached: every unit naming the same model shares one client, connection
pool and rate limiter. Client options can ride in the string itself,
`"openai/NAME?json_schema=false&max_concurrency=1"` (see options.py and docs/models.md).

Bare names resolve the way users of the seed library expect: `gpt-*`, `o1*`, `o3*`, `o4*` to
"openai/…" and `claude-*` to "anthropic/…". The explicit "provider/model" form is preferred: it is
the only one that works for every other model name.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from .base import Model
from .options import split_model_string

ACCEPTED_FORMS = ('"openai/<model>" (OpenAI or any OpenAI-compatible server)', '"anthropic/<model>"',
                  '"offline/heuristic-judge" (offline rubric judge)', "a verdict.models.base.Model instance",
                  'or a bare "gpt-*", "o1*", "o3*", "o4*" (OpenAI) or "claude-*" (Anthropic) name')
# Bare model names whose provider is unambiguous: (pattern, provider).
_BARE_NAMES = ((re.compile(r"gpt-|o[134](?:$|-)"), "openai"), (re.compile(r"claude-"), "anthropic"))
_instances: dict[str, Model] = {}
_lock = threading.Lock()


def _build(provider: str, name: str, options: dict[str, Any]) -> Model:
    if provider == "offline":
        if options:
            raise ValueError("the offline judge takes no options")
        from verdict_daemon.demo.judge import heuristic_judge

        return heuristic_judge(name)
    if provider == "openai":
        from .openai_model import OpenAIModel

        return OpenAIModel(name, **options)
    from .anthropic_model import AnthropicModel

    return AnthropicModel(name, **options)


def qualified(spec: str) -> str:
    """`spec` with its provider: "gpt-4o" -> "openai/gpt-4o"; any other string as it is."""
    if "/" not in spec.partition("?")[0]:
        for pattern, provider in _BARE_NAMES:
            if pattern.match(spec):
                return f"{provider}/{spec}"
    return spec


def resolve_model(spec: str | Model, **options: Any) -> Model:
    """The Model for `spec`; `options` go to the client (base_url, api_key, timeout, retry,
    rate_limits, cache, prices, ...). Raises ValueError naming the accepted forms."""
    if isinstance(spec, Model) and not isinstance(spec, str):
        if options:
            raise ValueError("options apply to model strings only, not to a Model instance")
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"model must be one of {', '.join(ACCEPTED_FORMS)}; got {type(spec).__name__}")
    spec = qualified(spec)
    base, carried = split_model_string(spec)
    provider, sep, name = base.partition("/")
    if not sep or provider not in ("openai", "anthropic", "offline") or not name.strip():
        raise ValueError(f"unknown model {spec!r}: use {', '.join(ACCEPTED_FORMS)}")
    clash = sorted(set(carried) & set(options))
    if clash:
        raise ValueError(f"{clash} given both in the model string {spec!r} and as arguments")
    if options:
        return _build(provider, name, {**carried, **options})
    with _lock:
        model = _instances.get(spec)
        if model is None:
            model = _instances[spec] = _build(provider, name, carried)
        return model
