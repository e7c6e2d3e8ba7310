"""Judges built on the graph engine: scale units, rubric judges, ensembles, pairwise comparison."""

from verdict.judges.ensemble import EnsembleJudgment, JudgeEnsemble
from verdict.judges.judge import GradingItem, Judge, Judgment, JudgmentStatus, Verdict
from verdict.judges.pairwise import (
    PairwiseJudge,
    PairwiseJudgeEnsemble,
    PairwiseJudgment,
    PairwiseStatus,
    PairwiseVerdict,
    position_flip_rate,
)
from verdict.judges.ranking import rank_models
from verdict.judges.rubric import (
    CONVERSATION_RUBRIC,
    DEFAULT_RUBRIC,
    Dimension,
    Rubric,
    load_rubric,
)
from verdict.judges.units import CategoricalJudgeUnit, JudgeUnit, PairwiseJudgeUnit

__all__ = [
    "CONVERSATION_RUBRIC", "DEFAULT_RUBRIC", "CategoricalJudgeUnit", "Dimension", "EnsembleJudgment", "GradingItem", "Judge",
    "JudgeEnsemble", "JudgeUnit", "Judgment", "JudgmentStatus", "PairwiseJudge", "PairwiseJudgeEnsemble",
    "PairwiseJudgeUnit", "PairwiseJudgment", "PairwiseStatus", "PairwiseVerdict", "Rubric", "Verdict",
    "load_rubric", "position_flip_rate", "rank_models",
]
