"""Judges built on the graph engine."""

from verdict.judges.units import CategoricalJudgeUnit, JudgeUnit, PairwiseJudgeUnit

__all__ = ["CategoricalJudgeUnit", "JudgeUnit", "PairwiseJudgeUnit"]
