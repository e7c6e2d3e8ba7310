"""Via: which model a unit (or a container's members) calls, with retries and sampling params.

Units, containers and extractors all turn a model string into a Model here, so none of them imports
another to do it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from verdict.graph.errors import ConfigurationError
from verdict.models.base import Model
from verdict.models.provider import CACHE_SALT


@dataclass(frozen=True, slots=True)
class Via:
    """Which model a unit calls, how often a reply it cannot extract is retried, and sampling params."""

    model: Model
    retries: int = 3
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ConfigurationError(f"retries must be >= 0, got {self.retries}")


def resolve_model(spec: str | Model) -> Model:
    if isinstance(spec, str):
        from verdict.models.registry import resolve_model as resolve

        try:
            return resolve(spec)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
    if not isinstance(spec, Model):
        raise ConfigurationError(f"a model is a 'provider/name' string or a Model, not {type(spec).__name__}")
    return spec


# The sampling parameters a unit or judge takes by name: what the OpenAI and Anthropic APIs share or name
# (an OpenAI-compatible server gets the ones its SDK method lacks, e.g. top_k, in the request body), and the
# cache salt. Anything else a server takes (llama.cpp's min_p, vLLM's repetition_penalty, ...) goes in
# explicitly as extra_body={...}, so a misspelt keyword is an error, not a silent extra field.
SAMPLING_PARAMS = frozenset({
    "temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens", "seed", "stop", "stop_sequences",
    "presence_penalty", "frequency_penalty", "logit_bias", "reasoning_effort", "service_tier", "user",
    "metadata", "extra_body", "extra_headers", "extra_query", CACHE_SALT,
})


def check_params(params: Mapping[str, Any], who: str) -> None:
    """TypeError naming the keyword arguments of `who` that are not sampling parameters."""
    unknown = sorted(set(params) - SAMPLING_PARAMS)
    if unknown:
        raise TypeError(f"{who} got unexpected keyword argument(s) {', '.join(map(repr, unknown))}: the sampling "
                        f"parameters are {', '.join(sorted(SAMPLING_PARAMS - {CACHE_SALT}))}; pass what else a "
                        "server takes as extra_body={...}")
    extra = params.get("extra_body")
    if extra is not None and not isinstance(extra, Mapping):
        raise TypeError(f"{who}: extra_body must be a mapping of request fields, not {type(extra).__name__}")


def make_via(model: str | Model | None, policy_or_name: str | Model | None, retries: int,
             params: dict[str, Any]) -> Via:
    """`.via()` of units and containers; `policy_or_name=` is the seed library's keyword for the model."""
    check_params(params, "via()")
    chosen = model if model is not None else policy_or_name
    if chosen is None or (model is not None and policy_or_name is not None):
        raise ConfigurationError("via() needs the model once: positionally or as policy_or_name=")
    return Via(resolve_model(chosen), retries, params)
