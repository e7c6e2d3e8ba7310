"""Benjamini-Hochberg against statsmodels multipletests(method='fdr_bh') and the 1995 paper."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from verdict.stats import adjust, benjamini_hochberg

# Benjamini & Hochberg (1995), JRSS-B 57:289-300, section 4: the 15 p-values of the
# myocardial-infarction thrombolysis study. At q = 0.05 the step-up rule rejects the four smallest
# (Bonferroni rejects three).
BH_1995 = [
    0.0001,
    0.0004,
    0.0019,
    0.0095,
    0.0201,
    0.0278,
    0.0298,
    0.0344,
    0.0459,
    0.3240,
    0.4262,
    0.5719,
    0.6528,
    0.7590,
    1.000,
]


def test_benjamini_hochberg_1995_example():
    result = benjamini_hochberg(BH_1995, alpha=0.05)
    assert result.rejected.tolist() == [True] * 4 + [False] * 11
    assert np.sum(np.array(BH_1995) <= 0.05 / 15) == 3  # the Bonferroni contrast the paper draws


def test_matches_statsmodels_on_random_p_values():
    rng = np.random.default_rng(5)
    for size in (1, 2, 17, 250):
        p = np.concatenate([rng.uniform(size=size), rng.uniform(0, 0.01, size=size // 3)])
        rng.shuffle(p)
        ours = benjamini_hochberg(p, alpha=0.05)
        reject, adjusted, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
        np.testing.assert_allclose(ours.adjusted, adjusted, rtol=1e-12)
        assert ours.rejected.tolist() == reject.tolist()


def test_ties_and_order_are_preserved():
    p = [0.04, 0.01, 0.04, 0.9]
    _, adjusted, _, _ = multipletests(p, method="fdr_bh")
    np.testing.assert_allclose(benjamini_hochberg(p).adjusted, adjusted)


def test_empty_family():
    assert benjamini_hochberg([]).adjusted.size == 0


@pytest.mark.parametrize("p", [[0.1, 1.2], [float("nan")], [-0.1]])
def test_invalid_p_values_are_rejected(p):
    with pytest.raises(ValueError, match="p-values"):
        benjamini_hochberg(p)


@pytest.mark.parametrize(("ours", "theirs"), [("bh", "fdr_bh"), ("holm", "holm"), ("bonferroni", "bonferroni")])
def test_every_correction_matches_statsmodels(ours, theirs):
    rng = np.random.default_rng(11)
    for size in (1, 2, 17, 250):
        p = np.concatenate([rng.uniform(size=size), rng.uniform(0, 0.01, size=size // 3), [0.02, 0.02]])
        rng.shuffle(p)
        result = adjust(p, method=ours, alpha=0.05)
        reject, adjusted, _, _ = multipletests(p, alpha=0.05, method=theirs)
        np.testing.assert_allclose(result.adjusted, adjusted, rtol=1e-12)
        assert result.rejected.tolist() == reject.tolist()


def test_holm_and_bonferroni_on_the_1995_example():
    # Bonferroni rejects the three p <= 0.05/15 the paper names; Holm's step-down adds none here.
    assert adjust(BH_1995, method="bonferroni").rejected.sum() == 3
    assert adjust(BH_1995, method="holm").rejected.sum() == 3
    assert adjust(BH_1995, method="bh").rejected.sum() == 4


def test_unknown_correction_is_rejected():
    with pytest.raises(ValueError, match="correction must be one of"):
        adjust([0.1], method="sidak")  # type: ignore[arg-type]  # the invalid value is the point
