"""Verdict: LLM quality monitoring with statistics you can defend.

`import verdict` stays light (no duckdb, scipy, numpy or torch): public names resolve on first use.
"""

from __future__ import annotations

from verdict._lazy import lazy_exports

__version__ = "0.1.0"

_NAMES = {
    # tracing SDK
    **dict.fromkeys(
        ["init", "shutdown", "flush", "instrument", "uninstrument", "intent_context",
         "workload_context", "conversation_context", "carry_context"],
        "verdict.tracing",
    ),
    # redaction (stdlib only; shared by SDK, collector and artifacts)
    **dict.fromkeys(["Redactor", "redact_text", "redact_value"], "verdict.redact"),
    # judge-graph engine
    **dict.fromkeys(
        ["Unit", "Layer", "Block", "Pipeline", "Schema", "Prompt", "PromptRegistry", "ConfigurationError",
         "UnitError"],
        "verdict.graph",
    ),
    # judges
    **dict.fromkeys(["Judge", "JudgeEnsemble", "DEFAULT_RUBRIC", "CONVERSATION_RUBRIC", "PairwiseJudge", "PairwiseStatus",
                     "PairwiseVerdict"], "verdict.judges"),
    # drift, synthetic regressions, agreement
    "DriftDetector": "verdict.drift",
    "CorruptionInjector": "verdict.inject",
    "build_battery": "verdict.inject",
    "evaluate_agreement": "verdict.agreement",
    "EvidenceGate": "verdict.agreement",
    # user signals for judge correlation (the analysis itself: `from verdict.correlate import correlate`)
    "record_user_signal": "verdict.correlate",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
