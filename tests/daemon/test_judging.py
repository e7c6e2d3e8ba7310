"""Judging: attempts kept, latest used, ERROR retried up to a limit, outages, budgets, no duplicates."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading

import duckdb
import pytest

from tests.daemon.conftest import NOW
from tests.daemon.lakes import grade
from verdict.judges.judge import Judge
from verdict.models.base import ModelError
from verdict.models.scripted import ScriptedModel
from verdict.tenancy import TenantId
from verdict.tracing import current_workload
from verdict_daemon.clustering.assign_step import IntentKeyAssigner, assign
from verdict_daemon.config import EvaluatorConfig, Judging, Sampling
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.cycle import build_evaluator
from verdict_daemon.service.judge_evaluators import JudgeEvaluator
from verdict_daemon.service.judging import _Writer, coverage, judge, pending_work
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.drift_runs import judgment_table
from verdict_daemon.store.state import StateStore


def _evaluator(reply, name="scripted/test") -> JudgeEvaluator:
    model = ScriptedModel(reply, name=name)
    judge_ = Judge(model, retries=0)
    return JudgeEvaluator("quality", judge_, {"kind": "rubric"})


def _attempts(store: StateStore) -> list[tuple]:
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        return con.execute("SELECT trace_id, attempt_no, status, error_code FROM judgment_attempts "
                           "ORDER BY trace_id, attempt_no").fetchall()
    finally:
        con.close()


@pytest.fixture
def sampled(lake):
    store = StateStore(lake)
    sample(store, lake, TenantId("acme"), Sampling(per_cluster_per_window=2), NOW)  # 4 intents x 9 days x 2 = 72
    return store


def test_error_attempts_are_kept_retried_up_to_the_limit_and_excluded(sampled):
    con = duckdb.connect(str(sampled.path), read_only=True)
    response = con.execute("SELECT response FROM sampled_traces ORDER BY trace_id LIMIT 1").fetchall()[0][0]
    bad = {r[0] for r in con.execute("SELECT trace_id FROM sampled_traces WHERE response = ?", [response]).fetchall()}
    con.close()

    def reply(request):
        return "not json" if response in request.messages[-1].content else grade(request)

    evaluator = _evaluator(reply)
    config = Judging(max_attempts=3, concurrency=4)
    first = judge(sampled, TenantId("acme"), evaluator, config, "run-1")
    assert (first.pending, first.judged, first.errors) == (72, 72 - len(bad), len(bad))
    for run in ("run-2", "run-3", "run-4"):
        judge(sampled, TenantId("acme"), evaluator, config, run)
    attempts = _attempts(sampled)
    for trace in bad:
        assert [a for a in attempts if a[0] == trace] == [(trace, n, "ERROR", "invalid_reply") for n in (1, 2, 3)]
    assert len(attempts) == 72 - len(bad) + 3 * len(bad)  # every attempt kept; good traces judged once
    assign(sampled, TenantId("acme"), IntentKeyAssigner())
    table = judgment_table(sampled, TenantId("acme"), evaluator.fingerprint).to_pylist()
    assert {r["value"] for r in table if r["trace_id"] in bad} == {"ERROR"}
    assert {r["value"] for r in table if r["trace_id"] not in bad} == {"PASS", "FAIL"}
    assert coverage(sampled, TenantId("acme"), evaluator.fingerprint) == {  # what the summary puts next to every rate
        "sampled_traces": 72, "usable": 72 - len(bad), "error": len(bad), "no_content": 0,
        "rate": round((72 - len(bad)) / 72, 4)}


def test_a_later_success_replaces_an_error_as_the_latest_attempt(sampled):
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        return "not json" if calls["n"] <= 72 else grade(request)

    evaluator = _evaluator(flaky)
    every_trace = Judging(concurrency=1, early_stop_after=0)  # a first run that fails throughout, to the end
    judge(sampled, TenantId("acme"), evaluator, every_trace, "run-1")
    second = judge(sampled, TenantId("acme"), evaluator, every_trace, "run-2")
    assert second.judged == 72
    assign(sampled, TenantId("acme"), IntentKeyAssigner())
    assert "ERROR" not in {r["value"] for r in judgment_table(sampled, TenantId("acme"), evaluator.fingerprint).to_pylist()}


def test_provider_outage_stops_the_run_and_is_not_counted_against_the_limit(sampled):
    down = _evaluator(lambda r: ModelError("connection", "refused"))
    for run in ("a", "b", "c", "d"):
        with pytest.raises(DaemonError) as err:
            judge(sampled, TenantId("acme"), down, Judging(max_attempts=2, concurrency=2), run)
        assert err.value.code == "provider_unavailable"
    assert len(_attempts(sampled)) <= 4 * (8 + 2)  # stopped after the probe (+ in flight), not 72 per run
    healthy = judge(sampled, TenantId("acme"), _evaluator(grade), Judging(max_attempts=2), "e")
    assert healthy.judged == 72


def test_a_run_whose_first_results_all_fail_the_same_way_stops_early_saying_why(sampled):
    refused = _evaluator(lambda r: ModelError("bad_request", "HTTP 422 from scripted/test: frequency_penalty: "
                                              "Input should be a valid number"))
    report = judge(sampled, TenantId("acme"), refused, Judging(concurrency=2, early_stop_after=4), "r")
    assert report.judged == 0 and 4 <= report.errors <= 4 + 2  # the probe, plus what was already in flight
    assert report.early_stop is not None
    assert re.match(r"stopped early: the first 4 result\(s\) all failed with \w+/bad_request ", report.early_stop)
    assert "frequency_penalty" in report.early_stop
    assert len(_attempts(sampled)) == report.errors  # every call made is recorded; no more were made


def test_early_stop_off_judges_everything(sampled):
    refused = _evaluator(lambda r: ModelError("bad_request", "HTTP 422"))
    report = judge(sampled, TenantId("acme"), refused, Judging(concurrency=4, early_stop_after=0), "r")
    assert (report.errors, report.early_stop) == (72, None)


def test_mixed_failures_or_one_success_among_the_first_results_do_not_stop_the_run(sampled):
    calls = {"n": 0}
    lock = threading.Lock()

    def alternating(request):
        with lock:
            calls["n"] += 1
            n = calls["n"]
        return ModelError("bad_request", "HTTP 422") if n % 2 else "not json"

    mixed = judge(sampled, TenantId("acme"), _evaluator(alternating), Judging(concurrency=1, early_stop_after=4), "a")
    assert (mixed.errors, mixed.early_stop) == (72, None)

    def first_ok(request):
        with lock:
            calls["n"] += 1
            n = calls["n"]
        return grade(request) if n == 1 else ModelError("bad_request", "HTTP 422")

    calls["n"] = 0
    ok_first = judge(sampled, TenantId("acme"), _evaluator(first_ok, name="scripted/other"),
                     Judging(concurrency=1, early_stop_after=4), "b")
    assert (ok_first.judged, ok_first.errors, ok_first.early_stop) == (1, 71, None)


def test_budget_caps_calls_and_tokens(sampled):
    capped = judge(sampled, TenantId("acme"), _evaluator(grade), Judging(concurrency=4, budget={"max_calls": 10}), "r")
    assert (capped.judged, capped.budget_exhausted) == (10, True)
    by_tokens = judge(sampled, TenantId("acme"), _evaluator(grade), Judging(concurrency=1, budget={"max_tokens": 1}), "s")
    assert by_tokens.judged == 1 and by_tokens.budget_exhausted


def test_the_call_budget_counts_model_requests_not_judged_traces(sampled):
    calls = {"n": 0}

    def reply(request):  # every trace's first reply is unusable: two requests per judgment
        calls["n"] += 1
        return "not json" if calls["n"] % 2 else grade(request)

    evaluator = JudgeEvaluator("quality", Judge(ScriptedModel(reply, name="scripted/test"), retries=1),
                               {"kind": "rubric"})
    report = judge(sampled, TenantId("acme"), evaluator, Judging(concurrency=1, budget={"max_calls": 6}), "r")
    assert (report.judged, report.errors, report.budget_exhausted) == (3, 0, True)
    assert report.usage.requests == calls["n"] == 6 and report.requests_per_judgment == 2.0


def test_an_unusable_reply_is_kept_redacted_in_the_judgments_reason(sampled, lake):
    from verdict_daemon.store.views import add_state_views

    ramble = "The answer looks fine to me, write to bob@example.com"
    report = judge(sampled, TenantId("acme"), _evaluator([ramble]), Judging(concurrency=1, budget={"max_calls": 1}), "r")
    assert report.errors == 1
    con = duckdb.connect()
    add_state_views(con, lake, TenantId("acme"))
    rows = con.execute("SELECT value, error_code, reason FROM judgments WHERE status = 'ERROR'").fetchall()
    assert len(rows) == 1 and rows[0][:2] == ("ERROR", "invalid_reply")
    reason = rows[0][2]
    assert reason.startswith("extraction: ") and "no JSON object" in reason  # what was wrong, then the reply
    assert reason.endswith("the reply (redacted): The answer looks fine to me, write to <EMAIL>")


def test_attempt_numbers_are_unique_per_trace_and_evaluator_name_across_its_fingerprints(sampled):
    # The evaluator "quality" on one model, then (its model changed: another fingerprint) on another: the
    # same newest trace fails under both, and its attempts are 1 and 2, not 1 twice.
    first, second = _evaluator(["not json"], name="scripted/a"), _evaluator(["not json"], name="scripted/b")
    assert first.fingerprint != second.fingerprint
    for evaluator in (first, second):
        judge(sampled, TenantId("acme"), evaluator, Judging(concurrency=1, budget={"max_calls": 1}), "r")
    rows = _attempts(sampled)
    assert [(no, status) for _trace, no, status, _code in rows] == [(1, "ERROR"), (2, "ERROR")]
    assert len({trace for trace, *_ in rows}) == 1
    retry = pending_work(sampled, TenantId("acme"), first.fingerprint, 3, 1)
    assert [attempt_no for _material, attempt_no in retry] == [3]  # the first fingerprint's retry comes next


def test_two_fingerprints_of_one_name_judging_one_trace_at_once_take_different_attempt_numbers(sampled):
    """Both runs read the next attempt number (1) before either stores its attempt: the number is allocated
    again when the attempt is stored, in the same transaction, so the second to store takes 2."""
    both_called = threading.Barrier(2)

    def reply(_request):
        both_called.wait(timeout=60)  # each run has read its pending work and is in its model call
        return "not json"

    first, second = _evaluator(reply, name="scripted/a"), _evaluator(reply, name="scripted/b")
    runs = [threading.Thread(target=judge, args=(sampled, TenantId("acme"), evaluator,
                                                 Judging(concurrency=1, budget={"max_calls": 1}), f"r{n}"))
            for n, evaluator in enumerate((first, second))]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=120)
    rows = _attempts(sampled)
    assert len({trace for trace, *_ in rows}) == 1  # both judged the newest trace
    assert sorted(no for _trace, no, _status, _code in rows) == [1, 2]
    con = duckdb.connect(str(sampled.path), read_only=True)
    try:  # each fingerprint's attempt keeps its own verdict-less ERROR row; nothing else was written
        fingerprints = con.execute("SELECT fingerprint FROM judgment_attempts ORDER BY attempt_no").fetchall()
    finally:
        con.close()
    assert {f for (f,) in fingerprints} == {first.fingerprint, second.fingerprint}
    retry = pending_work(sampled, TenantId("acme"), first.fingerprint, 3, 1)
    assert [attempt_no for _material, attempt_no in retry] == [3]


def test_judge_calls_run_in_the_judge_workload(sampled):
    seen = set()

    def reply(request):
        seen.add(current_workload())
        return grade(request)

    judge(sampled, TenantId("acme"), _evaluator(reply), Judging(concurrency=8, budget={"max_calls": 16}), "r")
    assert seen == {"judge"}


_OPEN_ELSEWHERE = """
import duckdb, sys, time
for _ in range(30):  # the run's writer may be mid-flush for a moment: that is not "held"
    try:
        duckdb.connect(sys.argv[1]).close()
        print("free")
        break
    except duckdb.IOException:
        time.sleep(0.1)
else:
    print("held")
"""


def test_state_file_is_not_held_during_model_calls(sampled):
    """Another process can open state.duckdb read-write while judge calls run."""
    seen: list[str] = []

    def reply(request):
        if len(seen) < 2:  # probe during the first two calls (the second after a flush happened)
            seen.append(subprocess.run([sys.executable, "-c", _OPEN_ELSEWHERE, str(sampled.path)],
                                       capture_output=True, text=True, timeout=60).stdout.strip())
        return grade(request)

    report = judge(sampled, TenantId("acme"), _evaluator(reply), Judging(concurrency=1, budget={"max_calls": 3}), "r")
    assert seen == ["free", "free"] and report.judged == 3


def test_two_racing_runs_store_each_judgment_once(sampled):
    gate = threading.Barrier(2)

    evaluator = _evaluator(grade)
    reports = []

    def go(run_id):
        gate.wait()
        reports.append(judge(sampled, TenantId("acme"), evaluator, Judging(concurrency=4), run_id))

    threads = [threading.Thread(target=go, args=(f"run-{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reports) == 2 and sum(r.judged for r in reports) >= 72
    attempts = _attempts(sampled)
    assert len(attempts) == 72 and {a[1] for a in attempts} == {1}
    assert judge(sampled, TenantId("acme"), evaluator, Judging(), "again").pending == 0


def test_a_losing_racer_adds_no_verdicts_to_the_winners_attempt(sampled):
    """A run that judged attempt 1 while another run stored an ERROR under the same attempt id must
    not attach its verdicts to that ERROR attempt (status and verdicts always come from one run)."""
    judge(sampled, TenantId("acme"), _evaluator(lambda _request: "no verdict here"), Judging(), "first")  # invalid_reply
    evaluator = _evaluator(grade)
    (material, _), *_ = pending_work(sampled, TenantId("acme"), evaluator.fingerprint, 3, 1)
    late = _Writer(sampled, TenantId("acme"), evaluator.fingerprint, "late")
    late.add(material, 1, evaluator.evaluate(material))  # attempt 1 again: the racer that lost
    late.close()
    con = duckdb.connect(str(sampled.path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM dimension_verdicts").fetchall()[0][0] == 0
        assert con.execute("SELECT DISTINCT status, judge_run_id FROM judgment_attempts").fetchall() == \
            [("ERROR", "first")]
    finally:
        con.close()


def test_graph_evaluator_maps_fields_to_dimensions(sampled):
    evaluator = build_evaluator(EvaluatorConfig(name="g", kind="graph", graph="tests.daemon.graphs:completeness_graph"))
    assert evaluator.definition["units"][0]["model"] == "scripted/graph"
    report = judge(sampled, TenantId("acme"), evaluator, Judging(), "r")
    assert report.judged == 72
    con = duckdb.connect(str(sampled.path), read_only=True)
    rows = con.execute("SELECT DISTINCT dimension, reason FROM dimension_verdicts").fetchall()
    definition = json.loads(con.execute("SELECT definition FROM evaluators WHERE fingerprint = ?",
                                        [evaluator.fingerprint]).fetchall()[0][0])
    con.close()
    assert rows == [("complete", "checked the ending")]
    assert definition["target"] == "tests.daemon.graphs:completeness_graph"


def test_graph_fingerprint_changes_with_the_prompt():
    from tests.daemon.graphs import CompletenessUnit
    from verdict.graph import Pipeline
    from verdict_daemon.service.evaluators import GraphEvaluator

    def graph(prompt):
        return Pipeline() >> CompletenessUnit().prompt(prompt).via(ScriptedModel(["{}"]))

    a = GraphEvaluator("g", "m:a", graph("@user\n{source.response}"))
    b = GraphEvaluator("g", "m:a", graph("@user\nGrade: {source.response}"))
    assert a.fingerprint != b.fingerprint
    assert a.fingerprint == GraphEvaluator("g", "m:a", graph("@user\n{source.response}")).fingerprint


def test_ensemble_evaluator_votes_per_dimension(sampled):
    evaluator = build_evaluator(EvaluatorConfig(
        name="panel", kind="ensemble", models=("tests.daemon.lakes:scripted_judge_model",) * 2))
    report = judge(sampled, TenantId("acme"), evaluator, Judging(concurrency=4), "r")
    assert report.judged == 72 and evaluator.definition["kind"] == "ensemble"
    assign(sampled, TenantId("acme"), IntentKeyAssigner())
    table = judgment_table(sampled, TenantId("acme"), evaluator.fingerprint).to_pylist()
    failed = {(r["cluster"], r["dimension"]) for r in table if r["value"] == "FAIL"}
    assert failed == {("search.v1", "completeness")}  # only the truncated last day fails


def test_rubric_file_changes_dimensions_and_fingerprint(sampled, tmp_path):
    path = tmp_path / "rubric.yaml"
    path.write_text("name: support\nversion: 2\ndimensions:\n"
                    "  - name: completeness\n    description: The answer is finished.\n")
    custom = build_evaluator(EvaluatorConfig(name="q", kind="rubric", model="tests.daemon.lakes:scripted_judge_model",
                                             rubric_file=path))
    default = build_evaluator(EvaluatorConfig(name="q", kind="rubric", model="tests.daemon.lakes:scripted_judge_model"))
    assert custom.fingerprint != default.fingerprint and custom.definition["rubric"]["name"] == "support"
    judge(sampled, TenantId("acme"), custom, Judging(), "r")
    con = duckdb.connect(str(sampled.path), read_only=True)
    assert con.execute("SELECT DISTINCT dimension FROM dimension_verdicts").fetchall() == [("completeness",)]
    con.close()
    path.write_text("name: support\nversion: 2\ndimensions: []\n")
    with pytest.raises(DaemonError) as err:
        build_evaluator(EvaluatorConfig(name="q", kind="rubric", model="openai/x", rubric_file=path))
    assert err.value.code == "invalid_config" and "has no dimensions" in err.value.message


@pytest.mark.parametrize(("target", "message"), [
    ("tests.daemon.graphs:missing", "cannot load 'tests.daemon.graphs:missing': AttributeError"),
    ("tests.daemon.nope:graph", "cannot load 'tests.daemon.nope:graph': ModuleNotFoundError"),
    ("tests.daemon.graphs:broken_factory", "raised RuntimeError: no judge today"),
    ("tests.daemon.graphs:Completeness", "is not a verdict Pipeline"),
])
def test_unloadable_graphs_are_evaluator_errors(target, message):
    with pytest.raises(DaemonError) as err:
        build_evaluator(EvaluatorConfig(name="g", kind="graph", graph=target))
    assert err.value.code == "evaluator_error" and message in err.value.message
