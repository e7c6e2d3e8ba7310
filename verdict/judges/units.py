"""Built-in judge units: a score on a scale, a pairwise preference, a category.

Each answers with one scale-typed field (optionally preceded by an explanation, so the model reasons
before it commits). Their default prompts can be replaced with `.prompt(...)`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

from pydantic import create_model

from verdict.graph.schema import Schema
from verdict.graph.unit import Unit
from verdict.scale import DiscreteScale, Scale


@lru_cache(maxsize=256)
def _response_schema(name: str, field: str, scale: Scale, explanation: bool) -> type[Schema]:
    fields: dict[str, Any] = {"explanation": (str, ...)} if explanation else {}
    fields[field] = (scale.annotation(), ...)
    return create_model(name, __base__=Schema, **fields)


class _ScaleJudge(Unit):
    field: ClassVar[str]

    def __init__(self, scale: Scale, explanation: bool, name: str | None) -> None:
        super().__init__(name)
        self.scale = scale
        self.explanation = explanation
        self.ResponseSchema = _response_schema(type(self).__name__.replace("Unit", "Response"),
                                               self.field, scale, explanation)
        answer = f"{self.field} ({scale.instruction})"
        # What the default prompt asks for; computed once, it is rendered on every call.
        self.answer_instruction = f"a short explanation, then the {answer}" if explanation else f"only the {answer}"


class JudgeUnit(_ScaleJudge):
    """A score on a scale: `JudgeUnit(DiscreteScale((1, 5)))` answers `{score}`."""

    field = "score"
    default_prompt = """
        @system
        You are a careful, impartial evaluator.
        @user
        Evaluate the following sample.

        {source}

        Answer with {unit.answer_instruction}.
    """

    def __init__(self, scale: Scale | None = None, explanation: bool = False, name: str | None = None) -> None:
        super().__init__(scale or DiscreteScale((1, 5)), explanation, name)


class PairwiseJudgeUnit(_ScaleJudge):
    """Which of two responses is better: `{choice}` is 'A' or 'B' (or 'tie' with allow_tie=True).
    The default prompt reads `source.response_a` and `source.response_b`."""

    field = "choice"
    default_prompt = """
        @system
        You are a careful, impartial evaluator comparing two responses.
        @user
        Response A:
        {source.response_a}

        Response B:
        {source.response_b}

        Which response is better? Answer with {unit.answer_instruction}.
    """

    def __init__(self, allow_tie: bool = False, explanation: bool = False, name: str | None = None) -> None:
        super().__init__(DiscreteScale(["A", "tie", "B"] if allow_tie else ["A", "B"]), explanation, name)


class CategoricalJudgeUnit(_ScaleJudge):
    """One category out of a fixed set: `CategoricalJudgeUnit(['positive', 'negative'])` answers
    `{category}`."""

    field = "category"
    default_prompt = """
        @system
        You are a careful, impartial annotator.
        @user
        Classify the following sample.

        {source}

        Answer with {unit.answer_instruction}.
    """

    def __init__(self, categories: DiscreteScale | list[str] | tuple[str, ...], explanation: bool = False,
                 name: str | None = None) -> None:
        scale = categories if isinstance(categories, DiscreteScale) else DiscreteScale(list(categories))
        super().__init__(scale, explanation, name)
