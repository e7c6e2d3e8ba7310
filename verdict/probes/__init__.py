"""Behaviour probes of a *target* model: weighted suites of prompts with judged expectations.

    from verdict.probes import resolve_suite, run_suite, load_artifact
    run = run_suite(resolve_suite("default"), "openai/gpt-4o", "openai/gpt-4o-mini")
    run.score.pass_rate, run.categories["sycophancy"].pass_rate, run.gate.passed

Not imported by `import verdict`; names resolve on first use. See docs/probes.md.
"""

from __future__ import annotations

from verdict._lazy import lazy_exports

_NAMES = {
    **dict.fromkeys(["Expectation", "Probe", "ProbeSuite", "PROBE_RUBRIC", "SuiteError", "load_suite",
                     "resolve_suite", "bundled_suites"], "verdict.probes.suite"),
    **dict.fromkeys(["Outcome", "ExpectationResult", "ProbeResult", "Score"], "verdict.probes.results"),
    **dict.fromkeys(["ProbeRun", "ProbeHistory", "Comparison", "ArtifactError", "IncomparableRuns",
                     "METRIC_SCHEMA_VERSION", "JUDGE_METHOD_VERSION", "load_artifact", "load_history",
                     "write_artifact", "write_tenant_artifact", "tenant_dir", "compare"], "verdict.probes.artifact"),
    "run_suite": "verdict.probes.runner",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
