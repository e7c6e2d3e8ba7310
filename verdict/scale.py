"""Scales: the value sets judges answer on, usable as Schema field types.

`score: Scale = DiscreteScale((1, 5))` inside a Schema becomes a validated field. The first value is the
worst and the last the best unless `end_is_worst=True`. Each scale renders its own instruction text and
tells token-probability extraction which tokens stand for which value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Literal, cast

from pydantic import Field

Value = int | float | str | bool


class Scale:
    """Base of all scales. Subclasses are frozen dataclasses, so equal scales compare and hash equal."""

    end_is_worst: bool

    def annotation(self) -> Any:
        """The pydantic field type a Schema field declared with this scale gets."""
        raise NotImplementedError

    @property
    def instruction(self) -> str:
        raise NotImplementedError

    @property
    def tokens(self) -> tuple[str, ...] | None:
        """The reply tokens that stand for the scale's values (None: not a finite token support)."""
        return None

    def value_of_token(self, token: str) -> Value | None:
        return None

    @property
    def worst(self) -> Value:
        raise NotImplementedError

    @property
    def best(self) -> Value:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.instruction


@dataclass(frozen=True, slots=True, init=False)
class DiscreteScale(Scale):
    """A finite ordered set: `DiscreteScale((1, 5))` is 1..5; `DiscreteScale(['A', 'B'])` is those values."""

    values: tuple[Value, ...]
    end_is_worst: bool

    def __init__(self, values: tuple[int, int] | Sequence[Value], end_is_worst: bool = False) -> None:
        if isinstance(values, tuple) and len(values) == 2 and all(type(v) is int for v in values):
            low, high = cast(tuple[int, int], values)  # two ints, checked above
            if low >= high:
                raise ValueError(f"DiscreteScale range {values!r} must go from low to high")
            resolved: tuple[Value, ...] = tuple(range(low, high + 1))
        else:
            resolved = tuple(values)
        if len(resolved) < 2:
            raise ValueError("a DiscreteScale needs at least two values")
        if len({str(v).strip().lower() for v in resolved}) != len(resolved):
            raise ValueError(f"DiscreteScale values {resolved!r} are not distinct as reply tokens")
        object.__setattr__(self, "values", resolved)
        object.__setattr__(self, "end_is_worst", end_is_worst)

    def annotation(self) -> Any:
        return Annotated[Literal[self.values], self]

    @property
    def ordered(self) -> tuple[Value, ...]:
        """Values from worst to best."""
        return tuple(reversed(self.values)) if self.end_is_worst else self.values

    @property
    def worst(self) -> Value:
        return self.ordered[0]

    @property
    def best(self) -> Value:
        return self.ordered[-1]

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, int | float) and not isinstance(v, bool) for v in self.values)

    @property
    def instruction(self) -> str:
        low, high = self.values[0], self.values[-1]
        if type(low) is int and type(high) is int and self.values == tuple(range(low, high + 1)):
            return f"an integer from {self.worst} (worst) to {self.best} (best)"
        listed = ", ".join(str(v) for v in self.ordered)
        return f"one of {listed} (from worst to best)"

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(str(v) for v in self.values)

    def value_of_token(self, token: str) -> Value | None:
        return _token_index(self.values).get(token.strip().lower())


@dataclass(frozen=True, slots=True)
class ContinuousScale(Scale):
    """A closed real interval [low, high]."""

    low: float
    high: float
    end_is_worst: bool = False

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"ContinuousScale({self.low}, {self.high}) needs low < high")

    def annotation(self) -> Any:
        return Annotated[float, Field(ge=self.low, le=self.high), self]

    @property
    def worst(self) -> float:
        return self.high if self.end_is_worst else self.low

    @property
    def best(self) -> float:
        return self.low if self.end_is_worst else self.high

    @property
    def instruction(self) -> str:
        return f"a number from {self.worst} (worst) to {self.best} (best)"


@dataclass(frozen=True, slots=True)
class BooleanScale(Scale):
    """False/True, answered as no/yes."""

    end_is_worst: bool = False

    def annotation(self) -> Any:
        return Annotated[bool, self]

    @property
    def worst(self) -> bool:
        return self.end_is_worst

    @property
    def best(self) -> bool:
        return not self.end_is_worst

    @property
    def instruction(self) -> str:
        return "yes or no"

    @property
    def tokens(self) -> tuple[str, ...]:
        return ("no", "yes")

    def value_of_token(self, token: str) -> bool | None:
        return _BOOLEAN_TOKENS.get(token.strip().lower())


_BOOLEAN_TOKENS = {"yes": True, "true": True, "no": False, "false": False}


@lru_cache(maxsize=256)
def _token_index(values: tuple[Value, ...]) -> dict[str, Value]:
    return {str(v).strip().lower(): v for v in values}


def scale_of(field_info: Any) -> Scale | None:
    """The scale a pydantic field was declared with, if any."""
    for item in field_info.metadata:
        if isinstance(item, Scale):
            return item
    return None
