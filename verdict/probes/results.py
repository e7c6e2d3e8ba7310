"""Probe results and the weighted gates computed from them.

Metric schema 2 (current): a probe passes only when every expectation passes; a probe's weight enters
the suite and category pass rates once; errored probes stay in the denominators (an outage is not a
pass). Weighted expectation agreement (each expectation weighted by its probe's weight) is a separate
diagnostic. Metric schema 1 (suites 1.x) gated on that per-expectation figure instead: the same
results give different numbers under the two schemas, which is why runs are never compared across them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"  # not executed or not judged: the target, the follow-up or the judge failed


@dataclass(frozen=True, slots=True)
class ExpectationResult:
    dimension: str
    expected: str  # PASS | FAIL
    outcome: Outcome
    verdict: str | None  # the judge's PASS | FAIL | UNCLEAR; None when not judged
    evaluator_fingerprint: str | None  # the one-dimension judge that graded (or would have graded) it
    rationale: str | None = None  # redacted
    error: str | None = None  # redacted: "target: ...", "follow_up: ...", "judge: ..."

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASS


@dataclass(frozen=True, slots=True)
class ProbeResult:
    name: str
    category: str
    weight: float  # as counted: a sanitised historical weight may be 0
    outcome: Outcome
    expectations: tuple[ExpectationResult, ...]
    transcript: tuple[tuple[str, str], ...] = ()  # (role, redacted text), the target's replies included
    error: str | None = None  # redacted; the first execution error

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASS


def probe_outcome(expectations: Sequence[ExpectationResult]) -> Outcome:
    """ERROR if any expectation could not be judged, else PASS only when there are expectations and every one
    passed (a historical record without any fails closed)."""
    if any(e.outcome is Outcome.ERROR for e in expectations):
        return Outcome.ERROR
    return Outcome.PASS if expectations and all(e.passed for e in expectations) else Outcome.FAIL


@dataclass(frozen=True, slots=True)
class Score:
    probes: int
    passed: int
    failed: int
    errors: int
    weight: float  # total weight in the denominator
    pass_rate: float | None  # the gated figure under the run's metric schema; None without weight
    expectation_agreement: float | None  # diagnostic: weighted share of passing expectations


def _ratio(numerator: Iterable[float], denominator: Iterable[float]) -> float | None:
    total = math.fsum(denominator)
    return math.fsum(numerator) / total if total > 0 else None


def score(results: Sequence[ProbeResult], metric_schema_version: int) -> Score:
    by_probe = _ratio([r.weight for r in results if r.passed], [r.weight for r in results])
    by_expectation = _ratio([r.weight for r in results for e in r.expectations if e.passed],
                            [r.weight for r in results for e in r.expectations])
    return Score(len(results), sum(r.outcome is Outcome.PASS for r in results),
                 sum(r.outcome is Outcome.FAIL for r in results), sum(r.outcome is Outcome.ERROR for r in results),
                 math.fsum(r.weight for r in results),
                 by_probe if metric_schema_version >= 2 else by_expectation, by_expectation)


def category_scores(results: Sequence[ProbeResult], metric_schema_version: int) -> dict[str, Score]:
    """Category -> Score, categories in first-seen order."""
    groups: dict[str, list[ProbeResult]] = {}
    for result in results:
        groups.setdefault(result.category, []).append(result)
    return {category: score(group, metric_schema_version) for category, group in groups.items()}
