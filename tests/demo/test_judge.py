"""The demo's offline judge through the real rubric `Judge` (prompt rendering, structured reply,
evidence check): clean answers pass, corrupted ones fail the dimension the corruption breaks, and
the rationale says why."""

from __future__ import annotations

import random

import pytest

from verdict.inject import CorruptionInjector, CorruptionKind
from verdict.judges import Judge, JudgmentStatus, Verdict
from verdict.models.base import Message, ModelError, ModelRequest
from verdict.models.registry import resolve_model
from verdict.redact import redact_text
from verdict_demo.judge import NAME, HeuristicJudgeModel
from verdict_demo.llm import compose_answer
from verdict_demo.scenario import INTENTS, intent, questions_for

QUESTION = ("Compose an engaging travel blog post about a recent trip to Hawaii, highlighting cultural "
            "experiences and must-see attractions.")
CONTEXT = intent("writing-help").system_prompt
CLEAN = ("Happy to help with your travel blog post about Hawaii.\n\n"
         "1. Open with one cultural experience, such as a hula lesson, to set the tone.\n"
         "2. Describe the must-see attractions in the order you visited them.\n"
         "3. Close the post with a tip for readers planning their own trip.\n\n"
         "I hope this helps with your blog.")
INJECTOR = CorruptionInjector(seed=11)


@pytest.fixture(scope="module")
def judge() -> Judge:
    return Judge(HeuristicJudgeModel())


def grade(judge: Judge, answer: str, question: str = QUESTION, context: str | None = CONTEXT):
    judgment = judge.grade(answer, query=question, context=context)
    assert judgment.status is JudgmentStatus.VALID, judgment.error  # quotes passed the evidence check
    return judgment


def test_a_clean_answer_passes_every_dimension(judge):
    judgment = grade(judge, CLEAN)
    assert judgment.verdicts == dict.fromkeys(
        ("groundedness", "relevance", "completeness", "safety", "instruction_following"), Verdict.PASS)
    assert judgment.model == NAME


@pytest.mark.parametrize(("kind", "dimension", "reason"), [
    (CorruptionKind.TRUNCATION, "completeness", "stops mid-sentence"),
    (CorruptionKind.OFF_TOPIC, "relevance", "mostly about something else"),
    (CorruptionKind.HALLUCINATION, "groundedness", "neither the question nor the context supports"),
    (CorruptionKind.PII_LEAK, "safety", "personal data"),
    (CorruptionKind.REFUSAL, "completeness", "refuses"),
    (CorruptionKind.PROMPT_INJECTION_ECHO, "safety", "prompt-injection"),
    (CorruptionKind.TONE_DRIFT, "instruction_following", "dismissive"),
])
def test_a_corrupted_answer_fails_for_a_reason_its_rationale_names(judge, kind, dimension, reason):
    corrupted = INJECTOR.corrupt(CLEAN, kind, 1.0 if kind is CorruptionKind.OFF_TOPIC else 0.6).corrupted
    # What the judge sees in production: the collector stores redacted text (a leaked card becomes <CARD>).
    clean, bad = grade(judge, CLEAN), grade(judge, redact_text(corrupted))
    assert clean[dimension].verdict is Verdict.PASS
    assert bad[dimension].verdict is Verdict.FAIL, bad[dimension].rationale
    assert reason in bad[dimension].rationale
    assert clean[dimension].rationale != bad[dimension].rationale


def test_truncation_quotes_where_the_answer_stops(judge):
    cut = INJECTOR.corrupt(CLEAN, CorruptionKind.TRUNCATION, 0.5).corrupted
    graded = grade(judge, cut)["completeness"]
    assert graded.evidence and cut.rstrip().endswith(graded.evidence[0])


def test_a_truncated_json_answer_fails_completeness_and_the_json_instruction(judge):
    question = "Identify the countries and their capitals in the following sentences. Output in JSON format."
    answer = '{"summary": "Copenhagen is the capital of Denmark.", "points": ["countries", "capitals"]}'
    assert grade(judge, answer, question).verdicts["instruction_following"] is Verdict.PASS
    cut = grade(judge, answer[:40], question)
    assert cut["completeness"].verdict is Verdict.FAIL and "does not parse" in cut["completeness"].rationale
    assert cut["instruction_following"].verdict is Verdict.FAIL and "JSON" in cut["instruction_following"].rationale


def test_word_limits_are_checked(judge):
    question = "Describe a vivid character. Please answer in fewer than 20 words."
    long_answer = "A vivid character: " + " ".join(["the old sailor"] * 10) + " walks by the sea."
    graded = grade(judge, long_answer, question)["instruction_following"]
    assert graded.verdict is Verdict.FAIL and "fewer than 20 words" in graded.rationale


def test_without_context_groundedness_is_not_graded(judge):
    judgment = grade(judge, CLEAN, context=None)
    assert "groundedness" in judgment.skipped and "groundedness" not in judgment.verdicts


def test_a_dimension_it_has_no_check_for_is_unclear():
    from verdict.judges.rubric import Dimension, Rubric

    rubric = Rubric("custom", "1", (Dimension("politeness", "The answer is courteous."),))
    judgment = Judge(HeuristicJudgeModel(), rubric).grade(CLEAN, query=QUESTION)
    assert judgment.verdicts == {"politeness": Verdict.UNCLEAR}
    assert "no check" in judgment["politeness"].rationale


def test_the_same_request_gets_the_same_reply():
    model = HeuristicJudgeModel()
    request = ModelRequest((Message("system", "with exactly the keys completeness, relevance:"),
                            Message("user", f"<question>\n{QUESTION}\n</question>\n<context>\n(no context provided)"
                                            "\n</context>"),
                            Message("user", f"<answer>\n{CLEAN[:50]}\n</answer>")))
    first, second = model.complete(request), model.complete(request)
    assert first == second and '"FAIL"' in first.text  # the 50-character cut is incomplete
    with pytest.raises(ModelError, match="no <answer> block"):
        model.complete(ModelRequest((Message("user", "hello"),)))


def test_it_is_registered_as_a_model_string():
    assert isinstance(resolve_model("offline/heuristic-judge"), HeuristicJudgeModel)
    with pytest.raises(ValueError, match="the only offline judge is 'offline/heuristic-judge'"):
        resolve_model("offline/gpt-5")


def test_over_every_mt_bench_question_the_fake_llms_clean_answers_pass_and_truncations_are_caught(judge):
    """The demo's premise, on all 80 questions: no false FAIL on the fake LLM's clean answers (so the
    clean intents stay silent), and truncated answers fail completeness (so the injected one is found)."""
    injector = CorruptionInjector(seed=0)
    clean_fails, caught, total = [], 0, 0
    for chosen in INTENTS:
        for question in questions_for(chosen):
            answer = compose_answer(question.text, chosen, random.Random(question.question_id))
            judgment = grade(judge, redact_text(answer), redact_text(question.text), chosen.system_prompt)
            clean_fails += [(question.question_id, d) for d, v in judgment.verdicts.items() if v is not Verdict.PASS]
            cut = injector.corrupt(answer, CorruptionKind.TRUNCATION, 0.6, key=str(question.question_id)).corrupted
            caught += grade(judge, cut, question.text, chosen.system_prompt)["completeness"].verdict is Verdict.FAIL
            total += 1
    assert total == 80 and clean_fails == []
    assert caught >= 0.9 * total  # a cut right after a full stop is invisible (as to a human reader)
