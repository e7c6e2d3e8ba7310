"""Schema: the pydantic models units exchange.

Fields may be declared with a scale as their default (`score: Scale = DiscreteScale((1, 5))`): the field
becomes required and validated against the scale. Schemas allow extra fields so that name-casting can
append fields without dropping any.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, create_model

from verdict.scale import Scale

if TYPE_CHECKING:  # pydantic's metaclass by name for the checker only: its module is private
    from pydantic._internal._model_construction import ModelMetaclass as _ModelMeta
else:
    _ModelMeta = type(BaseModel)


class _SchemaMeta(_ModelMeta):
    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any):
        annotations = namespace.setdefault("__annotations__", {})
        for field, default in list(namespace.items()):
            if isinstance(default, Scale):
                annotations[field] = default.annotation()
                del namespace[field]
        return super().__new__(mcs, name, bases, namespace, **kwargs)


class Schema(BaseModel, metaclass=_SchemaMeta):
    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    _of_cache: ClassVar[dict[tuple[tuple[str, Any], ...], type[Schema]]] = {}
    _of_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def of(cls, **values: Any) -> Schema:
        """An instance of an ad-hoc schema whose fields are the given values (types inferred)."""
        return cls.of_type(**{k: type(v) for k, v in values.items()}).model_construct(**values)

    @classmethod
    def of_type(cls, **types: Any) -> type[Schema]:
        """An ad-hoc schema class with the given field types; classes are cached, so this is cheap."""
        key = tuple(types.items())
        cached = cls._of_cache.get(key)
        if cached is None:
            with cls._of_lock:
                cached = cls._of_cache.get(key) or create_model(  # type: ignore[call-overload]  # fields given as **dict
                    "Schema", __base__=Schema, **{k: (t, ...) for k, t in types.items()}
                )
                cls._of_cache[key] = cached
        return cached


def describe(schema: type[BaseModel]) -> str:
    """`Name{field: type, ...}` for error messages that must name a schema precisely."""
    parts = ", ".join(f"{n}: {_type_name(f.annotation)}" for n, f in schema.model_fields.items())
    return f"{schema.__qualname__}{{{parts}}}"


def _type_name(annotation: Any) -> str:
    return annotation.__name__ if isinstance(annotation, type) else str(annotation).replace("typing.", "")
