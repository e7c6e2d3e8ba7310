"""verdict.correlate against hand-computed 2x2 tables and independent references (sklearn, statsmodels,
scipy's bootstrap), and its data rules: floor, UNCLEAR, evaluator choice, duplicates, contradictions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import bootstrap
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa
from statsmodels.stats.proportion import proportion_confint

from verdict.correlate import (
    CorrelationError,
    EvaluatorChoiceRequired,
    JudgeVerdict,
    UserSignal,
    correlate,
    overall_verdict,
)

SIGNAL_FOR = {"positive": "thumbs_up", "negative": "thumbs_down"}


def _rows(table: dict[str, int], fingerprint: str = "fp1", start: int = 0):
    """Judge and signal rows realising a 2x2 table (one trace per cell entry)."""
    verdicts, signals = [], []
    n = start
    for cell, count in table.items():
        verdict, user = cell.split("_")
        for _ in range(count):
            verdicts.append(JudgeVerdict(f"t{n}", fingerprint, verdict.upper()))
            signals.append(UserSignal(f"t{n}", SIGNAL_FOR[user]))
            n += 1
    return verdicts, signals


TABLE = {"pass_positive": 40, "pass_negative": 10, "fail_positive": 5, "fail_negative": 15}


def test_a_hand_computed_table():
    result = correlate(*_rows(TABLE))
    assert result.table == TABLE and result.usable == 70
    n = 70
    po = Fraction(40 + 15, n)
    judge_pass, user_pos = Fraction(50, n), Fraction(45, n)
    pe_kappa = judge_pass * user_pos + (1 - judge_pass) * (1 - user_pos)
    pi = (judge_pass + user_pos) / 2
    pe_ac1 = 2 * pi * (1 - pi)
    assert result.raw_agreement.value == pytest.approx(float(po))
    assert result.kappa.value == pytest.approx(float((po - pe_kappa) / (1 - pe_kappa)))  # 0.5116
    assert result.ac1.value == pytest.approx(float((po - pe_ac1) / (1 - pe_ac1)))  # 0.6199
    assert result.leniency.value == pytest.approx(10 / 50)  # judge PASS, user negative / judge PASS
    assert result.strictness.value == pytest.approx(5 / 20)  # judge FAIL, user positive / judge FAIL
    low, high = proportion_confint(55, 70, method="wilson")
    assert (result.raw_agreement.low, result.raw_agreement.high) == pytest.approx((low, high))
    low, high = proportion_confint(10, 50, method="wilson")
    assert (result.leniency.low, result.leniency.high) == pytest.approx((low, high))
    low, high = proportion_confint(5, 20, method="wilson")
    assert (result.strictness.low, result.strictness.high) == pytest.approx((low, high))


def test_the_kappa_paradox_worked_by_hand_with_gwets_formula():
    # Gwet (2008): AC1 = (pa - pe) / (1 - pe), pe = sum_k pi_k (1 - pi_k) / (q - 1), pi_k the mean of the
    # two raters' marginal shares. Worked on paper for 118 PASS/positive, 5 PASS/negative, 2 FAIL/positive:
    #   pa = 118/125 = 0.944; judge PASS 123, user positive 120: pi_PASS = 243/250 = 0.972
    #   pe = 2 * 0.972 * 0.028 = 0.054432; AC1 = 0.889568 / 0.945568 = 0.940776...
    #   kappa: pe = 0.984 * 0.96 + 0.016 * 0.04 = 0.94528; (0.944 - 0.94528) / 0.05472 = -0.023392...
    result = correlate(*_rows({"pass_positive": 118, "pass_negative": 5, "fail_positive": 2, "fail_negative": 0}))
    assert result.ac1.value == pytest.approx(0.889568 / 0.945568, abs=1e-12)
    assert result.kappa.value == pytest.approx(-0.00128 / 0.05472, abs=1e-12)
    assert result.status == "calibrated"  # AC1 gates: users and judge agree on 94 % of traces
    # Some resamples hold no judge FAIL and no user negative: kappa undefined there, so no interval.
    assert (result.kappa.low, result.kappa.high) == (None, None) and result.ac1.low is not None


def test_kappa_matches_sklearn_and_statsmodels_on_random_tables():
    rng = np.random.default_rng(3)
    for _ in range(20):
        counts = rng.integers(1, 40, size=4)
        table = dict(zip(TABLE, map(int, counts), strict=True))
        verdicts, signals = _rows(table)
        judge = [v.verdict for v in verdicts]
        users = ["PASS" if s.kind == "thumbs_up" else "FAIL" for s in signals]
        result = correlate(verdicts, signals, n_resamples=200)
        assert result.kappa.value == pytest.approx(cohen_kappa_score(judge, users), abs=1e-12)
        grid = [[table["pass_positive"], table["pass_negative"]], [table["fail_positive"], table["fail_negative"]]]
        assert result.kappa.value == pytest.approx(sm_kappa(grid).kappa, abs=1e-12)


def _scipy_interval(pairs: np.ndarray, statistic) -> tuple[float, float]:
    res = bootstrap((pairs[:, 0], pairs[:, 1]), statistic, paired=True, vectorized=True, method="percentile",
                    n_resamples=4000, random_state=np.random.default_rng(11))
    return res.confidence_interval.low, res.confidence_interval.high


def _kappa(judge, user, axis=-1):  # textbook Cohen (1960) on 0/1 ratings, vectorised for scipy
    po = np.mean(judge == user, axis=axis)
    pj, pu = judge.mean(axis=axis), user.mean(axis=axis)
    pe = pj * pu + (1 - pj) * (1 - pu)
    return (po - pe) / (1 - pe)


def _ac1(judge, user, axis=-1):  # Gwet (2008), two raters, two categories
    po = np.mean(judge == user, axis=axis)
    pi = (judge.mean(axis=axis) + user.mean(axis=axis)) / 2
    pe = 2 * pi * (1 - pi)
    return (po - pe) / (1 - pe)


def test_bootstrap_intervals_are_seeded_and_agree_with_scipy():
    verdicts, signals = _rows(TABLE)
    first, again = correlate(verdicts, signals, seed=7), correlate(verdicts, signals, seed=7)
    other = correlate(verdicts, signals, seed=8)
    assert first == again
    assert (first.kappa.low, first.ac1.low) != (other.kappa.low, other.ac1.low)
    pairs = np.array([(v.verdict == "PASS", s.kind == "thumbs_up") for v, s in zip(verdicts, signals, strict=True)],
                     dtype=int)
    assert _kappa(pairs[:, 0], pairs[:, 1]) == pytest.approx(cohen_kappa_score(pairs[:, 0], pairs[:, 1]))
    for ours, reference in ((first.kappa, _scipy_interval(pairs, _kappa)), (first.ac1, _scipy_interval(pairs, _ac1))):
        assert ours.low is not None and ours.value is not None and ours.high is not None
        assert ours.low < ours.value < ours.high
        # Two independent Monte Carlo runs of the same percentile bootstrap: equal up to resampling noise.
        assert (ours.low, ours.high) == pytest.approx(reference, abs=0.035)


def test_below_the_floor_the_result_is_never_called_calibrated():
    perfect = {"pass_positive": 15, "pass_negative": 0, "fail_positive": 0, "fail_negative": 14}
    low_data = correlate(*_rows(perfect))
    assert (low_data.usable, low_data.status) == (29, "insufficient_data") and low_data.ac1.value == 1.0
    assert "not calibrated" in low_data.reason
    enough = correlate(*_rows({**perfect, "fail_negative": 15}))
    assert (enough.usable, enough.status) == (30, "calibrated")
    assert correlate(*_rows(perfect), minimum_pairs=20).status == "calibrated"


def test_the_gate_is_the_lower_bound_of_ac1_not_its_point_value():
    result = correlate(*_rows(TABLE), min_ac1=0.5)  # AC1 0.620, its lower bound about 0.42
    assert result.ac1.low is not None and result.ac1.value is not None
    assert result.ac1.value > 0.5 > result.ac1.low and result.status == "miscalibrated"
    assert correlate(*_rows(TABLE), min_ac1=result.ac1.low).status == "calibrated"


def test_a_judge_that_agrees_only_by_chance_is_miscalibrated():
    chance = {"pass_positive": 25, "pass_negative": 25, "fail_positive": 25, "fail_negative": 25}
    result = correlate(*_rows(chance))
    assert result.status == "miscalibrated" and result.ac1.value == pytest.approx(0.0)
    assert result.ac1.low is not None and result.ac1.low < 0.4


def test_unclear_and_error_verdicts_are_excluded_and_counted():
    verdicts, signals = _rows(TABLE)
    verdicts += [JudgeVerdict("u1", "fp1", "UNCLEAR"), JudgeVerdict("u2", "fp1", "ERROR")]
    signals += [UserSignal("u1", "thumbs_up"), UserSignal("u2", "abandon"), UserSignal("nobody-judged", "copy")]
    result = correlate(verdicts, signals)
    assert result.table == TABLE
    assert (result.counts["unclear_excluded"], result.counts["unjudged_traces"]) == (2, 1)


def test_mixed_evaluators_need_an_explicit_choice():
    a_verdicts, signals = _rows(TABLE, "fp-a")
    b_verdicts = [JudgeVerdict(v.trace_id, "fp-b", "FAIL") for v in a_verdicts]
    with pytest.raises(EvaluatorChoiceRequired) as caught:
        correlate(a_verdicts + b_verdicts, signals)
    assert caught.value.fingerprints == ("fp-a", "fp-b") and "fp-a" in str(caught.value) and "fp-b" in str(caught.value)
    assert correlate(a_verdicts + b_verdicts, signals, fingerprint="fp-a").table == TABLE
    only_fail = correlate(a_verdicts + b_verdicts, signals, fingerprint="fp-b").table
    assert only_fail == {"pass_positive": 0, "pass_negative": 0, "fail_positive": 45, "fail_negative": 25}
    with pytest.raises(CorrelationError, match="no judgments by fingerprint fp-c"):
        correlate(a_verdicts, signals, fingerprint="fp-c")


def test_duplicates_collapse_and_contradictions_are_excluded_and_counted():
    verdicts, signals = _rows(TABLE)
    baseline = correlate(verdicts, signals)
    noisy = list(signals)
    noisy += [UserSignal("t0", "thumbs_up")] * 3  # exact duplicates of t0's row
    noisy += [UserSignal("t1", "copy", "2026-11-30T10:00:00Z"), UserSignal("t1", "accept")]  # same polarity
    noisy += [UserSignal("t2", "regenerate")]  # t2 was thumbs_up: contradictory, out
    noisy += [UserSignal("t3", "view"), UserSignal("t3", "edit")]  # neutral: skipped
    # The same kind at two times is two rows (not duplicates), still one positive observation.
    noisy += [UserSignal("t6", "copy", "2026-11-30T10:00:00Z"), UserSignal("t6", "copy", "2026-11-30T11:00:00Z")]
    judge_noisy = verdicts + [verdicts[4], JudgeVerdict("t5", "fp1", "FAIL")]  # t4 duplicate; t5 contradictory
    result = correlate(judge_noisy, noisy)
    assert result.counts["duplicate_rows"] == 3 and result.counts["contradictory_traces"] == 1
    assert result.counts["neutral_rows"] == 2 and result.counts["signal_rows"] == len(noisy)
    assert result.counts["judge_duplicate_rows"] == 1 and result.counts["judge_contradictory_traces"] == 1
    assert result.counts["unjudged_traces"] == 1  # t5: its judge rows contradict, so no verdict
    expected = dict(baseline.table, pass_positive=TABLE["pass_positive"] - 2)  # t2 and t5 (both PASS/positive)
    assert result.table == expected and result.usable == baseline.usable - 2


def test_signal_kinds_map_to_polarities_and_unknown_kinds_are_counted():
    verdicts = [JudgeVerdict(f"t{k}", "fp", "PASS") for k in range(9)]
    kinds = ["thumbs_up", "copy", "accept", "thumbs_down", "regenerate", "retry", "abandon", "share", "wave"]
    result = correlate(verdicts, [UserSignal(f"t{k}", kind) for k, kind in enumerate(kinds)])
    assert (result.table["pass_positive"], result.table["pass_negative"]) == (3, 4)
    assert (result.counts["neutral_rows"], result.counts["unknown_rows"]) == (1, 1)


def test_the_overall_verdict_of_a_trace():
    assert overall_verdict(["PASS", "FAIL", "UNCLEAR"]) == "FAIL"
    assert overall_verdict(["PASS", "UNCLEAR"]) == "UNCLEAR"
    assert overall_verdict(["PASS", None]) == "PASS"
    assert overall_verdict([None]) == "UNCLEAR"
    assert overall_verdict(["PASS", "INCONSISTENT"]) == "UNCLEAR"


def test_no_pairs_gives_undefined_coefficients_not_errors():
    result = correlate([JudgeVerdict("a", "fp", "PASS")], [UserSignal("b", "thumbs_up")])
    assert result.usable == 0 and result.status == "insufficient_data"
    assert result.kappa.value is None and result.ac1.value is None and result.raw_agreement.value is None


@pytest.mark.parametrize(("options", "message"), [({"minimum_pairs": 1}, "minimum_pairs"),
                                                  ({"min_ac1": 1.5}, "min_ac1")])
def test_bad_options_are_rejected(options, message):
    with pytest.raises(CorrelationError, match=message):
        correlate([], [], **options)
