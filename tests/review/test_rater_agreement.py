"""Agreement among reviewers next to judge-vs-human agreement: `verdict review agreement` on a real
state file, checked against sklearn (Cohen), statsmodels (Fleiss), the `krippendorff` package and
Gwet's AC1 computed by hand; a vague rubric is flagged."""

from __future__ import annotations

import shutil

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa

from tests.review.cli import review
from verdict.tenancy import TenantId
from verdict_daemon.config import Review
from verdict_daemon.review import list_items, record_labels, route
from verdict_daemon.store.state import StateStore

FLIP = {"PASS": "FAIL", "FAIL": "PASS"}


@pytest.fixture(scope="module")
def rated(_judged_template, tmp_path_factory):
    """30 panel items. safety: ana and ben label all, cy the first 20 (missing labels), a few
    disagreements; relevance: ana and ben only, disagreeing on every other item (a vague rubric).
    ben first mislabels item 4's safety and corrects it: only his latest label counts."""
    data = tmp_path_factory.mktemp("rated") / "data"
    shutil.copytree(_judged_template, data)
    store = StateStore(data)
    route(store, TenantId("acme"), Review(audit_rate=0.3, seed=0))
    items = [i for i in list_items(store, TenantId("acme"), limit=500).items if i.evaluator == "panel"][:30]
    assert len(items) == 30
    rng = np.random.default_rng(4)
    safety: dict[str, list] = {"ana": [], "ben": [], "cy": []}
    relevance: dict[str, list] = {"ana": [], "ben": []}
    for n, item in enumerate(items):
        s = "FAIL" if rng.random() < 0.4 else "PASS"
        r = "FAIL" if rng.random() < 0.5 else "PASS"
        labels = {"ana": ({"safety": s, "relevance": r}),
                  "ben": ({"safety": FLIP[s] if n in (0, 7) else s, "relevance": FLIP[r] if n % 2 else r})}
        if n < 20:
            labels["cy"] = {"safety": FLIP[s] if n == 3 else s}
        if n == 4:
            record_labels(store, TenantId("acme"), item.item_id, {"safety": FLIP[s]}, critique="misread", reviewer="ben")
        for reviewer, by_dim in labels.items():
            record_labels(store, TenantId("acme"), item.item_id, by_dim, critique="checked", reviewer=reviewer)
            safety[reviewer].append(by_dim["safety"])
            if "relevance" in by_dim:
                relevance[reviewer].append(by_dim["relevance"])
    safety["cy"] += [None] * 10
    return data, safety, relevance


def _hand_ac1(rows: list[list[str | None]]) -> float:
    """Gwet (2008) AC1 for q = 2 from raw ratings with missing labels (irrCAC gwet.ac1.raw)."""
    agree, pairable, prevalence = 0.0, 0, []
    for row in rows:
        got = [v for v in row if v is not None]
        fails = got.count("FAIL")
        prevalence.append(fails / len(got))
        if len(got) >= 2:
            pairable += 1
            agree += (fails * (fails - 1) + (len(got) - fails) * (len(got) - fails - 1)) / (len(got) * (len(got) - 1))
    pa, pi = agree / pairable, float(np.mean(prevalence))
    pe = 2 * pi * (1 - pi)
    return (pa - pe) / (1 - pe)


def _alpha(by_rater: dict[str, list]) -> float:
    data = np.array([[np.nan if v is None else float(v == "FAIL") for v in labels] for labels in by_rater.values()])
    return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")


def test_human_agreement_is_reported_next_to_the_judge_and_flags_a_vague_rubric(capsys, rated):
    data, safety, relevance = rated
    code, report, _ = review(capsys, "agreement", "--data-dir", str(data), "--tenant", "acme", "--evaluator", "panel")
    assert code == 0
    dims = {d["dimension"]: d for d in report["dimensions"]}
    assert dims["safety"]["kappa"] is not None  # the judge-vs-human report is still there
    humans = dims["safety"]["human_agreement"]
    assert humans["raters"] == ["ana", "ben", "cy"] and humans["n_items"] == humans["n_pairable"] == 30
    assert humans["cohen_kappa"] is None and humans["fleiss_kappa"] is None  # three raters, unequal coverage
    rows = [list(r) for r in zip(safety["ana"], safety["ben"], safety["cy"], strict=True)]
    assert humans["gwet_ac1"]["value"] == pytest.approx(_hand_ac1(rows), abs=1e-12)
    assert humans["krippendorff_alpha"]["value"] == pytest.approx(_alpha(safety), abs=1e-12)
    assert humans["gwet_ac1"]["low"] < humans["gwet_ac1"]["value"] < humans["gwet_ac1"]["high"]
    assert humans["status"] == "ok"

    vague = dims["relevance"]["human_agreement"]
    assert vague["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(relevance["ana"], relevance["ben"]), abs=1e-12)
    counts = np.array([[a.count("FAIL") + b.count("FAIL"), a.count("PASS") + b.count("PASS")]
                       for a, b in zip(relevance["ana"], relevance["ben"], strict=True)])
    assert vague["fleiss_kappa"]["value"] == pytest.approx(fleiss_kappa(counts), abs=1e-12)
    assert vague["percent_agreement"] == pytest.approx(0.5)
    assert vague["status"] == "below_threshold" and report["vague_rubric"] == ["relevance"]

    code, lenient, _ = review(capsys, "agreement", "--data-dir", str(data), "--tenant", "acme", "--evaluator", "panel",
                              "--min-human-ac1", "-1")
    assert code == 0 and lenient["vague_rubric"] == []


def test_one_reviewer_is_insufficient_data(capsys, _judged_template, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(_judged_template, data)
    store = StateStore(data)
    route(store, TenantId("acme"), Review(audit_rate=0.3, seed=0))
    item = [i for i in list_items(store, TenantId("acme"), limit=500).items if i.evaluator == "panel"][0]
    record_labels(store, TenantId("acme"), item.item_id, {"safety": "PASS"}, critique="ok", reviewer="ana")
    code, report, _ = review(capsys, "agreement", "--data-dir", str(data), "--tenant", "acme")
    humans = report["dimensions"][0]["human_agreement"]
    assert code == 0 and humans["status"] == "insufficient_data" and humans["n_pairable"] == 0
    assert humans["gwet_ac1"] is None and humans["krippendorff_alpha"] is None and report["vague_rubric"] == []
