"""Name-casting: how one unit's output becomes the next unit's input.

Append-only and non-destructive: every source field is kept; a required target field the source lacks
is copied from the first compatible source field (same type and same constraints); a target field with a
default the source lacks gets its default.
Plans are computed once when the pipeline is built; applying one per sample is a dict update.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from verdict.graph.errors import ConfigurationError
from verdict.graph.schema import describe


@dataclass(frozen=True, slots=True)
class CastPlan:
    target: type[BaseModel]
    # (target field, source field) pairs to copy under the target's name.
    renames: tuple[tuple[str, str], ...]

    def apply(self, fields: dict[str, Any]) -> BaseModel:
        for target_name, source_name in self.renames:
            fields[target_name] = fields[source_name]
        return self.target.model_construct(**fields)


def compatible(a: Any, b: Any) -> bool:
    """Two pydantic FieldInfos hold the same kind of value: same type and same constraints."""
    return a.annotation == b.annotation and [_constraint(m) for m in a.metadata] == [_constraint(m) for m in b.metadata]


def _constraint(metadata: Any) -> Any:
    # pydantic keeps `pattern=`/`strict=` in objects without value equality: compare those by their fields.
    if type(metadata).__eq__ is object.__eq__ and hasattr(metadata, "__dict__"):  # type: ignore[comparison-overlap]  # an identity check mypy types apart
        return type(metadata).__qualname__, vars(metadata)
    return metadata


def plan_cast(source_fields: Mapping[str, Any], source_label: str, target: type[BaseModel]) -> CastPlan:
    """Plan casting an output with `source_fields` (name -> FieldInfo) to `target`, or raise naming both."""
    renames: list[tuple[str, str]] = []
    for name, field in target.model_fields.items():
        if name in source_fields:
            if not compatible(source_fields[name], field):
                raise ConfigurationError(
                    f"cannot cast {source_label} to {describe(target)}: field {name!r} has a different type"
                )
            continue
        if not field.is_required():
            continue  # model_construct fills the default
        match = next((s for s, f in source_fields.items() if compatible(f, field)), None)
        if match is None:
            raise ConfigurationError(
                f"cannot cast {source_label} to {describe(target)}: no field compatible with {name!r}"
            )
        renames.append((name, match))
    return CastPlan(target, tuple(renames))
