"""Unit: one step of a judge graph, configured with chainable directives.

A model-calling unit declares a ResponseSchema (and optionally InputSchema and OutputSchema), a prompt and
a model (`.via`); CPU units (`kind = "cpu"`: maps and pools) override `compute`. Units hold definitions
only: per-sample state lives in the executor, so one materialised graph serves every sample.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self, cast

from pydantic import BaseModel

from verdict.graph.compose import Node
from verdict.graph.errors import ConfigurationError
from verdict.graph.prompt import Prompt, as_template
from verdict.graph.schema import Schema
from verdict.graph.via import Via, make_via
from verdict.models.base import Model

if TYPE_CHECKING:
    from verdict.extract import Extractor
    from verdict.graph.template import CompiledTemplate, PreviousView

PropagateFn = Callable[[Any, Any, Any, Any], Schema]


def _full_signature(fn: Any) -> PropagateFn:
    if not callable(fn):
        raise ConfigurationError(f"propagate() needs a function, not {type(fn).__name__}")
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no introspectable signature (some builtins): the full one is assumed
        return cast(PropagateFn, fn)
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) == 1 and not any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return lambda unit, previous, input, output: fn(output)
    return cast(PropagateFn, fn)


class Unit(Node):
    ResponseSchema: type[Schema]  # a class attribute, or set per instance (built from a rubric or scale)
    InputSchema: ClassVar[type[Schema] | None] = None
    OutputSchema: ClassVar[type[Schema] | None] = None
    kind: ClassVar[Literal["io", "cpu"]] = "io"
    # Template used when `.prompt()` was not called (None: the unit must be given one).
    default_prompt: ClassVar[str | None] = None

    def __init__(self, name: str | None = None) -> None:
        self.name = name or type(self).__name__.removesuffix("Unit").lower() or "unit"
        self.via_config: Via | None = None
        self.template: CompiledTemplate | None = None
        self.extractor: Extractor | None = None
        self.propagate_fn: PropagateFn | None = None
        self.pinned = False
        # Edges, in definition order; `>>` appends to them.
        self.dependencies: list[Unit] = []
        self.dependents: list[Unit] = []

    # --- directives -------------------------------------------------------------------------------
    def via(self, model: str | Model | None = None, retries: int = 3, *, policy_or_name: str | Model | None = None,
            **params: Any) -> Self:
        self.via_config = make_via(model, policy_or_name, retries, params)
        return self

    def prompt(self, template: str | type[Prompt]) -> Self:
        self.template = as_template(template)
        return self

    def extract(self, extractor: Extractor) -> Self:
        self.extractor = extractor
        return self

    def propagate(self, fn: PropagateFn | Callable[[Any], Schema]) -> Self:
        """fn(unit, previous, input, output) -> Schema replaces the unit's output; a one-argument
        fn(output), as the seed library writes it, is called with the output alone."""
        self.propagate_fn = _full_signature(fn)
        return self

    def pin(self) -> Self:
        """Run once per run and share the result with every sample."""
        self.pinned = True
        return self

    # --- composition (`>>` is Node's) ---------------------------------------------------------------
    def roots(self) -> list[Unit]:
        return [self]

    def leaves(self) -> list[Unit]:
        return [self]

    def clone(self, mapping: dict[Unit, Unit]) -> Unit:
        twin = copy.copy(self)
        twin.dependencies, twin.dependents = [], []
        mapping[self] = twin
        return twin

    # --- behaviour ----------------------------------------------------------------------------------
    def response_schema(self) -> type[Schema]:
        schema = getattr(self, "ResponseSchema", None)
        if schema is None:
            raise ConfigurationError(f"unit {self.name!r} ({type(self).__name__}) declares no ResponseSchema")
        return cast(type[Schema], schema)  # a class attribute declared type[Schema]

    def output_schema(self, response: type[Schema] | None, inputs: list[type[Schema] | None]) -> type[Schema] | None:
        """The schema of this unit's output given its dependencies' output schemas (None = unknown until
        run time, e.g. after `.propagate`)."""
        if self.propagate_fn is not None:
            return None
        return self.OutputSchema or response

    def process(self, input: Any, response: Schema) -> Schema:
        """Turn the extracted response into the output (identity unless OutputSchema differs)."""
        return response

    def compute(self, input: Any, previous: PreviousView) -> BaseModel:
        """The work of a CPU unit."""
        raise NotImplementedError(f"{type(self).__name__} is a CPU unit without compute()")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
