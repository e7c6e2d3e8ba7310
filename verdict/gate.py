"""The regression gate: run a judge over a fixed suite of cases and decide against a pass rate.

`evaluate_gate` is what `verdict gate` (verdict_daemon.cli.gate) and `verdict.testing.assert_pass_rate`
run. Cases have the sentinel shape (verdict.sentinel); results hold redacted content only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verdict.sentinel import (
    ExampleResult,
    Outcome,
    SentinelSet,
    finite_bounds,
    grade_examples,
    pass_rate,
    result_dict,
)


@dataclass(frozen=True, slots=True)
class GateResult:
    passed: bool  # the gated figure is at or above the threshold and no case errored
    cases_fingerprint: str
    evaluator_fingerprint: str
    cases: int
    usable: int
    errors: int
    passes: int
    pass_rate: float | None
    pass_rate_low: float | None
    pass_rate_high: float | None
    gated_on: str  # "pass_rate" or "wilson_lower_bound"
    min_pass_rate: float
    results: tuple[ExampleResult, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "cases_fingerprint": self.cases_fingerprint,
                "evaluator_fingerprint": self.evaluator_fingerprint, "cases": self.cases, "usable": self.usable,
                "errors": self.errors, "passes": self.passes, "pass_rate": self.pass_rate,
                "pass_rate_low": self.pass_rate_low, "pass_rate_high": self.pass_rate_high,
                "gated_on": self.gated_on, "min_pass_rate": self.min_pass_rate,
                "results": [result_dict(r) for r in self.results]}

    def table(self) -> str:
        """A plain-text table of every case and the summary line (redacted content only)."""
        width = max([len("case"), *(len(r.id) for r in self.results)])
        lines = [f"{'case':<{width}}  outcome  detail"]
        for r in self.results:
            detail = r.error if r.outcome is Outcome.ERROR else ", ".join(
                f"{d}={dict(r.verdicts).get(d, 'not graded')}" for d in r.mismatches)
            lines.append(f"{r.id:<{width}}  {r.outcome.value:<7}  {detail or ''}".rstrip())
        rate = "n/a" if self.pass_rate is None else f"{self.pass_rate:.3f}"
        low = "n/a" if self.pass_rate_low is None else f"{self.pass_rate_low:.3f}"
        high = "n/a" if self.pass_rate_high is None else f"{self.pass_rate_high:.3f}"
        lines.append(f"{self.passes}/{self.usable} passed, {self.errors} error(s); pass rate {rate} "
                     f"(95% Wilson {low}-{high}); gate: {self.gated_on} >= {self.min_pass_rate} -> "
                     f"{'PASS' if self.passed else 'FAIL'}")
        return "\n".join(lines)


def evaluate_gate(cases: SentinelSet, judge: Any, *, min_pass_rate: float, use_lower_bound: bool = False,
                  progress: Callable[[int, int], None] | None = None, max_workers: int = 16) -> GateResult:
    """Grade every case; `progress(done, total)` is called after each batch of cases."""
    if not isinstance(min_pass_rate, int | float) or not 0.0 <= min_pass_rate <= 1.0:
        raise ValueError(f"min_pass_rate must be in [0, 1], got {min_pass_rate!r}")
    results = grade_examples(judge, cases.examples, max_workers=max_workers, progress=progress)
    rate = pass_rate(results)
    gated_on = "wilson_lower_bound" if use_lower_bound else "pass_rate"
    value = rate.low if use_lower_bound else rate.value
    errors = len(results) - rate.trials
    passed = errors == 0 and rate.trials > 0 and value >= min_pass_rate
    return GateResult(passed, cases.fingerprint, judge.fingerprint, len(results), rate.trials, errors,
                      rate.successes, *finite_bounds(rate), gated_on, float(min_pass_rate), tuple(results))
