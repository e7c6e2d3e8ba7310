"""The judge protocol small and local models can follow: output budgets sized to the rubric, one dimension
per call (verdict first), lenient-but-checked evidence, and pairwise markers as real models write them."""

from __future__ import annotations

import json

import pytest

from tests.judges.replies import graded_answer
from verdict.extract import json_schema
from verdict.graph.errors import ExtractionError
from verdict.judges.judge import (
    DimensionReply,
    Judge,
    JudgmentStatus,
    Verdict,
    normalise,
    output_budget,
    quote_occurs,
)
from verdict.judges.pairwise import read_marker
from verdict.judges.rubric import DEFAULT_RUBRIC
from verdict.models.scripted import ScriptedModel

ANSWER = "Paris is the capital of France.\nIt has about 2.1 million inhabitants."
CONTEXT = "Paris, the capital of France, has 2.1 million inhabitants."


def dimension_of(request) -> str:
    return request.messages[0].content.split('Criterion "', 1)[1].split('"', 1)[0]


def one_dimension(verdicts=None, evidence=None):
    """A scripted per-dimension judge: PASS unless `verdicts` says otherwise, quoting `evidence`."""
    verdicts, evidence = verdicts or {}, evidence or {}

    def reply(request):
        name = dimension_of(request)
        return json.dumps({"verdict": verdicts.get(name, "PASS"), "rationale": f"{name} is fine.",
                           "evidence": evidence.get(name, [])})
    return reply


def test_the_default_output_budget_is_sized_to_the_rubric_not_a_flat_2048():
    model = ScriptedModel(["{}"])
    five = Judge(model).params["max_tokens"]
    two = Judge(model, DEFAULT_RUBRIC.__class__("r", "1", DEFAULT_RUBRIC.dimensions[:2])).params["max_tokens"]
    assert five == output_budget(5, per_dimension=False) < 2048 and two < five
    assert Judge(model, per_dimension=True).params["max_tokens"] == output_budget(5, per_dimension=True) < two
    assert Judge(model, max_tokens=4000).params["max_tokens"] == 4000  # an explicit budget wins


def test_per_dimension_grades_each_dimension_in_its_own_verdict_first_call():
    model = ScriptedModel(one_dimension({"completeness": "FAIL"}, {"groundedness": ["Paris is the capital"]}),
                          record=True)
    judgment = Judge(model, per_dimension=True).grade(ANSWER, query="Capital and population?", context=CONTEXT)
    assert judgment.status is JudgmentStatus.VALID
    assert judgment.verdicts == {d: Verdict.FAIL if d == "completeness" else Verdict.PASS
                                 for d in DEFAULT_RUBRIC.dimension_names}
    assert judgment["groundedness"].evidence == ("Paris is the capital",)
    assert sorted(dimension_of(r) for r in model.requests) == sorted(DEFAULT_RUBRIC.dimension_names)
    for request in model.requests:
        assert graded_answer(request) == ANSWER  # the answer alone in the last message, as in the rubric prompt
        assert request.json_schema is not None
        assert list(request.json_schema["properties"]) == ["verdict", "rationale", "evidence"]  # verdict first
        assert request.json_schema == json_schema(DimensionReply)
        assert request.json_schema["additionalProperties"] is False  # strict structured-output modes accept it
    assert judgment.usage.input_tokens > 0 and judgment.attempts == 1


def test_per_dimension_without_context_skips_the_context_dependent_dimension():
    model = ScriptedModel(one_dimension(), record=True)
    judgment = Judge(model, per_dimension=True).grade(ANSWER, query="Capital?")
    assert judgment.status is JudgmentStatus.VALID and judgment.skipped == ("groundedness",)
    assert "groundedness" not in {dimension_of(r) for r in model.requests} and len(model.requests) == 4


def test_a_failing_dimension_makes_the_judgment_error_and_names_the_dimension():
    judge = Judge(ScriptedModel(one_dimension(evidence={"safety": ["Lyon is the capital"]})), per_dimension=True,
                  retries=0)
    judgment = judge.grade(ANSWER, context=CONTEXT)
    assert judgment.status is JudgmentStatus.ERROR and judgment.dimensions == ()
    assert (judgment.error or "").startswith("safety: extraction: ") and "'Lyon is the capital'" in (judgment.error or "")


def test_per_dimension_is_a_different_evaluator():
    model = ScriptedModel(["{}"])
    assert Judge(model).fingerprint != Judge(model, per_dimension=True).fingerprint
    assert Judge(model, per_dimension=True).fingerprint == Judge(model, per_dimension=True).fingerprint


@pytest.mark.parametrize("quote", ["paris IS the   capital", "Paris is the capital of France.",
                                   '"It has about 2.1 million inhabitants."', "capital of france!"])
def test_case_whitespace_and_punctuation_variants_of_the_answer_are_evidence(quote):
    assert quote_occurs(quote, normalise(ANSWER))


@pytest.mark.parametrize("placeholder", ["", "...", "…", '"..."', " . "])
def test_a_placeholder_quote_is_no_evidence_rather_than_a_rejected_reply(placeholder):
    reply = one_dimension(evidence={d: [placeholder] for d in DEFAULT_RUBRIC.dimension_names})
    judgment = Judge(ScriptedModel(reply), per_dimension=True, retries=0).grade(ANSWER, context=CONTEXT)
    assert judgment.status is JudgmentStatus.VALID
    assert all(d.evidence == () for d in judgment.dimensions)


@pytest.mark.parametrize(("reply", "letter"), [
    ("Both are fine, but A is correct.\nVerdict: A", "A"),
    ("Final verdict: **B**", "B"),
    ("After comparing them: [C]", "C"),
    ("Verdict: Assistant B", "B"),
    ("[[A]]", "A"),
])
def test_pairwise_markers_as_real_models_write_them(reply, letter):
    assert read_marker(reply) == letter


@pytest.mark.parametrize(("reply", "reason"), [
    ("[A] is longer but [B] is right", "its last line is not the letter alone"),
    ("Verdict: A\nActually, verdict: B", "conflicting verdicts A, B"),
    ("The verdict: a tie, I think", "no [[A]], [[B]] or [[C]] marker"),
    ("[[A]]\nVerdict: B", "conflicting verdicts A, B"),
])
def test_ambiguous_loose_markers_stay_invalid(reply, reason):
    with pytest.raises(ExtractionError) as error:
        read_marker(reply)
    assert reason in str(error.value)
