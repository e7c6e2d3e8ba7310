"""Bradley-Terry over pairwise judgments, checked against the closed-form two-model estimates."""

import math

import pytest

from tests.judges.replies import shown
from verdict.judges.pairwise import PairwiseJudge, PairwiseJudgeEnsemble, PairwiseStatus
from verdict.judges.ranking import rank_models
from verdict.models.base import ModelError
from verdict.models.scripted import ScriptedModel


def _reply(request):
    # response_a is "a|<marker in round AB>|<marker in round BA>|<n>"; the judge answers as scripted there.
    first, second = shown(request)
    response_a = first if first.startswith("a|") else second
    _, round_ab, round_ba, _ = response_a.split("|")
    marker = round_ab if first.startswith("a|") else round_ba
    if marker == "ERR":
        raise ModelError("server_error", "HTTP 500")
    return f"[[{marker}]]" if marker in "ABC" else "no marker"


JUDGE = PairwiseJudge(ScriptedModel(_reply), retries=0)


def judgments(*scripted: tuple[str, str, int]):
    """(marker in round AB, marker in round BA, how many) -> that many judgments."""
    items = [("q", f"a|{ab}|{ba}|{i}", f"b|{i}") for ab, ba, n in scripted for i in range(n)]
    return JUDGE.compare_many(items)


def two_model_comparisons():
    return judgments(("A", "B", 6),   # m1 wins in both orders
                     ("B", "A", 2),   # m2 wins
                     ("C", "C", 2),   # tie
                     ("A", "A", 3),   # first position wins: INCONSISTENT
                     ("A", "X", 1),   # no marker in round BA: INVALID
                     ("ERR", "A", 1))  # provider failure: ERROR


def test_ties_are_half_wins_and_unusable_results_are_excluded_and_counted():
    ranking = rank_models([("m1", "m2", j) for j in two_model_comparisons()], n_resamples=200)
    assert (ranking.used, ranking.ties, ranking.inconsistent, ranking.invalid, ranking.errors) == (10, 2, 3, 1, 1)
    # Two models: the MLE gives P(m1 beats m2) = wins / comparisons, so the rating gap is the log-odds.
    gap = math.log((6 + 1) / (2 + 1))
    assert ranking.fit.rating("m1") - ranking.fit.rating("m2") == pytest.approx(gap, abs=1e-8)
    assert ranking.fit.win_probability[0, 1] == pytest.approx(7 / 10)
    assert ranking.fit.low[0] < ranking.fit.ratings[0] < ranking.fit.high[0]
    assert ranking.fit.order_effect is None


def test_inconsistent_judgments_count_as_ties_when_included():
    ranking = rank_models([("m1", "m2", j) for j in two_model_comparisons()], include_inconsistent=True,
                          n_resamples=0)
    assert (ranking.used, ranking.ties) == (13, 5)
    assert ranking.fit.rating("m1") - ranking.fit.rating("m2") == pytest.approx(math.log(8.5 / 4.5), abs=1e-8)


def test_order_term_is_fitted_on_rounds_with_the_shown_first_model_first():
    results = judgments(("A", "B", 6), ("B", "A", 2), ("A", "A", 4), ("C", "A", 2))
    ranking = rank_models([("m1", "m2", j) for j in results], include_inconsistent=True, order_term=True,
                          n_resamples=0)
    assert ranking.used == 2 * 14
    # Rounds with m1 shown first (AB): m1 wins 6 + 4, loses 2, ties 2 -> 11 of 14 first-position wins.
    # Rounds with m2 shown first (BA): m2 wins 2 + 4 + 2, loses 6 -> 8 of 14 first-position wins.
    # The two-model order model is saturated: logit(first wins | m1 first) = log θ + gap,
    # logit(first wins | m2 first) = log θ - gap.
    logit_1, logit_2 = math.log(11 / 3), math.log(8 / 6)
    assert ranking.fit.order_effect == pytest.approx((logit_1 + logit_2) / 2, abs=1e-8)
    assert ranking.fit.rating("m1") - ranking.fit.rating("m2") == pytest.approx((logit_1 - logit_2) / 2, abs=1e-8)


def test_three_models_rank_in_the_scripted_order():
    # m1 beats m2 and m3 most of the time, m2 beats m3 most of the time.
    plan = {("m1", "m2"): (7, 3), ("m1", "m3"): (8, 2), ("m2", "m3"): (6, 4)}
    comparisons = []
    for (a, b), (wins, losses) in plan.items():
        comparisons += [(a, b, j) for j in judgments(("A", "B", wins), ("B", "A", losses))]
    ranking = rank_models(comparisons, n_resamples=100, seed=3)
    ratings = {m: ranking.fit.rating(m) for m in ("m1", "m2", "m3")}
    assert ratings["m1"] > ratings["m2"] > ratings["m3"]
    assert sum(ratings.values()) == pytest.approx(0.0, abs=1e-9)


def test_ensemble_judgments_rank_by_their_vote():
    ensemble = PairwiseJudgeEnsemble([JUDGE, JUDGE])
    items = [("q", f"a|A|B|{i}", f"b|{i}") for i in range(4)] + [("q", f"a|B|A|{i}", f"b|{i}") for i in range(2)]
    ranking = rank_models([("m1", "m2", r) for r in ensemble.compare_many(items)], n_resamples=0)
    assert ranking.fit.rating("m1") - ranking.fit.rating("m2") == pytest.approx(math.log(2), abs=1e-8)


def test_no_usable_judgment_is_a_precise_error():
    unusable = judgments(("X", "A", 2), ("A", "A", 1))
    assert {j.status for j in unusable} == {PairwiseStatus.INVALID, PairwiseStatus.VALID}
    with pytest.raises(ValueError, match=r"no usable pairwise judgments to rank \(1 inconsistent, 2 invalid, 0 errors\)"):
        rank_models([("m1", "m2", j) for j in unusable])
