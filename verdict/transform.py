"""CPU units: MapUnit (a Python function over the dependencies' outputs) and pooling.

They run on the pipeline's CPU executor, never on the model-call threads. Pools read one or more fields
from every dependency; a dependency without the field is a ConfigurationError at build time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from functools import lru_cache
from statistics import fmean
from typing import Any, cast

from pydantic import BaseModel

from verdict.graph.errors import ConfigurationError
from verdict.graph.schema import Schema, describe
from verdict.graph.template import PreviousView
from verdict.graph.unit import Unit
from verdict.scale import DiscreteScale, Scale, scale_of


class MapUnit(Unit):
    """`MapUnit(fn)`: fn(previous) -> Schema or mapping, where `previous` is iterable over the dependencies'
    outputs in definition order and supports `previous.score` / `previous.judge[1]` like prompts do.
    Declare `output_schema=` to let the pipeline check name-casts into the next unit at build time."""

    kind = "cpu"

    def __init__(self, fn: Callable[[PreviousView], Any], output_schema: type[Schema] | None = None,
                 name: str | None = None) -> None:
        super().__init__(name)
        self.fn = fn
        self.declared = output_schema

    def output_schema(self, response: type[Schema] | None, inputs: list[type[Schema] | None]) -> type[Schema] | None:
        return None if self.propagate_fn else self.declared

    def compute(self, input: Any, previous: PreviousView) -> BaseModel:
        result = self.fn(previous)
        if isinstance(result, Mapping):
            result = Schema.of(**result)
        if self.declared is not None and not isinstance(result, self.declared):
            result = self.declared.model_validate(result.model_dump())
        return cast(BaseModel, result)  # the function's model (a mapping became one above)


class PoolUnit(Unit):
    """Reduces `fields` across all dependencies into one output with the same field names. Without
    `fields`: `score` when the dependencies have one, else every field they declare (the seed library's
    `MaxPoolUnit()` over categorical judges)."""

    kind = "cpu"

    def __init__(self, fields: str | list[str] | None = None, name: str | None = None) -> None:
        super().__init__(name)
        self.fields = None if fields is None else [fields] if isinstance(fields, str) else list(fields)

    def pooled(self, schema: type[BaseModel]) -> list[str]:
        """The fields pooled from dependencies whose output schema is `schema`."""
        if self.fields is not None:
            return self.fields
        return ["score"] if "score" in schema.model_fields else list(schema.model_fields)

    def output_schema(self, response: type[Schema] | None, inputs: list[type[Schema] | None]) -> type[Schema] | None:
        if not inputs:
            raise ConfigurationError(f"{type(self).__name__} needs at least one dependency to pool")
        known = [s for s in inputs if s is not None]
        for schema in known:
            missing = [f for f in self.pooled(known[0]) if f not in schema.model_fields]
            if missing:
                raise ConfigurationError(f"{type(self).__name__} pools {missing}, which {describe(schema)} lacks")
        if len(known) < len(inputs) or self.propagate_fn:
            return None
        return Schema.of_type(**{f: self.field_type(known[0].model_fields[f]) for f in self.pooled(known[0])})

    def field_type(self, info: Any) -> Any:
        return info.annotation

    def pool(self, values: list[Any], scale: Scale | None) -> Any:
        raise NotImplementedError

    def compute(self, input: Any, previous: PreviousView) -> BaseModel:
        fields = self.pooled(type(previous[0]))
        scales = _field_scales(type(previous[0]), tuple(fields))  # type: ignore[arg-type]  # a class is hashable (mypy checks instances)
        return Schema.of(**{f: self.pool([getattr(o, f) for o in previous], scales[f]) for f in fields})


class MeanPoolUnit(PoolUnit):
    """Arithmetic mean (a float)."""

    def field_type(self, info: Any) -> Any:
        return float

    def pool(self, values: list[Any], scale: Scale | None) -> float:
        return fmean(values)


class MaxPoolUnit(PoolUnit):
    """Largest value; for a non-numeric DiscreteScale, the value latest on the scale."""

    def pool(self, values: list[Any], scale: Scale | None) -> Any:
        if isinstance(scale, DiscreteScale) and not scale.numeric:
            return max(values, key=scale.values.index)
        return max(values)


class MajorityPoolUnit(PoolUnit):
    """Most common value; a tie goes to the value seen first in dependency order."""

    def pool(self, values: list[Any], scale: Scale | None) -> Any:
        return Counter(values).most_common(1)[0][0]


@lru_cache(maxsize=256)
def _field_scales(schema: type[BaseModel], fields: tuple[str, ...]) -> dict[str, Scale | None]:
    """Scales of the pooled fields, looked up once per schema (pydantic's model_fields is slow per call)."""
    declared = schema.model_fields
    return {f: scale_of(declared[f]) if f in declared else None for f in fields}
