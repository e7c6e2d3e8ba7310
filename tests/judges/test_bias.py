"""Bias checks: scripted judges with a known bias are caught, an unbiased one is not."""

import math

import pytest

from tests.judges.replies import asked_dimensions, graded_answer, rubric_reply, shown
from verdict.graph.errors import ConfigurationError
from verdict.judges.bias import INJECTION, PADDING, check_bias, inject, pad, to_markdown
from verdict.judges.judge import Judge
from verdict.judges.pairwise import PairwiseJudge
from verdict.models.base import ModelError
from verdict.models.scripted import ScriptedModel

ITEMS = [{"answer": f"The fee is {n} dollars. It is charged monthly.", "query": "What is the fee?",
          "context": f"The fee is {n} dollars per month."} for n in range(5, 11)]
PAIRS = [("What is the fee?", f"The fee is {n} dollars.", f"It costs {n} dollars a month.") for n in range(5, 11)]


def rubric_judge(decide):
    """decide(answer) -> verdict for 'completeness'; everything else PASS."""
    model = ScriptedModel(lambda r: rubric_reply({"completeness": decide(graded_answer(r))},
                                                 dimensions=asked_dimensions(r)))
    return Judge(model, retries=0)


def test_perturbations_keep_the_original_content():
    answer = "First point. Second point!"
    assert pad(answer).startswith(answer) and pad(answer).endswith(PADDING)
    assert to_markdown(answer) == "**Answer**\n\n- First point.\n- Second point!"
    assert inject(answer) == answer + INJECTION


def test_an_unbiased_judge_does_not_move():
    report = check_bias(rubric_judge(lambda answer: "FAIL"), ITEMS)
    assert set(report.findings) == {"verbosity", "formatting", "self_injection"}
    for finding in report.findings.values():
        assert (finding.probes, finding.usable, finding.moved, finding.rate) == (6, 6, 0, 0.0)
        assert finding.high > 0  # six probes cannot prove the absence of bias


def test_a_length_biased_judge_is_caught_on_verbosity_only():
    judge = rubric_judge(lambda answer: "PASS" if len(answer) > 120 else "FAIL")
    report = check_bias(judge, ITEMS)
    verbosity = report.findings["verbosity"]
    assert (verbosity.moved, verbosity.toward_perturbed, verbosity.rate) == (6, 6, 1.0)
    assert verbosity.by_dimension == {"completeness": 6}
    assert report.findings["formatting"].moved == 0
    assert report.fingerprint == judge.fingerprint


def test_an_injectable_judge_is_caught_on_self_injection():
    report = check_bias(rubric_judge(lambda answer: "PASS" if "full marks" in answer else "FAIL"), ITEMS,
                        kinds=["self_injection"])
    assert list(report.findings) == ["self_injection"] and report.findings["self_injection"].rate == 1.0


def test_a_markdown_loving_judge_is_caught_on_formatting():
    report = check_bias(rubric_judge(lambda answer: "PASS" if answer.startswith("**") else "FAIL"), ITEMS,
                        kinds=["formatting"])
    assert report.findings["formatting"].moved == 6


def test_unusable_probes_are_left_out_and_counted():
    def flaky(answer):
        if PADDING in answer and "5 dollars" in answer:
            raise ModelError("server_error", "HTTP 500")
        return "FAIL"

    finding = check_bias(rubric_judge(flaky), ITEMS, kinds=["verbosity"]).findings["verbosity"]
    assert (finding.probes, finding.usable, finding.moved) == (6, 5, 0)


def pairwise_judge(decide):
    """decide(shown_first, shown_second) -> marker letter."""
    return PairwiseJudge(ScriptedModel(lambda r: f"[[{decide(*shown(r))}]]"), retries=0)


def test_a_first_position_biased_pairwise_judge_is_caught():
    report = check_bias(pairwise_judge(lambda first, second: "A"), PAIRS, kinds=["position"])
    position = report.findings["position"]
    assert (position.moved, position.toward_perturbed, position.rate) == (6, 6, 1.0)


def test_an_unbiased_pairwise_judge_moves_on_nothing():
    # Prefers the cheaper-sounding answer by content only, in either position and whatever the wrapping.
    def decide(first, second):
        return "A" if "costs" in first else "B"

    report = check_bias(pairwise_judge(decide), PAIRS)
    assert set(report.findings) == {"position", "verbosity", "formatting", "self_injection"}
    assert all(f.moved == 0 and f.usable == 6 for f in report.findings.values())


def test_a_verbosity_biased_pairwise_judge_moves_towards_the_padded_answer():
    report = check_bias(pairwise_judge(lambda first, second: "A" if len(first) > len(second) else "B"), PAIRS,
                        kinds=["verbosity"])
    verbosity = report.findings["verbosity"]
    assert verbosity.moved == 6 and verbosity.toward_perturbed == 6


def test_position_does_not_apply_to_a_rubric_judge():
    with pytest.raises(ConfigurationError, match=r"\['position'\] do not apply to a Judge"):
        check_bias(rubric_judge(lambda a: "PASS"), ITEMS, kinds=["position"])


def test_no_items_is_an_error_and_no_usable_probes_is_nan():
    with pytest.raises(ValueError, match="at least one item"):
        check_bias(rubric_judge(lambda a: "PASS"), [])
    broken = PairwiseJudge(ScriptedModel([ModelError("auth", "HTTP 401")]), retries=0)
    finding = check_bias(broken, PAIRS[:2], kinds=["position"]).findings["position"]
    assert finding.usable == 0 and math.isnan(finding.rate)
