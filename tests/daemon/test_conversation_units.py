"""Closed conversations judged as a whole (issue 29, item 3), on real parts over loopback.

The lake is test_conversation_history's (its `lake` fixture, reused): the chat app (its own process: the real SDK,
`verdict.conversation_context`, the real openai client against the fake OpenAI server) sends acme's three turns of
c1, one of c2, one in no conversation, and globex's own c1, through the real collector process. The daemon's steps
run in-process on that lake and a state file of each test's own; the only stand-in is the judge model, a scripted
one that records every request, so the tests read exactly what the judge was shown. The kill test runs the real
daemon process over a lake of 30 ended conversations and kills it with SIGKILL mid-judging.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tests.collector.conftest import Collector
from tests.daemon.cli import env
from tests.daemon.graphs import CompletenessUnit
from tests.daemon.test_conversation_history import (
    ANSWER_1,
    ANSWER_2,
    ANSWER_3,
    ANSWERS,
    TOKENS,
    USER_2,
    USER_3,
    landed_conversations,
)
from tests.daemon.test_end_to_end import _start_daemon, _state, _wait
from tests.daemon.test_sentinel import sentinel_file
from tests.fakes import Reply
from verdict.graph import Pipeline
from verdict.judges.judge import Judge
from verdict.models.base import ModelRequest
from verdict.models.scripted import ScriptedModel
from verdict.tenancy import TenantId
from verdict_daemon.clustering.assign_step import IntentKeyAssigner, assign
from verdict_daemon.config import (
    Conversations,
    Drift,
    EvaluatorConfig,
    Judging,
    Lake,
    Sampling,
    Sentinel,
    parse_config,
)
from verdict_daemon.report import build_report
from verdict_daemon.service.conversation import Transcript
from verdict_daemon.service.cycle import build_evaluator, build_evaluators
from verdict_daemon.service.drift_runs import evaluator_config, run_drift
from verdict_daemon.service.evaluation_export import log_records
from verdict_daemon.service.evaluators import GraphEvaluator
from verdict_daemon.service.history import Turn
from verdict_daemon.service.judging import judge, pending_work
from verdict_daemon.service.sampling import sample
from verdict_daemon.service.sentinel_health import load_sets
from verdict_daemon.store import evaluation_exports
from verdict_daemon.store.state import StateStore

ACME = TenantId("acme")
CONVERSATION_TAG = "<conversation>"


def conversation_grade(request: ModelRequest) -> str:
    """A scripted conversation judge: `resolved` fails unless the assistant says a refund is done."""
    keys = re.search(r"with exactly the keys ([a-z_, ]+):", request.messages[0].content)
    assert keys is not None, request.messages[0].content
    conversation = request.messages[-1].content
    verdicts = {key: "PASS" for key in keys.group(1).split(", ")}
    if "refunded" not in conversation:
        verdicts["resolved"] = "FAIL"
    return json.dumps({k: {"rationale": f"{k} checked", "evidence": [], "verdict": v} for k, v in verdicts.items()})


def recording_conversation_judge() -> ScriptedModel:
    return ScriptedModel(conversation_grade, name="scripted/conversation-judge", record=True)


def slow_conversation_judge() -> ScriptedModel:
    """The same judge at 300 ms a call, so the kill test can stop the daemon mid-judging."""
    return ScriptedModel(conversation_grade, name="scripted/conversation-judge", latency=0.3)


def _conversation_evaluator(**config):
    return build_evaluator(EvaluatorConfig(name="outcome", kind="rubric", unit="conversation",
                                           model=f"{__name__}:recording_conversation_judge"), **config)


def _last_end(lake_dir: Path, tenant: str) -> datetime:
    ((end,),) = duckdb.connect().execute(
        f"SELECT max(end_time) FROM read_parquet('{lake_dir}/spans/tenant={tenant}/*/*.parquet')").fetchall()
    return end.replace(tzinfo=UTC)


def _rows(store: StateStore, query: str) -> list[tuple]:
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def lake(tmp_path_factory, _fake_openai_server) -> Path:
    """test_conversation_history's lake: acme's c1 (three turns), c2, a turn in no conversation; globex's c1."""
    return landed_conversations(tmp_path_factory.mktemp("conversation-units"), _fake_openai_server)


SAMPLING = Sampling(per_cluster_per_window=10, window_hours=1 / 60)  # 1-minute windows: closed minutes later


def test_an_open_conversation_is_not_judged_and_once_closed_is_judged_once_as_a_whole(lake, tmp_path):
    store = StateStore(tmp_path)
    evaluator = _conversation_evaluator()
    last = _last_end(lake, "acme")

    early = sample(store, lake, ACME, SAMPLING, last + timedelta(minutes=10), Conversations(), judge_conversations=True)
    assert (early.sampled, early.conversations) == (5, 0)  # every turn; c1 and c2 still open (30 min)
    assert judge(store, ACME, evaluator, Judging(concurrency=1), "run-open").pending == 0

    closed = sample(store, lake, ACME, SAMPLING, last + timedelta(minutes=31), Conversations(), judge_conversations=True)
    assert (closed.sampled, closed.conversations) == (0, 2)  # c1 and c2; acme's turn in no conversation is none
    report = judge(store, ACME, evaluator, Judging(concurrency=1), "run-closed")
    assert (report.pending, report.judged, report.errors, report.unit) == (2, 2, 0, "conversation")

    later = sample(store, lake, ACME, SAMPLING, last + timedelta(days=2), Conversations(), judge_conversations=True)
    assert (later.sampled, later.conversations) == (0, 0)  # a closed conversation is sampled once
    assert judge(store, ACME, evaluator, Judging(concurrency=1), "run-later").pending == 0

    # The exact item the judge read for c1: every turn in order, redacted as stored, alone in the last message.
    requests = evaluator.judge.model.requests
    assert len(requests) == 2
    c1 = next(r for r in requests if ANSWER_3 in r.messages[-1].content)
    (stored_first,) = [q for (q,) in _rows(store, "SELECT query FROM sampled_traces WHERE unit = 'conversation'")
                       if q.startswith("I was charged twice")]
    assert "jane@example.com" not in stored_first
    assert c1.messages[-1].content == "\n".join([
        CONVERSATION_TAG, f"[turn 1] user: {stored_first}", f"[turn 1] assistant: {ANSWER_1}",
        f"[turn 2] user: {USER_2}", f"[turn 2] assistant: {ANSWER_2}",
        f"[turn 3] user: {USER_3}", f"[turn 3] assistant: {ANSWER_3}", "</conversation>"])
    assert 'Rubric "verdict-conversation" (version 1)' in c1.messages[0].content
    c2 = next(r for r in requests if r is not c1)
    assert c2.messages[-1].content == "\n".join([
        CONVERSATION_TAG, "[turn 1] user: What are your opening hours?",
        f"[turn 1] assistant: {ANSWERS['What are your opening hours?']}", "</conversation>"])

    # Stored as units of their own: the unit id is the first turn's trace, the intent the first turn's.
    first_traces = dict(duckdb.connect().execute(
        f"SELECT conversation_id, arg_min(trace_id, start_time) FROM read_parquet('{lake}/spans/tenant=acme/*/*.parquet') "
        "WHERE conversation_id IS NOT NULL GROUP BY 1").fetchall())
    units = _rows(store, "SELECT trace_id, intent_key, stratum, response FROM sampled_traces "
                         "WHERE unit = 'conversation' ORDER BY intent_key")
    assert units == [(f"conversation:{first_traces['c1']}", "billing.v1", "billing.v1", ANSWER_3),
                     (f"conversation:{first_traces['c2']}", "hours.v1", "hours.v1",
                      ANSWERS["What are your opening hours?"])]
    # Exported as gen_ai.evaluation.result records parented to the first turn's trace and graded call.
    exported = {a.trace_id: log_records("acme", a) for a in evaluation_exports.pending(store, "acme", 10)}
    first_spans = dict(_rows(store, "SELECT trace_id, span_id FROM sampled_traces WHERE unit = 'turn'"))
    (c1_records,) = [r for unit, r in exported.items() if unit == f"conversation:{first_traces['c1']}"]
    assert {(r.trace_id.hex(), r.span_id.hex()) for r in c1_records} == {
        (first_traces["c1"], first_spans[first_traces["c1"]])} and len(c1_records) == 3
    verdicts = dict(_rows(store, "SELECT s.intent_key || '/' || v.dimension, v.value FROM dimension_verdicts v "
                                 "JOIN judgment_attempts a USING (tenant_id, attempt_id) "
                                 "JOIN sampled_traces s USING (tenant_id, trace_id)"))
    assert verdicts == {"billing.v1/resolved": "PASS", "billing.v1/user_frustration": "PASS",
                        "billing.v1/consistency": "PASS", "hours.v1/resolved": "FAIL",
                        "hours.v1/user_frustration": "PASS", "hours.v1/consistency": "PASS"}


def test_over_the_budget_the_oldest_turns_are_not_shown_and_the_judge_is_told(lake, tmp_path):
    store = StateStore(tmp_path)
    sampled = sample(store, lake, ACME, SAMPLING, _last_end(lake, "acme") + timedelta(days=2), Conversations(),
                     judge_conversations=True)
    assert (sampled.sampled, sampled.conversations) == (5, 2), sampled
    budget = len(f"[turn 3] user: {USER_3}\n[turn 3] assistant: {ANSWER_3}") // 4 + 1  # turn 3 alone fits
    evaluator = _conversation_evaluator(conversation_tokens=budget)
    report = judge(store, ACME, evaluator, Judging(concurrency=1), "run")
    assert (report.pending, report.judged) == (2, 2), report
    c1 = next(r for r in evaluator.judge.model.requests if ANSWER_3 in r.messages[-1].content)
    assert c1.messages[-1].content == "\n".join([
        CONVERSATION_TAG, "(2 earlier turns not shown)", f"[turn 3] user: {USER_3}",
        f"[turn 3] assistant: {ANSWER_3}", "</conversation>"])
    assert evaluator.fingerprint != _conversation_evaluator().fingerprint  # the budget is part of the identity

    # A graph evaluator of conversations reads the same turns as `{source.conversation}`.
    (material,) = [m for m, _ in pending_work(store, ACME, "no-such-fingerprint", 3, 100, "conversation")
                   if m.response == ANSWER_3]
    model = ScriptedModel(lambda request: json.dumps({"note": "ok", "complete": True}), record=True)
    graph = GraphEvaluator("g", "m:a", Pipeline() >> CompletenessUnit().prompt("@user\n{source.conversation}").via(model),
                           conversation_tokens=budget)
    assert graph.unit == "conversation" and graph.evaluate(material).error_code is None
    assert model.requests[0].messages[0].content == "\n".join([
        "(2 earlier turns not shown)", f"[turn 3] user: {USER_3}", f"[turn 3] assistant: {ANSWER_3}"])


def test_a_turn_longer_than_the_whole_budget_is_cut_never_dropped():
    long = Transcript("c", 1, 2, (Turn(1, "hi", "hello"), Turn(2, "x" * 100, "y" * 100)))
    (shown,) = long.within(10).turns  # 40 characters
    assert (shown.turn, shown.query, shown.response) == (2, "x" * 19 + "…", "y" * 19 + "…")
    assert long.within(10).text().startswith("(1 earlier turn not shown)\n[turn 2] user: xxx")


def test_conversation_dimensions_enter_drift_per_intent_like_any_other(lake, tmp_path):
    store = StateStore(tmp_path)
    as_of = _last_end(lake, "acme") + timedelta(days=2)
    sample(store, lake, ACME, SAMPLING, as_of, Conversations(), judge_conversations=True)
    evaluator = _conversation_evaluator()
    judge(store, ACME, evaluator, Judging(concurrency=1), "run")
    assign(store, ACME, IntentKeyAssigner())
    runs = run_drift(store, ACME, evaluator.fingerprint, evaluator_config(Drift(), 1), as_of)
    assert runs and {r.judgments for r in runs} == {6}  # 2 conversations x 3 dimensions; the turns are not its unit
    cells = _rows(store, "SELECT DISTINCT cluster, dimension FROM drift_cells ORDER BY ALL")
    assert cells == [(c, d) for c in ("billing.v1", "hours.v1") for d in ("consistency", "resolved", "user_frustration")]
    # The report: the evaluator's section, its coverage counted over its own unit (2 conversations, not 5 traces).
    data = build_report(tmp_path, "acme", lake=Lake(dirs=(lake,)))
    (section,) = data.evaluators
    assert (section.name, data.sampled_traces) == ("outcome", 5)
    assert [(c.cluster, c.sampled, c.judged, c.usable) for c in section.coverage] == [
        ("billing.v1", 1, 1, 3), ("hours.v1", 1, 1, 3)]


def test_turn_evaluators_keep_their_fingerprints_beside_conversation_evaluators(tmp_path):
    def config(*evaluators: str):
        return parse_config({"data_dir": str(tmp_path), "tenants": [{"id": "acme"}], "evaluators": [
            {"name": name, "kind": "rubric", "model": f"{__name__}:recording_conversation_judge", **extra}
            for name, extra in (("quality", {}), ("outcome", {"unit": "conversation"})) if name in evaluators]})

    alone = {e.name: e for e in build_evaluators(config("quality"))}
    both = {e.name: e for e in build_evaluators(config("quality", "outcome"))}
    assert both["quality"].fingerprint == alone["quality"].fingerprint
    # ... and it is the fingerprint the code before conversation evaluators gave this config (taken on main)
    quality = parse_config({"data_dir": str(tmp_path), "tenants": [{"id": "acme"}], "evaluators": [
        {"name": "quality", "kind": "rubric", "model": "tests.daemon.lakes:scripted_judge_model"}]})
    assert [e.fingerprint for e in build_evaluators(quality)] == [
        "053e890f48100ed213515227f7767bfaa13234914b3af81b35609f4033aadca3"]
    assert both["quality"].unit == "turn" and both["outcome"].unit == "conversation"
    assert both["outcome"].fingerprint != both["quality"].fingerprint
    # The sentinel set (graded answers labelled on turn dimensions) applies to turn evaluators only.
    sets = load_sets(Sentinel(file=sentinel_file(tmp_path / "s.jsonl")), list(both.values()))
    assert set(sets) == {"quality"}
    # `unit="turn"` is the Judge of before: the same fingerprint, the same prompt
    plain = Judge(recording_conversation_judge(), name="quality")
    assert Judge(recording_conversation_judge(), name="quality", unit="turn").fingerprint == plain.fingerprint
    with pytest.raises(ValueError, match="unit must be 'turn' or 'conversation'"):
        Judge(recording_conversation_judge(), unit="thread")
    with pytest.raises(ValueError, match="history and trajectory apply to turns"):
        Judge(recording_conversation_judge(), unit="conversation", history=True)


# --- exactly once across a kill -9 ------------------------------------------------------------------------
CONVERSATIONS = 30


def _daemon_config(path: Path, data_dir: Path) -> Path:
    path.write_text(f"""
data_dir = "{data_dir}"
state_lock_timeout_seconds = 30

[[tenants]]
id = "acme"

[schedules]
sample = {{ interval_seconds = 1 }}
judge = {{ interval_seconds = 1 }}
compact_retain = {{ cron = "0 3 * * *" }}

[sampling]
window_hours = 0.017
per_cluster_per_window = 1000

[judging]
concurrency = 1

[[evaluators]]
name = "outcome"
kind = "rubric"
unit = "conversation"
model = "{__name__}:slow_conversation_judge"
""")
    return path


def test_a_conversation_is_sampled_and_judged_exactly_once_across_a_kill(tmp_path, fake_openai):
    fake_openai.handler = lambda request: Reply("Done: it is refunded.")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f'"{TOKENS["acme"]}": acme\n')
    turns = [{"conversation": f"k{n}", "intent": "billing.v1", "user": f"Refund order {n}?", "end": last}
             for n in range(CONVERSATIONS) for last in (False, True)]  # two turns each, the second ends it
    collector = Collector(tmp_path / "data", ("--tokens", str(tokens))).start()
    try:
        app = subprocess.run([sys.executable, "-m", "tests.daemon.conversation_app", collector.url,
                              fake_openai.base_url, TOKENS["acme"], json.dumps(turns)],
                             capture_output=True, text=True, env=env(), timeout=300)
        assert app.returncode == 0, app.stderr[-2000:]
    finally:
        assert collector.stop() == 0, "".join(collector.log)
    data = collector.data_dir
    config = _daemon_config(tmp_path / "daemon.toml", data)
    log = tmp_path / "daemon.log"
    attempts = "SELECT count(*) FROM judgment_attempts"
    started = [_start_daemon(config, log)]
    try:
        _wait(lambda: (_state(data, attempts) or [(0,)])[0][0] >= 3, 120, "the daemon to start judging")
        started[0].send_signal(signal.SIGKILL)
        started[0].wait(30)
        assert _state(data, attempts)[0][0] < CONVERSATIONS, "judging finished before the kill"
        started.append(_start_daemon(config, log))
        _wait(lambda: _state(data, attempts)[0][0] >= CONVERSATIONS, 180, "the restarted daemon to judge the rest")
        started[1].send_signal(signal.SIGTERM)
        assert started[1].wait(90) == 0, log.read_text()[-4000:]
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert "Traceback" not in log.read_text()
    first_traces = {f"conversation:{t}" for (t,) in duckdb.connect().execute(
        f"SELECT arg_min(trace_id, start_time) FROM read_parquet('{data}/spans/tenant=acme/*/*.parquet') "
        "WHERE conversation_id IS NOT NULL GROUP BY conversation_id").fetchall()}
    units = _state(data, "SELECT trace_id FROM sampled_traces WHERE unit = 'conversation'")
    assert len(units) == CONVERSATIONS and {u for (u,) in units} == first_traces  # each sampled once
    assert _state(data, "SELECT count(*), count(DISTINCT trace_id), max(attempt_no), min(status), max(status) "
                        "FROM judgment_attempts") == [(CONVERSATIONS, CONVERSATIONS, 1, "OK", "OK")]  # judged once
    assert _state(data, "SELECT count(*) FROM sampled_traces WHERE unit = 'turn'")[0][0] == 2 * CONVERSATIONS
