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


def make_via(model: str | Model | None, policy_or_name: str | Model | None, retries: int,
             params: dict[str, Any]) -> Via:
    """`.via()` of units and containers; `policy_or_name=` is the seed library's keyword for the model."""
    chosen = model if model is not None else policy_or_name
    if chosen is None or (model is not None and policy_or_name is not None):
        raise ConfigurationError("via() needs the model once: positionally or as policy_or_name=")
    return Via(resolve_model(chosen), retries, params)
