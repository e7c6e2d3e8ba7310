"""Errors of the judge-graph engine and the error state a unit leaves in a sample's output."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


class ConfigurationError(ValueError):
    """The graph cannot run as declared; raised when the pipeline is built, never mid-run."""


class TemplateError(ConfigurationError):
    """A prompt template is malformed or uses an expression outside the allowed subset."""


class ExtractionError(ValueError):
    """A model reply could not be turned into the unit's ResponseSchema (the engine retries it)."""


UnitErrorKind = Literal["extraction", "model", "template", "upstream", "unit", "internal"]


@dataclass(frozen=True, slots=True)
class UnitError:
    """The result of a unit that could not produce an output. Never replaced by a default score."""

    kind: UnitErrorKind
    message: str
    attempts: int = 0
    reply: str | None = None  # the last reply the model gave, when it was unusable ("extraction")

    def __str__(self) -> str:
        suffix = f" after {self.attempts} attempt(s)" if self.attempts else ""
        return f"{self.kind}: {self.message}{suffix}"
