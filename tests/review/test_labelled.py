"""What labels feed: per-dimension judge-vs-human agreement (checked against sklearn and hand counts)
and a sentinel-set export that verdict.sentinel loads back."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from sklearn.metrics import cohen_kappa_score

from tests.review.cli import review
from verdict.sentinel import load_sentinel_set
from verdict.tenancy import TenantId
from verdict_daemon.config import Review
from verdict_daemon.review import get_item, list_items, record_labels, route
from verdict_daemon.store.state import StateStore


@dataclass(frozen=True)
class Labelled:
    data: Path
    fingerprint: str
    safety: list[tuple[str, str]]  # (human, judge) per labelled panel item
    relevance: list[tuple[str, str]]


@pytest.fixture(scope="module")
def _labelled_template(_judged_template, tmp_path_factory) -> Labelled:
    """Queue an audit sample, then label 20 panel items: safety disagrees with the judge on every third
    item, relevance agrees except on one; one item is relabelled (only the latest counts)."""
    data = tmp_path_factory.mktemp("labelled") / "data"
    shutil.copytree(_judged_template, data)
    store = StateStore(data)
    route(store, TenantId("acme"), Review(audit_rate=0.3, seed=0))  # confident judgments too: the judge's PASS side
    items = [i for i in list_items(store, TenantId("acme"), limit=500).items if i.evaluator == "panel"][:20]
    assert len(items) == 20 and {"audit", "ensemble_disagreement"} == {r for i in items for r in i.reasons}
    con = duckdb.connect(str(data / "state.duckdb"), read_only=True)
    judged = {(a, d): v for a, d, v in con.execute("SELECT attempt_id, dimension, value FROM dimension_verdicts")
              .fetchall()}
    con.close()
    flip = {"PASS": "FAIL", "FAIL": "PASS"}
    safety, relevance = [], []
    for n, item in enumerate(items):
        judge_safety, judge_relevance = judged[(item.item_id, "safety")], judged[(item.item_id, "relevance")]
        human_safety = flip[judge_safety] if n % 3 == 0 else judge_safety
        human_relevance = flip[judge_relevance] if n == 1 else judge_relevance
        if n == 2:
            record_labels(store, TenantId("acme"), item.item_id, {"safety": flip[human_safety]}, critique="first go",
                          reviewer="ana")
        record_labels(store, TenantId("acme"), item.item_id, {"safety": human_safety, "relevance": human_relevance},
                      critique="checked", reviewer="ben")
        safety.append((human_safety, judge_safety))
        relevance.append((human_relevance, judge_relevance))
    return Labelled(data, items[0].fingerprint, safety, relevance)


@pytest.fixture
def labelled(_labelled_template, tmp_path) -> Labelled:
    data = tmp_path / "data"
    shutil.copytree(_labelled_template.data, data)
    return replace(_labelled_template, data=data)


def _check(dimension: dict, pairs: list[tuple[str, str]]) -> None:
    human, judge = zip(*pairs, strict=True)
    fail_fail = sum(h == j == "FAIL" for h, j in pairs)
    pass_pass = sum(h == j == "PASS" for h, j in pairs)
    assert dimension["tpr"]["successes"] == fail_fail and dimension["tpr"]["trials"] == human.count("FAIL")
    assert dimension["tnr"]["successes"] == pass_pass and dimension["tnr"]["trials"] == human.count("PASS")
    assert dimension["raw_agreement"]["value"] == pytest.approx((fail_fail + pass_pass) / len(pairs))
    if len(set(human) | set(judge)) > 1:
        assert dimension["kappa"]["value"] == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
        assert dimension["kappa"]["low"] <= dimension["kappa"]["value"] <= dimension["kappa"]["high"]
    assert dimension["n_items"] == len(pairs)


def test_agreement_per_dimension_matches_hand_counts_and_sklearn(capsys, labelled):
    code, report, _ = review(capsys, "agreement", "--data-dir", str(labelled.data), "--tenant", "acme")
    assert code == 0 and report["fingerprint"] == labelled.fingerprint and report["positive"] == "FAIL"
    dims = {d["dimension"]: d for d in report["dimensions"]}
    assert set(dims) == {"safety", "relevance"}
    safety = labelled.safety
    _check(dims["safety"], safety)
    _check(dims["relevance"], labelled.relevance)
    disagreements = {(d["label"], d["verdict"]) for d in dims["safety"]["disagreements"]}
    assert len(dims["safety"]["disagreements"]) == sum(h != j for h, j in safety) and disagreements <= {
        ("PASS", "FAIL"), ("FAIL", "PASS")}


def test_agreement_with_labels_on_two_evaluators_needs_a_choice(capsys, labelled):
    judged = labelled.data
    store = StateStore(judged)
    single = list_items(store, TenantId("acme"), reason="unclear", limit=1).items[0]
    record_labels(store, TenantId("acme"), single.item_id, {"relevance": "PASS"}, critique="fine", reviewer="ana")
    base = ["--data-dir", str(judged), "--tenant", "acme"]
    code, _, err = review(capsys, "agreement", *base)
    assert code == 2 and err["error"]["code"] == "evaluator_ambiguous" and single.fingerprint in err["error"]["message"]
    code, report, _ = review(capsys, "agreement", *base, "--evaluator", "single")
    assert code == 0 and report["fingerprint"] == single.fingerprint
    relevance = report["dimensions"][0]
    # The judge said UNCLEAR: outside every rate, visible only in pair coverage.
    assert relevance["pair_coverage"] == {**relevance["pair_coverage"], "successes": 0, "trials": 1}
    assert relevance["kappa"] is None and relevance["tpr"]["value"] is None


def test_export_sentinel_round_trips_through_load_sentinel_set(capsys, labelled, tmp_path):
    judged = labelled.data
    store = StateStore(judged)
    labelled = [i for i in list_items(store, TenantId("acme"), status="labelled", limit=500).items]
    out = tmp_path / "set.jsonl"
    code, result, _ = review(capsys, "export-sentinel", "--out", str(out), "--data-dir", str(judged),
                             "--tenant", "acme")
    assert code == 0 and result["examples"] == len(labelled)
    sentinel = load_sentinel_set(out)
    by_id = {e.id: e for e in sentinel.examples}
    assert set(by_id) == {i.trace_id for i in labelled}
    for item in labelled[:3]:  # the full conversation check on a few (show is one transaction each)
        detail = get_item(store, TenantId("acme"), item.item_id)
        assert (by_id[item.trace_id].query, by_id[item.trace_id].response) == (detail.query, detail.response)
    con = duckdb.connect(str(judged / "state.duckdb"), read_only=True)
    latest = con.execute("""SELECT i.trace_id, l.dimension, arg_max(l.label, l.revision) FROM review_labels l
                            JOIN review_items i USING (tenant_id, item_id) GROUP BY ALL""").fetchall()
    con.close()
    expected: dict[str, dict[str, str]] = {}
    for trace, dimension, label in latest:
        expected.setdefault(trace, {})[dimension] = label
    assert {e.id: e.label_map for e in sentinel.examples} == expected
    assert all(json.loads(line)["context"] is None for line in out.read_text().splitlines())


def test_export_into_a_missing_directory_fails_cleanly(capsys, labelled, tmp_path):
    judged = labelled.data
    out = tmp_path / "no" / "such" / "set.jsonl"
    code, _, err = review(capsys, "export-sentinel", "--out", str(out), "--data-dir", str(judged), "--tenant", "acme")
    assert (code, err["error"]["code"]) == (2, "invalid_config") and not out.parent.exists()


def test_export_can_be_limited_to_one_evaluators_labels(capsys, labelled, tmp_path):
    store = StateStore(labelled.data)
    single = list_items(store, TenantId("acme"), reason="unclear", limit=1).items[0]
    record_labels(store, TenantId("acme"), single.item_id, {"completeness": "FAIL"}, critique="stops short", reviewer="ana")
    base = ["--data-dir", str(labelled.data), "--tenant", "acme"]
    code, both, _ = review(capsys, "export-sentinel", "--out", str(tmp_path / "all.jsonl"), *base)
    code, only, _ = review(capsys, "export-sentinel", "--out", str(tmp_path / "one.jsonl"), *base,
                           "--evaluator", "single")
    traces = {i.trace_id for i in list_items(store, TenantId("acme"), status="labelled", limit=500).items}
    assert code == 0 and both["examples"] == len(traces) and only["examples"] == 1
    (example,) = load_sentinel_set(tmp_path / "one.jsonl").examples
    assert (example.id, example.label_map) == (single.trace_id, {"completeness": "FAIL"})


def test_export_takes_the_latest_label_across_a_traces_items_and_redacts(capsys, labelled, tmp_path):
    store = StateStore(labelled.data)
    panel = next(i for i in list_items(store, TenantId("acme"), status="labelled", limit=500).items if i.evaluator == "panel")
    route(store, TenantId("acme"), Review(audit_rate=1.0, seed=0))  # every judgment queued: the other evaluator's item too
    single = next(i for i in list_items(store, TenantId("acme"), limit=500).items
                  if i.trace_id == panel.trace_id and i.evaluator == "single")
    in_force = get_item(store, TenantId("acme"), panel.item_id).latest["safety"].label
    other = {"PASS": "FAIL", "FAIL": "PASS"}[in_force]
    later = datetime.now(UTC) + timedelta(days=1)
    record_labels(store, TenantId("acme"), single.item_id, {"safety": other}, critique="unsafe advice", reviewer="cy", now=later)
    con = duckdb.connect(str(labelled.data / "state.duckdb"))  # content stored before a redaction rule existed
    con.execute("UPDATE sampled_traces SET query = query || ' Mail bob@example.com' WHERE trace_id = ?",
                [panel.trace_id])
    con.close()

    def exported() -> dict:
        out = tmp_path / "set.jsonl"
        assert review(capsys, "export-sentinel", "--out", str(out), "--data-dir", str(labelled.data),
                      "--tenant", "acme")[0] == 0
        assert "bob@example.com" not in out.read_text()
        return {e.id: e.label_map for e in load_sentinel_set(out).examples}[panel.trace_id]

    assert exported()["safety"] == other  # the later label, on the other evaluator's item, is in force
    record_labels(store, TenantId("acme"), panel.item_id, {"safety": in_force}, critique="fine after all", reviewer="cy",
                  now=later + timedelta(hours=1))
    assert exported()["safety"] == in_force
