"""Raw agreement, Cohen's kappa and Gwet's AC1 against sklearn, statsmodels and Gwet's worked example."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from verdict.stats import cohens_kappa, contingency_table, gwet_ac1, raw_agreement

# Gwet (2014), Handbook of Inter-Rater Reliability, 4th ed.: two abstractors classifying 100
# pregnancies as Ectopic / AIU / NIU (shipped with irrCAC as `cont3x3abstractors`). Published:
# kappa 0.7964094 (SE 0.05891072), AC1 0.8493305 (SE 0.04321747), percent agreement 0.89.
ABSTRACTORS = [[13, 0, 0], [0, 20, 7], [0, 4, 56]]


def test_gwet_abstractors_example():
    ac1 = gwet_ac1(ABSTRACTORS)
    assert ac1.value == pytest.approx(0.8493305, abs=5e-8)
    assert ac1.std_error == pytest.approx(0.04321747, abs=5e-9)
    assert (round(ac1.low, 3), round(ac1.high, 3)) == (0.764, 0.935)  # irrCAC's printed interval
    kappa = cohens_kappa(ABSTRACTORS)
    assert kappa.value == pytest.approx(0.7964094, abs=5e-8)
    assert kappa.std_error == pytest.approx(0.05891072, abs=5e-9)
    assert raw_agreement(ABSTRACTORS) == pytest.approx(0.89)


def test_kappa_matches_sklearn_and_statsmodels():
    rng = np.random.default_rng(3)
    cats = ["PASS", "FAIL", "UNCLEAR"]
    for _ in range(50):
        a = rng.choice(cats, size=int(rng.integers(20, 300)))
        b = np.where(rng.random(a.size) < 0.7, a, rng.choice(cats, size=a.size))
        table = contingency_table(list(a), list(b), cats)
        ours = cohens_kappa(table)
        assert ours.value == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        ref = sm_kappa(table)
        assert ours.std_error == pytest.approx(ref.std_kappa, rel=1e-10)
        assert (ours.low, ours.high) == pytest.approx(
            (max(ref.kappa_low, -1), min(ref.kappa_upp, 1)), rel=1e-10
        )


def test_contingency_table_orientation():
    table = contingency_table(["PASS", "PASS", "FAIL"], ["PASS", "FAIL", "FAIL"], ["PASS", "FAIL"])
    assert table.tolist() == [[1, 1], [0, 1]]


def test_high_agreement_paradox_kappa_low_ac1_high():
    """Gwet (2008) motivation: with skewed prevalence kappa collapses while AC1 stays near agreement."""
    table = [[118, 5], [2, 0]]
    assert raw_agreement(table) == pytest.approx(0.944)
    assert cohens_kappa(table).value < 0
    assert gwet_ac1(table).value > 0.9


def test_errors():
    with pytest.raises(ValueError, match="outside the categories"):
        contingency_table(["PASS"], ["MAYBE"], ["PASS", "FAIL"])
    with pytest.raises(ValueError, match="different numbers"):
        contingency_table(["PASS"], [], ["PASS", "FAIL"])
    with pytest.raises(ValueError, match="square"):
        gwet_ac1([[1, 2, 3]])
    with pytest.raises(ValueError, match="single category"):
        cohens_kappa([[5, 0], [0, 0]])
    with pytest.raises(ValueError, match="empty"):
        raw_agreement([[0, 0], [0, 0]])
