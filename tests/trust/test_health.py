"""evaluate_judge_health with scripted judges whose replies depend on the example; statistics vs references."""

import dataclasses
import json

import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from tests.trust.scripted import (
    FLAKY_MODEL,
    GOOD_MODEL,
    LENIENT_MODEL,
    RUBRIC,
    examples,
    write_jsonl,
)
from verdict.judges.ensemble import JudgeEnsemble
from verdict.judges.judge import Judge
from verdict.judges.rubric import Dimension, Rubric
from verdict.models.scripted import ScriptedModel
from verdict.sentinel import HealthStatus, evaluate_judge_health, load_sentinel_set


@pytest.fixture
def sentinel(tmp_path):
    return load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", examples(40)), RUBRIC)


def test_a_judge_that_matches_the_humans_is_healthy(sentinel):
    judge = Judge(GOOD_MODEL, RUBRIC)
    health = evaluate_judge_health(judge, sentinel)
    assert health.status is HealthStatus.HEALTHY and health.is_healthy
    assert (health.examples, health.usable, health.errors, health.passed) == (40, 40, 0, 40)
    assert health.evaluator_fingerprint == judge.fingerprint
    assert health.sentinel_fingerprint == sentinel.fingerprint
    low, high = proportion_confint(40, 40, alpha=0.05, method="wilson")
    assert health.pass_rate_low == pytest.approx(low, abs=1e-12) and health.pass_rate_high == pytest.approx(high)


def test_a_lenient_judge_is_degraded_and_the_bound_matches_statsmodels(sentinel):
    health = evaluate_judge_health(Judge(LENIENT_MODEL, RUBRIC), sentinel)
    assert health.status is HealthStatus.DEGRADED
    # every 4th example is labelled relevance FAIL and the lenient judge says PASS: 30 of 40 match
    assert (health.passed, health.usable) == (30, 40)
    low, high = proportion_confint(30, 40, alpha=0.05, method="wilson")
    assert health.pass_rate_low == pytest.approx(low, abs=1e-12)
    assert health.pass_rate_high == pytest.approx(high, abs=1e-12)
    assert "lower bound" in health.reason
    failed = {r.id for r in health.results if r.outcome.value == "fail"}
    assert failed == {f"ex-{n}" for n in range(0, 40, 4)}


def test_the_gate_is_the_lower_bound_not_the_point_estimate(tmp_path):
    # 38 of 40 match: point estimate 0.95, Wilson lower bound ~0.835
    rows = examples(40, off_topic_every=1000)
    for n in (1, 2):
        rows[n]["labels"]["relevance"] = "FAIL"
    sentinel = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", rows), RUBRIC)
    judge = Judge(GOOD_MODEL, RUBRIC)
    low, _ = proportion_confint(38, 40, alpha=0.05, method="wilson")
    assert evaluate_judge_health(judge, sentinel, threshold=0.83).status is HealthStatus.HEALTHY
    assert evaluate_judge_health(judge, sentinel, threshold=0.9).status is HealthStatus.DEGRADED
    assert 0.83 < low < 0.9


def test_too_few_examples_is_insufficient_even_when_all_pass(tmp_path):
    sentinel = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", examples(29)), RUBRIC)
    health = evaluate_judge_health(Judge(GOOD_MODEL, RUBRIC), sentinel)
    assert health.status is HealthStatus.INSUFFICIENT_DATA and health.passed == 29
    assert evaluate_judge_health(Judge(GOOD_MODEL, RUBRIC), sentinel, minimum_examples=29).is_healthy


def test_one_execution_error_prevents_healthy(tmp_path):
    sentinel = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", examples(40, outage=(5,))), RUBRIC)
    health = evaluate_judge_health(Judge(FLAKY_MODEL, RUBRIC, retries=0), sentinel)
    assert health.status is HealthStatus.DEGRADED
    assert (health.usable, health.errors, health.passed) == (39, 1, 39)
    error = next(r for r in health.results if r.outcome.value == "error")
    assert error.id == "ex-5" and (error.error or "").startswith("model:")


def test_errors_that_leave_too_few_usable_examples_are_insufficient(tmp_path):
    sentinel = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", examples(32, outage=(1, 2, 3))), RUBRIC)
    health = evaluate_judge_health(Judge(FLAKY_MODEL, RUBRIC, retries=0), sentinel)
    assert health.status is HealthStatus.INSUFFICIENT_DATA and (health.usable, health.errors) == (29, 3)


def test_dimension_diagnostics_match_sklearn(tmp_path):
    rows = examples(40)
    for n in (1, 6, 11):  # humans disagree with the judge on safety for three examples
        rows[n]["labels"]["safety"] = "FAIL"
    del rows[7]["labels"]["safety"]  # an example may label only some dimensions
    sentinel = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", rows), RUBRIC)
    health = evaluate_judge_health(Judge(LENIENT_MODEL, RUBRIC), sentinel)
    by_name = {d.dimension: d for d in health.dimensions}
    human = [r["labels"]["relevance"] for r in rows]
    assert by_name["relevance"].kappa == pytest.approx(cohen_kappa_score(human, ["PASS"] * 40), abs=1e-12)
    assert by_name["relevance"].kappa == 0.0 and by_name["relevance"].agreed == 30
    safety_human = [r["labels"]["safety"] for r in rows if "safety" in r["labels"]]
    assert by_name["safety"].labelled == 39 and by_name["safety"].agreed == 36
    # judge always PASS on safety: kappa is 0 by sklearn as well
    assert by_name["safety"].kappa == pytest.approx(cohen_kappa_score(safety_human, ["PASS"] * 39), abs=1e-12)
    good = {d.dimension: d for d in evaluate_judge_health(Judge(GOOD_MODEL, RUBRIC), sentinel).dimensions}
    judge_relevance = ["FAIL" if "off-topic" in r["response"] else "PASS" for r in rows]
    assert good["relevance"].kappa == pytest.approx(cohen_kappa_score(human, judge_relevance), abs=1e-12)
    assert good["relevance"].kappa == 1.0


def test_kappa_with_partial_agreement_matches_sklearn(tmp_path):
    rows = examples(40)
    for n in (0, 1, 2, 5):  # flip some human relevance labels: both raters use both categories
        label = rows[n]["labels"]["relevance"]
        rows[n]["labels"]["relevance"] = "PASS" if label == "FAIL" else "FAIL"
    sentinel = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", rows), RUBRIC)
    health = evaluate_judge_health(Judge(GOOD_MODEL, RUBRIC), sentinel)
    human = [r["labels"]["relevance"] for r in rows]
    judge = ["FAIL" if "off-topic" in r["response"] else "PASS" for r in rows]
    relevance = next(d for d in health.dimensions if d.dimension == "relevance")
    assert relevance.kappa == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    assert relevance.kappa is not None and relevance.kappa_low is not None and relevance.kappa_high is not None
    assert 0 < relevance.kappa < 1 and relevance.kappa_low < relevance.kappa < relevance.kappa_high


def test_an_all_single_category_dimension_has_no_kappa(sentinel):
    health = evaluate_judge_health(Judge(GOOD_MODEL, RUBRIC), sentinel)
    safety = next(d for d in health.dimensions if d.dimension == "safety")
    assert safety.kappa is None and safety.agreement == 1.0


def test_the_record_is_frozen_and_json_serialisable(sentinel):
    ensemble = JudgeEnsemble([Judge(GOOD_MODEL, RUBRIC), Judge(LENIENT_MODEL, RUBRIC)])
    health = evaluate_judge_health(ensemble, sentinel)
    with pytest.raises(dataclasses.FrozenInstanceError):
        health.status = HealthStatus.HEALTHY  # type: ignore[misc]  # the assignment must fail: the record is frozen
    data = json.loads(json.dumps(health.to_dict(), allow_nan=False))
    assert data["evaluator_fingerprint"] == ensemble.fingerprint
    assert data["sentinel_fingerprint"] == sentinel.fingerprint
    assert data["status"] in {"healthy", "degraded", "insufficient_data"}
    assert len(data["results"]) == 40 and data["results"][0]["verdicts"]


def test_examples_without_a_set_get_the_same_fingerprint(sentinel):
    health = evaluate_judge_health(Judge(GOOD_MODEL, RUBRIC), list(sentinel.examples))
    assert health.sentinel_fingerprint == sentinel.fingerprint


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"minimum_examples": 0}, "minimum_examples"), ({"threshold": 1.5}, "threshold"),
])
def test_bad_configuration_is_rejected(sentinel, kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate_judge_health(Judge(GOOD_MODEL, RUBRIC), sentinel, **kwargs)


def test_a_declared_dimension_the_judge_skips_is_a_mismatch(tmp_path):
    rubric = Rubric("ctx", "1", (Dimension("groundedness", "Supported by the context.", requires_context=True),
                                 Dimension("relevance", "On topic.")))
    reply = json.dumps({"relevance": {"rationale": "r", "evidence": [], "verdict": "PASS"}})
    rows = [{"id": "a", "response": "r", "labels": {"groundedness": "PASS", "relevance": "PASS"}}]
    sentinel = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", rows), rubric)
    health = evaluate_judge_health(Judge(ScriptedModel([reply]), rubric), sentinel, minimum_examples=1)
    assert health.results[0].outcome.value == "fail" and health.results[0].mismatches == ("groundedness",)
    assert [d.dimension for d in health.dimensions] == ["relevance"]


def test_nothing_usable_gives_none_rates_not_nan(tmp_path):
    sentinel = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", examples(3, outage=(0, 1, 2))), RUBRIC)
    health = evaluate_judge_health(Judge(FLAKY_MODEL, RUBRIC, retries=0), sentinel)
    assert health.status is HealthStatus.INSUFFICIENT_DATA
    assert (health.pass_rate, health.pass_rate_low, health.pass_rate_high) == (None, None, None)
    json.dumps(health.to_dict(), allow_nan=False)
