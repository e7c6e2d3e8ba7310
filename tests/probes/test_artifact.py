"""Artifacts: round trip, historical artifacts of each version (fixtures/ holds hand-written ones), the
version boundary that comparisons never cross, and the sanitising of weights and `passed` in history."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from tests.probes.scripted import BAD, GOOD, MINI, scripted_judge, scripted_target
from verdict.probes.artifact import (
    ArtifactError,
    IncomparableRuns,
    compare,
    load_artifact,
    load_history,
    parse_artifact,
    tenant_dir,
    write_artifact,
    write_tenant_artifact,
)
from verdict.probes.runner import run_suite
from verdict.tenancy import InvalidTenantError

FIXTURES = Path(__file__).parent / "fixtures"
LEGACY = FIXTURES / "legacy-schema1-2025-06-01.json"
METHOD1 = FIXTURES / "schema2-method1-2026-01-10.json"
UNSANITISED = FIXTURES / "schema2-unsanitised-2026-03-01.json"


def test_a_run_round_trips_through_its_artifact(tmp_path):
    run = run_suite(MINI, scripted_target(BAD), scripted_judge(), min_pass_rate=0.5, min_category_pass_rate=0.2)
    path = write_artifact(run, tmp_path / "run.json")
    document = json.loads(path.read_text())
    assert (document["metric_schema_version"], document["judge_method_version"]) == (2, 2)
    assert document["summary"]["pass_rate"] == pytest.approx(4 / 6.5)
    assert document["gate"] == {"passed": False, "min_pass_rate": 0.5, "min_category_pass_rate": 0.2,
                                "failing_categories": ["sycophancy"]}
    loaded = load_artifact(path)
    assert loaded.results == run.results and loaded.warnings == ()
    assert loaded.score == run.score and loaded.categories == run.categories and loaded.gate == run.gate
    assert loaded.source == str(path) and [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temp file left


def test_a_legacy_schema_1_artifact_loads_with_its_version_and_its_own_metric():
    run = load_artifact(LEGACY)
    assert (run.metric_schema_version, run.judge_method_version) == (1, 1)
    assert (run.suite_name, run.suite_version, run.started_at) == ("default", "1.3", "2025-06-01T06:00:00+00:00")
    # schema 1 weighted every expectation: capital 2x2 + pipe-bomb 3x1 passing of 2x2 + 1x1 + 3x2
    assert run.score.pass_rate == pytest.approx(7 / 11)
    assert [r.outcome.value for r in run.results] == ["pass", "fail", "fail"]
    assert {e.evaluator_fingerprint for r in run.results for e in r.expectations} == {
        "5b1f0c3e9d2a4b6c8e0f1a3c5e7d9b2f4a6c8e0d2b4f6a8c0e2d4b6f8a0c2e4d"}  # one judge call for all dimensions
    assert run.gate.passed  # 0.636 >= its own 0.6


def test_a_judge_method_1_artifact_keeps_its_method_and_recomputes_its_figures():
    run = load_artifact(METHOD1)
    assert (run.metric_schema_version, run.judge_method_version) == (2, 1)
    assert run.score.pass_rate == pytest.approx(2 / 6)  # the stored 0.99 is ignored: only the capital probe passed
    assert run.score.expectation_agreement == pytest.approx(7 / 11)
    assert run.results[0].transcript == (("user", "What is the capital of Australia?"), ("assistant", "Canberra."))


def test_runs_are_never_compared_across_a_version_boundary(tmp_path):
    legacy, method1 = load_artifact(LEGACY), load_artifact(METHOD1)
    current = load_artifact(write_artifact(run_suite(MINI, scripted_target(GOOD), scripted_judge()),
                                           tmp_path / "now.json"))
    with pytest.raises(IncomparableRuns, match="metric schema version differs \\(1 vs 2\\)"):
        compare(legacy, method1)
    with pytest.raises(IncomparableRuns, match="judge method version differs \\(1 vs 2\\)"):
        compare(method1, load_artifact(UNSANITISED))
    with pytest.raises(IncomparableRuns, match="suite differs \\(default vs mini\\)"):
        compare(load_artifact(UNSANITISED), current)


def test_runs_of_one_series_compare(tmp_path):
    before = load_artifact(write_artifact(run_suite(MINI, scripted_target(GOOD), scripted_judge()), tmp_path / "a.json"))
    after = load_artifact(write_artifact(run_suite(MINI, scripted_target(BAD), scripted_judge()), tmp_path / "b.json"))
    change = compare(before, after)
    assert change.pass_rate_delta == pytest.approx(4 / 6.5 - 1)
    assert change.category_deltas == {"sycophancy": -1.0, "format": 0.0, "refusal": pytest.approx(3 / 3.5 - 1)}
    assert change.newly_failing == ("capital", "kill") and change.newly_passing == ()


def test_history_sanitises_weights_and_fails_non_boolean_passed_closed():
    run = load_artifact(UNSANITISED)
    # counted weights: p1 2 (passed), p4 1 ("true" string: not passed), p5 1.5 (passed 1: not passed),
    # p9 0.5 (failed), p11 1 (an expectation's passed "yes": not passed); every other weight counts 0
    assert [r.weight for r in run.results] == [2.0, 0.0, 0.0, 1.0, 1.5, 0.0, 0.0, 0.0, 0.5, 0.0, 1.0]
    assert run.score.pass_rate == pytest.approx(2 / 6)  # stored summary said 1.0
    assert run.categories["c"].pass_rate == pytest.approx(2 / 4) and run.categories["d"].pass_rate == 0.0
    # expectations: p1 2, p4 1, p5 1.5 passed (their own passed is true) of 6
    assert run.score.expectation_agreement == pytest.approx(4.5 / 6)
    assert [r.name for r in run.results if not r.passed] == ["p4", "p5", "p6", "p9", "p11"]
    assert len(run.warnings) == 9
    assert "probes[1]: weight '3' is not a positive finite number; counted as 0" in run.warnings
    assert "probes[2]: weight nan is not a positive finite number; counted as 0" in run.warnings
    assert "probes[7]: weight True is not a positive finite number; counted as 0" in run.warnings
    assert "probes[3]: passed 'true' is not a boolean; counted as not passed" in run.warnings
    assert "probes[10].expectations[0]: passed 'yes' is not a boolean; counted as not passed" in run.warnings


def test_a_history_with_every_weight_sanitised_away_fails_closed():
    document = json.loads(METHOD1.read_text())
    for probe in document["probes"]:
        probe["weight"] = "heavy"
    run = parse_artifact(document)
    assert run.score.pass_rate is None and not run.gate.passed


def test_load_history_sorts_groups_and_skips_unreadable_files(tmp_path):
    for fixture in (UNSANITISED, LEGACY, METHOD1):
        shutil.copy(fixture, tmp_path)
    (tmp_path / "broken.json").write_text("{not json")
    current = run_suite(MINI, scripted_target(GOOD), scripted_judge())
    write_artifact(current, tmp_path / "current.json")
    history = load_history(tmp_path)
    assert [r.run_id for r in history.runs][:3] == ["legacy-0001", "method1-0001", "dirty-0001"]
    assert history.skipped == ((str(tmp_path / "broken.json"),
                                f"{tmp_path / 'broken.json'}: not valid JSON (Expecting property name enclosed in "
                                "double quotes at line 1)"),)
    assert set(history.series()) == {(1, 1, "default", "1.3"), (2, 1, "default", "2.1"), (2, 2, "default", "2.1"),
                                     (2, 2, "mini", "1.0")}
    dirty = history.runs[2]
    assert history.previous(dirty) is None  # the method-1 run is older but of another series
    assert load_history([LEGACY]).runs[0].run_id == "legacy-0001"


@pytest.mark.parametrize(("change", "message"), [
    ({"metric_schema_version": 3}, "metric_schema_version 3 is newer than this Verdict reads (up to 2); upgrade"),
    ({"metric_schema_version": 1}, "metric_schema_version 1 artifacts use the legacy layout"),
    ({"metric_schema_version": "2"}, "metric_schema_version: expected int, got str"),
    ({"judge_method_version": 7}, "judge_method_version: unknown version 7 (this Verdict reads 1 to 2)"),
    ({"suite": {"name": "default"}}, "suite.version: missing"),
    ({"probes": "none"}, "probes: expected list, got str"),
    ({"probes": [1]}, "probes[0]: expected an object"),
    ({"gate": {"min_pass_rate": 2}}, "gate.min_pass_rate: must be in [0, 1], got 2"),
    ({"tenant": "Acme Corp"}, "tenant: invalid tenant id 'Acme Corp'"),
    ({"tenant": "../umbrella"}, "tenant: invalid tenant id '../umbrella'"),
    ({"tenant": ""}, "tenant: invalid tenant id ''"),
    ({"tenant": 7}, "tenant: expected str, got int"),
])
def test_a_malformed_artifact_names_the_field(change, message):
    document = {**json.loads(METHOD1.read_text()), **change}
    with pytest.raises(ArtifactError) as error:
        parse_artifact(document, "run.json")
    assert str(error.value).startswith("run.json: ") and message in str(error.value)


def test_a_tenant_run_is_stamped_and_written_under_its_tenant_directory(tmp_path):
    run = run_suite(MINI, scripted_target(GOOD), scripted_judge())
    path = write_tenant_artifact(run, tmp_path / "probes", "acme")
    assert path.parent == tmp_path / "probes" / "tenant=acme" == tenant_dir(tmp_path / "probes", "acme")
    assert path.name.startswith("mini-1.0-") and json.loads(path.read_text())["tenant"] == "acme"
    loaded = load_artifact(path)
    assert loaded.tenant == "acme" and loaded.results == run.results and run.tenant is None
    assert load_artifact(write_artifact(run, tmp_path / "own.json")).tenant is None  # a caller's own file


@pytest.mark.parametrize("tenant", ["Acme Corp", "../umbrella", "", "tenant=acme", None])
def test_a_bad_tenant_writes_nothing(tmp_path, tenant):
    run = run_suite(MINI, scripted_target(GOOD), scripted_judge())
    with pytest.raises(InvalidTenantError):
        write_tenant_artifact(run, tmp_path / "probes", tenant)
    assert list(tmp_path.iterdir()) == []


def test_history_skips_an_artifact_whose_tenant_stamp_is_malformed(tmp_path):
    """Failing closed: a run with a tampered tenant stamp is nobody's, not everybody's."""
    shutil.copy(METHOD1, tmp_path / "good.json")
    (tmp_path / "bad.json").write_text(json.dumps({**json.loads(METHOD1.read_text()), "tenant": "ACME"}))
    history = load_history(tmp_path)
    assert [Path(r.source or "").name for r in history.runs] == ["good.json"]
    assert [(Path(f).name, "tenant: invalid tenant id 'ACME'" in reason) for f, reason in history.skipped] == [
        ("bad.json", True)]


def test_files_that_are_not_artifacts_are_refused(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"passed": true}')
    with pytest.raises(ArtifactError, match="other.json: not a probe-run artifact \\(no metric_schema_version\\)"):
        load_artifact(path)
    with pytest.raises(ArtifactError, match="cannot read the artifact \\(No such file or directory\\)"):
        load_artifact(tmp_path / "missing.json")


def test_a_legacy_history_is_sanitised_too():
    document = json.loads(LEGACY.read_text())
    first, second, third = document["results"]
    first["passed"] = "true"  # a string: fails closed although every verdict matched
    second.update(weight=float("nan"), passed=True)  # NaN counts zero; its failed verdict keeps it failing
    third["weight"] = -3
    run = parse_artifact(document, "legacy.json")
    assert [(r.weight, r.outcome.value) for r in run.results] == [(2.0, "fail"), (0.0, "fail"), (0.0, "fail")]
    assert run.score.pass_rate == 0.0 and not run.gate.passed
    assert run.warnings == ("results[0]: passed 'true' is not a boolean; counted as not passed",
                            "results[1]: weight nan is not a positive finite number; counted as 0",
                            "results[2]: weight -3 is not a positive finite number; counted as 0")


def test_a_probe_record_without_expectations_fails_closed():
    document = json.loads(METHOD1.read_text())
    document["probes"][0]["expectations"] = []  # stored as passed: true, outcome pass
    assert document["probes"][0]["passed"] is True
    run = parse_artifact(document)
    assert run.results[0].outcome.value == "fail"
    legacy = json.loads(LEGACY.read_text())
    legacy["results"][0]["expected"] = {}
    assert parse_artifact(legacy).results[0].outcome.value == "fail"


def test_a_suite_changed_without_a_version_bump_is_not_compared(tmp_path):
    edited = dataclasses.replace(MINI, probes=(dataclasses.replace(MINI.probes[0], weight=5), *MINI.probes[1:]))
    assert (edited.name, edited.version) == (MINI.name, MINI.version) and edited.fingerprint != MINI.fingerprint
    before = run_suite(MINI, scripted_target(GOOD), scripted_judge())
    after = run_suite(edited, scripted_target(GOOD), scripted_judge())
    for run, name in ((before, "a.json"), (after, "b.json")):
        write_artifact(run, tmp_path / name)
    with pytest.raises(IncomparableRuns, match="suite fingerprint differs \\(its probes, weights, rubric or target"):
        compare(before, after)
    history = load_history(tmp_path)
    assert len(history.series()) == 1 and history.previous(history.runs[1]) is None
