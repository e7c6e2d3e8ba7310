"""Alias of the seed's `verdict.common.judge`: the built-in judge units of `verdict.judges.units`, with the
seed's field name for a categorical judge's answer (`choice`, read by its prompts as `{previous.choice}`)."""

from verdict.judges.units import CategoricalJudgeUnit as _CategoricalJudgeUnit
from verdict.judges.units import JudgeUnit, PairwiseJudgeUnit

__all__ = ["CategoricalJudgeUnit", "JudgeUnit", "PairwiseJudgeUnit"]


class CategoricalJudgeUnit(_CategoricalJudgeUnit):
    """`verdict.judges.units.CategoricalJudgeUnit` answering `{choice}` (the seed's name), not `{category}`."""

    field = "choice"
