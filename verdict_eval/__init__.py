"""Import path of seed 003 (`from verdict_eval import Judge, DEFAULT_RUBRIC, DriftDetector, …`): aliases of
the real names in `verdict`, not a second API (docs/architecture.md, "Seed spellings are aliases"). Names
resolve on first use, so importing this stays as light as `import verdict`."""

from __future__ import annotations

from verdict._lazy import lazy_exports

_NAMES = {
    **dict.fromkeys(["DEFAULT_RUBRIC", "Dimension", "Judge", "JudgeEnsemble", "Judgment", "JudgmentStatus",
                     "PairwiseJudge", "PairwiseJudgeEnsemble", "PairwiseJudgment", "PairwiseStatus",
                     "PairwiseVerdict", "Rubric", "Verdict", "rank_models"], "verdict.judges"),
    "DriftDetector": "verdict.drift",
    "CorruptionInjector": "verdict.inject",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
