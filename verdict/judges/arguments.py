"""The model a judge calls, from its arguments: `Judge(model)`, or seed 003's `PairwiseJudge(provider=..., model=...)`.

Seed 003 (`verdict_eval`) passes a provider adapter object and a model name. Here a provider is a name
(`provider="openai", model="gpt-4o-mini"` is `"openai/gpt-4o-mini"`) or a Model client that already names its
model; an adapter object of another package has no meaning here and is refused with a TypeError saying
what to pass instead.
"""

from __future__ import annotations

from typing import Any

from verdict.graph.via import resolve_model
from verdict.models.base import Model


def judge_model(model: str | Model | None, provider: Any, who: str) -> Model:
    if provider is None:
        if model is None:
            raise TypeError(f"{who} needs a model: a 'provider/name' string or a Model")
        return resolve_model(model)
    if isinstance(provider, Model):
        if model is not None and model not in (provider, getattr(provider, "model", None), provider.name):
            raise TypeError(f"{who}: provider= is the Model {provider.name!r}, but model={model!r} names another "
                            "model; pass one Model (or one 'provider/name' string) as model")
        return provider
    if isinstance(provider, str):
        if not isinstance(model, str) or "/" in model:
            raise TypeError(f"{who}: with provider={provider!r}, model= is the model's name on that provider "
                            f"(e.g. model='gpt-4o-mini'), not {model!r}")
        return resolve_model(f"{provider}/{model}")
    raise TypeError(f"{who}: provider= takes a provider name ('openai', 'anthropic') or a verdict Model, not "
                    f"{type(provider).__name__}; provider adapter objects of other packages are not supported here: "
                    f"write {who.removesuffix('()')}('openai/<model>') or pass a Model such as "
                    "OpenAIModel('<model>', base_url=...)")
