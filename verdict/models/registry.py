"""`resolve_model("openai/gpt-4o-mini")`: model strings to Model instances.

Accepted: a Model instance (returned as is), "openai/<model>" (any OpenAI-compatible server via
`base_url=` or OPENAI_BASE_URL), "anthropic/<model>", and "<prefix>/<model>" for a provider another
package registered (below; the demo's offline judge "offline/heuristic-judge" is one). Only the first
"/" separates the provider, so "openai/meta-llama/Llama-3.1-8B-Instruct" names a vLLM model. Strings
resolved without options are cached: every unit naming the same model shares one client, connection
pool and rate limiter. Client options can ride in the string itself,
`"openai/NAME?json_schema=false&max_concurrency=1"` (see options.py and docs/models.md).

Bare names resolve the way users of the seed library expect: `gpt-*`, `o1*`, `o3*`, `o4*` to
"openai/…" and `claude-*` to "anthropic/…". The explicit "provider/model" form is preferred: it is
the only one that works for every other model name.

Providers. `openai` and `anthropic` are built in. Other packages add providers without `verdict` importing
them (the SDK is the bottom layer): `register_provider(Provider(...))` at run time, or an entry point in
the group `verdict.model_providers` whose name is the prefix and whose value is a `Provider`. An entry
point is loaded the first time a model string names its prefix, in any process: the daemon resolves
`offline/heuristic-judge` from its config this way (`verdict_demo.judge`, declared in pyproject.toml).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from .base import Model
from .options import split_model_string

ENTRY_POINT_GROUP = "verdict.model_providers"
# Accepted besides the providers' "prefix/model" strings.
_OTHER_FORMS = ("a verdict.models.base.Model instance",
                'or a bare "gpt-*", "o1*", "o3*", "o4*" (OpenAI) or "claude-*" (Anthropic) name')
# Bare model names whose provider is unambiguous: (pattern, provider).
_BARE_NAMES = ((re.compile(r"gpt-|o[134](?:$|-)"), "openai"), (re.compile(r"claude-"), "anthropic"))
_PREFIX = re.compile(r"[a-z][a-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class Provider:
    prefix: str  # "openai" in "openai/gpt-4o-mini"
    build: Callable[[str, dict[str, Any]], Model]  # (model name, client options) -> the client
    form: str  # how errors name the strings it accepts: '"offline/heuristic-judge" (offline rubric judge)'

    def __post_init__(self) -> None:
        if not _PREFIX.fullmatch(self.prefix):
            raise ValueError(f"a provider prefix is lower-case [a-z][a-z0-9_-]*, got {self.prefix!r}")


_providers: dict[str, Provider] = {}
_instances: dict[str, Model] = {}
_lock = threading.Lock()


def register_provider(provider: Provider) -> None:
    """Make "<provider.prefix>/<model>" strings resolve through `provider.build`. A prefix is registered
    once: another provider for a taken prefix is a ValueError (the same one again is not)."""
    if not isinstance(provider, Provider):
        raise ValueError(f"register_provider takes a verdict.models.registry.Provider, not {type(provider).__name__}")
    with _lock:
        taken = _providers.get(provider.prefix)
        if taken is not None and taken != provider:
            raise ValueError(f"model provider {provider.prefix!r} is already registered ({taken.form})")
        _providers[provider.prefix] = provider


def provider_for(prefix: str) -> Provider | None:
    """The provider of `prefix`: a registered one, else its entry point's (loaded now); None when unknown."""
    with _lock:
        found = _providers.get(prefix)
    if found is None:
        for entry in entry_points(group=ENTRY_POINT_GROUP, name=prefix):
            register_provider(_load(entry))
            found = _providers[prefix]
    return found


def accepted_forms() -> list[str]:
    """Every provider's form, built-in ones first. Entry points not loaded yet are loaded to name theirs;
    one that cannot be loaded is named with the reason, not hidden."""
    broken = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in _providers:
            try:
                register_provider(_load(entry))
            except ValueError as exc:
                broken.append(f'"{entry.name}/<model>" ({exc})')
    with _lock:
        return [*(p.form for p in _providers.values()), *broken]


def _load(entry: EntryPoint) -> Provider:
    try:
        provider = entry.load()
    except Exception as exc:  # the plug-in's own import failed: say which, without its traceback
        raise ValueError(f"model provider {entry.name!r} ({entry.value}) cannot be loaded: "
                         f"{type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(provider, Provider) or provider.prefix != entry.name:
        raise ValueError(f"entry point {entry.name!r} ({entry.value}) in {ENTRY_POINT_GROUP} is not a Provider "
                         f"with prefix {entry.name!r}")
    return provider


def _openai(name: str, options: dict[str, Any]) -> Model:
    from .openai_model import OpenAIModel

    return OpenAIModel(name, **options)


def _anthropic(name: str, options: dict[str, Any]) -> Model:
    from .anthropic_model import AnthropicModel

    return AnthropicModel(name, **options)


register_provider(Provider("openai", _openai, '"openai/<model>" (OpenAI or any OpenAI-compatible server)'))
register_provider(Provider("anthropic", _anthropic, '"anthropic/<model>"'))


def _accepted() -> str:
    return ", ".join([*accepted_forms(), *_OTHER_FORMS])


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
        raise ValueError(f"model must be one of {_accepted()}; got {type(spec).__name__}")
    spec = qualified(spec)
    base, carried = split_model_string(spec)
    prefix, sep, name = base.partition("/")
    provider = provider_for(prefix) if sep else None
    if provider is None or not name.strip():
        raise ValueError(f"unknown model {spec!r}: use {_accepted()}")
    clash = sorted(set(carried) & set(options))
    if clash:
        raise ValueError(f"{clash} given both in the model string {spec!r} and as arguments")
    if options:
        return provider.build(name, {**carried, **options})
    with _lock:
        model = _instances.get(spec)
        if model is None:
            model = _instances[spec] = provider.build(name, carried)
        return model
