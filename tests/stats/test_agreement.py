"""Agreement harness: judge vs human labels, coverage, evidence gate, split, disagreements."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from verdict.agreement import EvidenceGate, LabelledItem, evaluate_agreement, split_dev_test


def items(n=400, seed=0, accuracy=0.9, unusable=0.0, components=False):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = "FAIL" if rng.random() < 0.3 else "PASS"
        flip = {"PASS": "FAIL", "FAIL": "PASS"}[label]
        verdict = label if rng.random() < accuracy else flip
        if rng.random() < unusable:
            verdict = "ERROR"
        comps = (verdict, "UNCLEAR" if rng.random() < 0.1 else label) if components else ()
        out.append(
            LabelledItem(
                f"item-{i}", label, verdict, critique=f"c{i}", rationale=f"r{i}", components=comps
            )
        )
    return out


def test_rates_and_coefficients_match_references():
    data = items(unusable=0.05)
    report = evaluate_agreement(data)
    usable = [r for r in data if r.verdict in ("PASS", "FAIL")]
    fails = [r for r in usable if r.label == "FAIL"]
    tp = sum(r.verdict == "FAIL" for r in fails)
    assert (report.tpr.successes, report.tpr.trials) == (tp, len(fails))
    assert (report.tpr.low, report.tpr.high) == pytest.approx(
        proportion_confint(tp, len(fails), method="wilson")
    )
    passes = [r for r in usable if r.label == "PASS"]
    assert report.tnr.successes == sum(r.verdict == "PASS" for r in passes)
    assert report.raw_agreement.value == pytest.approx(
        np.mean([r.label == r.verdict for r in usable])
    )
    kappa = cohen_kappa_score([r.label for r in usable], [r.verdict for r in usable])
    assert report.kappa is not None and report.ac1 is not None
    assert report.kappa.value == pytest.approx(kappa)
    assert report.ac1.low < report.ac1.value < report.ac1.high
    assert report.pair_coverage.trials == 400 and report.pair_coverage.successes == len(usable)


def test_positive_class_can_be_pass():
    data = items()
    fail_first = evaluate_agreement(data)
    pass_first = evaluate_agreement(data, positive="PASS")
    assert (
        pass_first.tpr.value == fail_first.tnr.value
        and pass_first.tnr.value == fail_first.tpr.value
    )


def test_pair_and_component_coverage_are_separate():
    report = evaluate_agreement(items(components=True))
    assert report.pair_coverage.successes == report.pair_coverage.trials == 400
    assert report.component_coverage is not None
    assert report.component_coverage.trials == 800
    assert report.component_coverage.successes < 800
    assert evaluate_agreement(items()).component_coverage is None


def test_gate_passes_good_evidence_and_fails_on_coverage_or_low_bounds():
    gate = EvidenceGate()
    assert gate.check(evaluate_agreement(items(n=1000, accuracy=0.97))).passed
    partial = gate.check(evaluate_agreement(items(n=1000, accuracy=0.97, unusable=0.02)))
    assert not partial.passed and any("pair coverage incomplete" in f for f in partial.failures)
    comp = gate.check(evaluate_agreement(items(n=1000, accuracy=0.97, components=True)))
    assert any("component coverage incomplete" in f for f in comp.failures)
    weak = gate.check(evaluate_agreement(items(n=1000, accuracy=0.75)))
    assert any(f.startswith("tpr lower bound") for f in weak.failures)
    # a small sample can have a good point estimate and still fail on its lower bound
    small = evaluate_agreement(items(n=20, accuracy=1.0, seed=3))
    assert small.tpr.value == 1.0 and not EvidenceGate({"tpr": 0.8}).check(small).passed


def test_undefined_kappa_fails_a_gate_that_requires_it():
    data = [LabelledItem(f"i{i}", "PASS", "PASS") for i in range(50)]
    report = evaluate_agreement(data)
    assert report.kappa is None
    result = EvidenceGate({"kappa": 0.5}).check(report)
    assert result.failures == ("kappa is undefined on this data (threshold 0.500)",)


def test_disagreements_list_item_label_critique_and_rationale():
    data = [
        LabelledItem("a", "PASS", "PASS"),
        LabelledItem("b", "FAIL", "PASS", critique="misses step 2", rationale="complete answer"),
        LabelledItem("c", "PASS", "ERROR"),
    ]
    (d,) = evaluate_agreement(data).disagreements
    assert (d.item_id, d.label, d.verdict, d.critique, d.rationale) == (
        "b",
        "FAIL",
        "PASS",
        "misses step 2",
        "complete answer",
    )


def test_split_is_deterministic_stable_and_roughly_proportional():
    ids = [f"item-{i}" for i in range(2000)]
    split = split_dev_test(ids, test_fraction=0.3)
    assert split == split_dev_test(ids, test_fraction=0.3)
    assert set(split.test) == set(split_dev_test(list(reversed(ids)), test_fraction=0.3).test)
    assert 0.26 < len(split.test) / 2000 < 0.34
    assert set(split.dev).isdisjoint(split.test) and len(split.dev) + len(split.test) == 2000
    grown = split_dev_test([*ids, *(f"new-{i}" for i in range(500))], test_fraction=0.3)
    assert set(split.test) <= set(grown.test)
    assert set(split_dev_test(ids, test_fraction=0.3, salt="other").test) != set(split.test)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "no labelled items"),
        ([LabelledItem("a", "MAYBE", "PASS")], "human label"),
        ([LabelledItem("a", "PASS", "GOOD")], "verdicts must be"),
        ([LabelledItem("a", "PASS", "PASS"), LabelledItem("a", "FAIL", "PASS")], "more than once"),
    ],
)
def test_bad_input(data, message):
    with pytest.raises(ValueError, match=message):
        evaluate_agreement(data)


def test_bad_gate_and_split_arguments():
    with pytest.raises(ValueError, match="unknown gate metric"):
        EvidenceGate({"f1": 0.5})
    with pytest.raises(ValueError, match="unique"):
        split_dev_test(["a", "a"])
    with pytest.raises(ValueError, match="test_fraction"):
        split_dev_test(["a"], test_fraction=1.0)


def test_rater_agreement_flags_a_vague_rubric_and_checks_its_input():
    from sklearn.metrics import cohen_kappa_score

    from verdict.agreement import evaluate_rater_agreement

    rng = np.random.default_rng(0)
    truth = rng.choice(["PASS", "FAIL"], 60)
    ana = list(truth)
    ben = [t if rng.random() < 0.95 else {"PASS": "FAIL", "FAIL": "PASS"}[t] for t in truth]
    coin = list(rng.choice(["PASS", "FAIL"], 60))  # a reviewer guessing: the rubric means nothing to them
    def labels(first, second, names=("ana", "ben")):
        return {f"i{k}": dict(zip(names, pair, strict=True)) for k, pair in enumerate(zip(first, second, strict=True))}

    clear = evaluate_rater_agreement(labels(ana, ben))
    assert clear.status == "ok" and clear.cohen_kappa is not None and clear.cohen_kappa.value == pytest.approx(cohen_kappa_score(ana, ben), abs=1e-12)
    assert clear.fleiss_kappa is not None and clear.percent_agreement == pytest.approx(np.mean(np.equal(ana, ben)))
    vague = evaluate_rater_agreement(labels(ana, coin, ("ana", "cy")))
    assert vague.status == "below_threshold" and vague.gwet_ac1 is not None and vague.gwet_ac1.value < 0.6
    few = evaluate_rater_agreement(labels(ana[:10], ben[:10]))
    assert few.status == "insufficient_data" and few.n_pairable == 10
    with pytest.raises(ValueError, match="must be PASS or FAIL"):
        evaluate_rater_agreement({"i0": {"ana": "UNCLEAR"}})
