"""A one-unit judge graph's result for one sample, as the judges read it: output or error, usage, attempts."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from verdict.graph.errors import UnitError
from verdict.graph.results import SampleResult
from verdict.models.base import Usage


@dataclass(frozen=True, slots=True)
class UnitOutcome:
    output: BaseModel | None
    error: UnitError | None
    usage: Usage  # the sample's usage: every attempt, failed or not
    attempts: int  # the engine's count: the attempt that succeeded, or the last one made


def unit_outcome(row: SampleResult, path: str) -> UnitOutcome:
    result = row[path]
    if isinstance(result, BaseModel):
        return UnitOutcome(result, None, row.usage, row.attempts[path])
    if isinstance(result, UnitError):
        return UnitOutcome(None, result, row.usage, result.attempts)
    return UnitOutcome(None, UnitError("internal", row.error or "the engine returned no result"), row.usage, 0)
