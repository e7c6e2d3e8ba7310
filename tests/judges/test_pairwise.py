"""PairwiseJudge against the scripted model: every marker case, every round combination, ensembles and
the position-flip rate."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.judges.replies import by_first_shown, shown
from verdict.graph.errors import ConfigurationError, ExtractionError
from verdict.judges.pairwise import (
    PairwiseJudge,
    PairwiseJudgeEnsemble,
    PairwiseStatus,
    PairwiseVerdict,
    flip_rates_by_judge,
    position_flip_rate,
    read_marker,
)
from verdict.models.base import ModelError
from verdict.models.scripted import Reply, ScriptedModel, ScriptedReply

QUERY, GOOD, BAD = "How do I reset my password?", "Open Settings > Security > Reset.", "No idea."


def compare(first_good: Reply, first_bad: Reply, **options):
    """Compare GOOD (as response_a) with BAD: round AB shows GOOD first, round BA shows BAD first."""
    model = ScriptedModel(by_first_shown({GOOD: first_good, BAD: first_bad}), record=True)
    return PairwiseJudge(model, retries=0, **options).compare(QUERY, GOOD, BAD), model


@pytest.mark.parametrize(("round_ab", "round_ba", "verdict"), [
    ("A is clearer. [[A]]", "B is clearer. [[B]]", PairwiseVerdict.A),    # GOOD wins in both positions
    ("[[B]]", "[[A]]", PairwiseVerdict.B),                                 # BAD wins in both positions
    ("Equal. [[C]]", "Equal. [[C]]", PairwiseVerdict.TIE),                 # both ties
    ("[[A]]", "[[C]]", PairwiseVerdict.TIE),                               # one tie
    ("[[C]]", "[[A]]", PairwiseVerdict.TIE),                               # one tie, the other order
    ("[[A]]", "[[A]]", PairwiseVerdict.INCONSISTENT),                      # first position wins twice: a flip
    ("[[B]]", "[[B]]", PairwiseVerdict.INCONSISTENT),                      # second position wins twice
])
def test_valid_round_combinations(round_ab, round_ba, verdict):
    judgment, model = compare(round_ab, round_ba)
    assert judgment.status is PairwiseStatus.VALID and judgment.is_usable
    assert judgment.verdict is verdict
    assert judgment.position_flip is (verdict is PairwiseVerdict.INCONSISTENT)
    assert [r.order for r in judgment.rounds] == ["AB", "BA"]
    # The position swap really happened: each round showed the other response first.
    assert sorted(shown(r)[0] for r in model.requests) == sorted([GOOD, BAD])
    assert judgment.error is None and judgment.usage.input_tokens > 0


def test_rounds_map_markers_back_to_the_callers_responses():
    judgment, _ = compare("[[A]]", "[[B]]")
    first, second = judgment.rounds
    assert (first.marker, first.preferred) == ("A", PairwiseVerdict.A)
    assert (second.marker, second.preferred) == ("B", PairwiseVerdict.A)
    assert second.reply == "[[B]]" and first.attempts == 1


@pytest.mark.parametrize(("reply", "reason"), [
    ("Both are fine.", "no [[A]], [[B]] or [[C]] marker"),
    ("", "the reply is empty"),
    ("   \n", "the reply is empty"),
    ("Verdict: [[]]", "the marker is empty"),
    ("Verdict: [[ ]]", "the marker is empty"),
    ("Verdict: [[A", "the marker is incomplete (truncated)"),
    ("Verdict: [[A]", "the marker is incomplete (truncated)"),
    ("[[A]] ... on reflection [[A]]", "the marker [[A]] is repeated 2 times"),
    ("[[A]] or maybe [[B]]", "conflicting markers [[A]], [[B]]"),
    ("[[C]] [[B]] [[C]]", "conflicting markers [[C]], [[B]]"),
    ("[[D]]", "[[D]] is not one of [[A]], [[B]], [[C]]"),
    ("[[a]]", "[[a]] is not one of"),
    ("[[A]] and then [[B", "a stray or incomplete marker next to [[A]]"),
    ("[[[A]]", "a stray or incomplete marker next to [[A]]"),
    ("[[B]]]", "a stray or incomplete marker next to [[B]]"),
])
def test_marker_defects_make_the_round_invalid(reply, reason):
    judgment, _ = compare(reply, "[[B]]")
    assert judgment.status is PairwiseStatus.INVALID and not judgment.is_usable
    assert judgment.verdict is None  # never a tie
    first, second = judgment.rounds
    assert first.status is PairwiseStatus.INVALID and reason in first.error
    assert second.status is PairwiseStatus.VALID  # the other round stays visible
    assert "round AB INVALID" in judgment.error


def test_a_truncated_reply_is_invalid_even_with_a_marker():
    judgment, _ = compare(ScriptedReply("[[A]] because", finish_reason="length"), "[[B]]")
    assert judgment.status is PairwiseStatus.INVALID and judgment.verdict is None
    assert "truncated" in judgment.rounds[0].error


def test_a_provider_failure_is_an_error():
    judgment, _ = compare(ModelError("rate_limited", "HTTP 429 from scripted"), "[[B]]")
    assert judgment.status is PairwiseStatus.ERROR and judgment.verdict is None
    assert judgment.rounds[0].status is PairwiseStatus.ERROR and "HTTP 429" in judgment.rounds[0].error


def test_error_outranks_invalid_when_both_rounds_fail():
    judgment, _ = compare("no marker", ModelError("server_error", "HTTP 500"))
    assert judgment.status is PairwiseStatus.ERROR
    assert [r.status for r in judgment.rounds] == [PairwiseStatus.INVALID, PairwiseStatus.ERROR]
    assert "round AB INVALID" in judgment.error and "round BA ERROR" in judgment.error


def test_an_invalid_marker_is_retried_like_any_extraction_failure():
    replies = {GOOD: iter(["[[A]] [[B]]", "[[A]]"]), BAD: iter(["[[B]]"])}
    model = ScriptedModel(lambda request: next(replies[shown(request)[0]]))
    judgment = PairwiseJudge(model, retries=1).compare(QUERY, GOOD, BAD)
    assert judgment.verdict is PairwiseVerdict.A
    assert [r.attempts for r in judgment.rounds] == [2, 1]


def test_compare_many_keeps_order_and_pairs_rounds():
    def reply(request):  # prefer the response with the higher number, wherever it is shown
        a, b = shown(request)
        return "[[A]]" if int(a.split()[-1]) > int(b.split()[-1]) else "[[B]]"

    judge = PairwiseJudge(ScriptedModel(reply), retries=0)
    items = [("q", f"answer {i}", f"answer {i + 1 if i % 2 else i - 1}") for i in range(1, 41)]
    judgments = judge.compare_many(items, max_workers=8)
    assert [j.verdict for j in judgments] == [PairwiseVerdict.B if i % 2 else PairwiseVerdict.A
                                              for i in range(1, 41)]


def test_bad_items_are_rejected_with_a_precise_message():
    judge = PairwiseJudge(ScriptedModel(["[[A]]"]))
    with pytest.raises(TypeError, match="item 1 must be a .query, response_a, response_b. tuple of str"):
        judge.compare_many([("q", "a", "b"), ("q", "a")])  # type: ignore[list-item]  # the malformed item is the point


@given(st.text(alphabet=st.characters(exclude_characters="[]"), max_size=40),
       st.sampled_from("ABC"),
       st.text(alphabet=st.characters(exclude_characters="[]"), max_size=40))
def test_one_complete_marker_amid_any_bracket_free_text_is_its_letter_or_refused(before, letter, after):
    # Refused when the text negates the marker ("not [[A]]") or states another letter alone on a line.
    try:
        assert read_marker(f"{before}[[{letter}]]{after}") == letter
    except ExtractionError as error:
        assert "negated" in str(error) or "conflicting verdicts" in str(error)


@given(st.lists(st.sampled_from(["[[A]]", "[[B]]", "[[C]]", "[[", "]]", "x"]), max_size=6))
def test_anything_but_exactly_one_complete_marker_is_rejected(pieces):
    text = " ".join(pieces)
    valid = sum(p in ("[[A]]", "[[B]]", "[[C]]") for p in pieces) == 1 and sum(p in ("[[", "]]") for p in pieces) == 0
    if valid:
        assert read_marker(text) in "ABC"
    else:
        with pytest.raises(ExtractionError):
            read_marker(text)


# --- ensembles ------------------------------------------------------------------------------------------
def pairwise(round_ab, round_ba, name="scripted/default"):
    return PairwiseJudge(ScriptedModel(by_first_shown({GOOD: round_ab, BAD: round_ba}), name=name), retries=0)


def test_ensemble_votes_over_usable_components_and_keeps_failed_ones():
    ensemble = PairwiseJudgeEnsemble([
        pairwise("[[A]]", "[[B]]", "scripted/one"),
        pairwise("[[A]]", "[[B]]", "scripted/two"),
        pairwise("[[B]]", "[[A]]", "scripted/three"),
        pairwise("nothing", "[[A]]", "scripted/invalid"),
        pairwise(ModelError("server_error", "HTTP 500"), "[[A]]", "scripted/down"),
    ])
    result = ensemble.compare(QUERY, GOOD, BAD)
    assert result.status is PairwiseStatus.VALID and result.verdict is PairwiseVerdict.A
    assert result.votes == {PairwiseVerdict.A: 2, PairwiseVerdict.B: 1}
    assert [c.status for c in result.components] == [PairwiseStatus.VALID] * 3 + [PairwiseStatus.INVALID,
                                                                                  PairwiseStatus.ERROR]
    assert [c.model for c in result.components][-1] == "scripted/down"
    assert result.coverage == pytest.approx(3 / 5)


def test_ensemble_split_uses_the_tie_rule():
    judges = [pairwise("[[A]]", "[[B]]"), pairwise("[[B]]", "[[A]]")]
    assert PairwiseJudgeEnsemble(judges).compare(QUERY, GOOD, BAD).verdict is PairwiseVerdict.TIE
    inconsistent = PairwiseJudgeEnsemble(judges, on_tie=PairwiseVerdict.INCONSISTENT)
    assert inconsistent.compare(QUERY, GOOD, BAD).verdict is PairwiseVerdict.INCONSISTENT


def test_ensemble_of_failures_is_unusable_never_a_tie():
    invalid_only = PairwiseJudgeEnsemble([pairwise("none", "[[A]]"), pairwise("[[A]] [[B]]", "[[A]]")])
    result = invalid_only.compare(QUERY, GOOD, BAD)
    assert result.status is PairwiseStatus.INVALID and result.verdict is None and result.votes == {}
    with_error = PairwiseJudgeEnsemble([pairwise("none", "[[A]]"), pairwise(ModelError("timeout", "t"), "[[A]]")])
    assert with_error.compare(QUERY, GOOD, BAD).status is PairwiseStatus.ERROR


def test_an_empty_pairwise_ensemble_is_a_configuration_error():
    with pytest.raises(ConfigurationError):
        PairwiseJudgeEnsemble([])


# --- position flips -------------------------------------------------------------------------------------
def test_position_flip_rate_counts_inconsistent_over_usable_judgments():
    consistent, _ = compare("[[A]]", "[[B]]")
    flipped, _ = compare("[[A]]", "[[A]]")
    invalid, _ = compare("none", "[[A]]")
    rate = position_flip_rate([consistent, flipped, flipped, invalid])
    assert (rate.flips, rate.usable, rate.unusable) == (2, 3, 1)
    assert rate.rate == pytest.approx(2 / 3)
    # Wilson interval for 2/3 at 95% (Newcombe 1998, method 3): z = 1.959964
    z = 1.959963984540054
    centre = (2 + z * z / 2) / (3 + z * z)
    half = z * math.sqrt(2 * 1 / 3 + z * z / 4) / (3 + z * z)
    assert (rate.low, rate.high) == pytest.approx((centre - half, centre + half))


def test_flip_rate_without_usable_judgments_is_nan():
    invalid, _ = compare("none", "none")
    rate = position_flip_rate([invalid])
    assert rate.usable == 0 and math.isnan(rate.rate)


def test_flip_rates_per_ensemble_component():
    ensemble = PairwiseJudgeEnsemble([pairwise("[[A]]", "[[B]]", "scripted/steady"),
                                      pairwise("[[A]]", "[[A]]", "scripted/biased")])
    results = ensemble.compare_many([(QUERY, GOOD, BAD)] * 3)
    rates = flip_rates_by_judge(results)
    assert rates["0:scripted/steady"].rate == 0.0 and rates["1:scripted/biased"].rate == 1.0
    assert position_flip_rate(results).flips == 3 and position_flip_rate(results).usable == 6
