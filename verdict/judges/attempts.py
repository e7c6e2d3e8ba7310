"""What the judges need from an engine run beyond a unit's output: attempt counts and a uniform outcome.

The engine reports `UnitError.attempts` on failure only. The judges' extractors count attempts
themselves: the engine renders a node's messages once per sample and reuses that tuple for every attempt,
so "same messages object as this thread's previous attempt" means "next attempt of the same call".
(Requested from the engine in notes/engine-requests.md; this goes away when it reports attempts.)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pydantic import BaseModel

from verdict.graph.errors import UnitError
from verdict.graph.results import SampleResult
from verdict.models.base import Message, Usage

# Extra field the judges' extractors set on the validated reply.
ATTEMPT_FIELD = "attempt"


class AttemptCounter:
    def __init__(self) -> None:
        self._local = threading.local()

    def next(self, messages: tuple[Message, ...]) -> int:
        local = self._local
        if getattr(local, "messages", None) is messages:
            local.count += 1
        else:
            local.messages, local.count = messages, 1
        return local.count


@dataclass(frozen=True, slots=True)
class UnitOutcome:
    """One unit's result for one sample: its output or its error, the sample's usage and the attempts made."""

    output: BaseModel | None
    error: UnitError | None
    usage: Usage
    attempts: int


def unit_outcome(row: SampleResult, unit_name: str) -> UnitOutcome:
    result = row[unit_name]
    if isinstance(result, BaseModel):
        return UnitOutcome(result, None, row.usage, int(getattr(result, ATTEMPT_FIELD, 1)))
    if isinstance(result, UnitError):
        return UnitOutcome(None, result, row.usage, result.attempts)
    return UnitOutcome(None, UnitError("internal", row.error or "the engine returned no result"), row.usage, 0)
