"""pytest helpers: gate a test on a judge's pass rate over regression cases.

    from verdict.testing import assert_pass_rate

    def test_support_bot_quality():
        assert_pass_rate("tests/regression_cases.jsonl", Judge("openai/gpt-4o-mini"), at_least=0.9)

The `verdict_pass_rate` fixture is the same function; enable it with ``pytest_plugins = ["verdict.testing"]``
in a conftest.py (no entry point is registered, so installing Verdict changes no one's test run).
Case rules are those of `verdict gate` (verdict.sentinel): a case with labels passes when every label
matches; without labels, when every graded dimension is PASS. Any case the judge cannot grade fails the
assertion: an outage must not look like quality.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from verdict.gate import GateResult, evaluate_gate
from verdict.judges.rubric import DEFAULT_RUBRIC, Rubric
from verdict.sentinel import SentinelExample, SentinelSet, as_examples


def assert_pass_rate(cases: SentinelSet | Iterable[SentinelExample | Mapping[str, Any]] | str | Path, judge: Any,
                     at_least: float = 0.9, use_lower_bound: bool = False) -> GateResult:
    """Raise AssertionError (with the per-case table) unless the pass rate, or its 95 % Wilson lower bound,
    is at least `at_least` and every case was judged. Returns the GateResult otherwise."""
    # A Judge has a rubric; an ensemble's members do (cases are checked against the first member's).
    rubric = cast(Rubric, getattr(judge, "rubric", None) or getattr(next(iter(getattr(judge, "judges", ())), None),
                                                                    "rubric", DEFAULT_RUBRIC))
    result = evaluate_gate(as_examples(cases, rubric), judge, min_pass_rate=at_least,
                           use_lower_bound=use_lower_bound)
    if not result.passed:
        raise AssertionError(f"judge pass-rate gate failed\n{result.table()}")
    return result


@pytest.fixture
def verdict_pass_rate():
    """`verdict_pass_rate(cases, judge, at_least=0.9, use_lower_bound=False)`: assert_pass_rate as a fixture."""
    return assert_pass_rate
