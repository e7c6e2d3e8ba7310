"""Turns judged with their history (issue 29, item 2), on real parts over loopback.

The chat app (tests/daemon/conversation_app.py, its own process: the real SDK, `verdict.conversation_context`,
the real openai client against the fake OpenAI server) sends, for tenant acme, three turns of conversation c1
interleaved with a turn of c2 and a turn in no conversation, and, for tenant globex, a turn of its own c1. The real
collector process lands them (tokens map the two tenants). The daemon's steps run in-process on the real lake and
state file: `sample` stores each pick's conversation so far, `judge` grades with a rubric evaluator built from the
config (`build_evaluator`) whose scripted judge model (the only stand-in: a deterministic judge) records every
request, so the test reads exactly what the judge was shown.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from collector.views import open_scoped
from tests.daemon.chats import land_chats
from tests.daemon.lakes import grade
from tests.daemon.recorded_peers import judged, replay_fixtures
from tests.peers.harness import _peer
from verdict.judges.judge import Judge
from verdict.models.scripted import ScriptedModel
from verdict.redact import redact_text
from verdict.tenancy import TenantId, validate_tenant_id
from verdict_daemon.config import Conversations, EvaluatorConfig, Judging, Sampling
from verdict_daemon.service.cycle import build_evaluator
from verdict_daemon.service.history import Turn
from verdict_daemon.service.judging import judge
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.state import StateStore

TOKENS = {"acme": "acme-token-0123456789abcdef", "globex": "globex-token-0123456789abcdef"}
USER_1 = "I was charged twice for order 1001, reach me at jane@example.com."
ANSWER_1 = "I see two charges of 30 EUR on order 1001."
USER_2 = "Can you refund the second charge?"
ANSWER_2 = "I can refund the second charge of 30 EUR. Shall I go ahead?"
USER_3 = "Yes, do that."
ANSWER_3 = "Done: the second charge of 30 EUR is refunded."
ANSWERS = {
    USER_1: ANSWER_1, USER_2: ANSWER_2, USER_3: ANSWER_3,
    "What are your opening hours?": "We are open from 9 to 5.",
    "How do I reset my password?": "Use the reset link on the login page.",
    "Tell me the globex launch date.": "The globex launch date is not public.",
}
ACME_TURNS = [
    {"conversation": "c1", "intent": "billing.v1", "user": USER_1},
    {"conversation": "c1", "intent": "billing.v1", "user": USER_2},
    {"conversation": "c2", "intent": "hours.v1", "user": "What are your opening hours?"},
    {"conversation": None, "intent": "account.v1", "user": "How do I reset my password?"},
    {"conversation": "c1", "intent": "billing.v1", "user": USER_3},
]
GLOBEX_TURNS = [{"conversation": "c1", "intent": "billing.v1", "user": "Tell me the globex launch date."}]
FOREIGN = ("opening hours", "9 to 5", "reset my password", "reset link", "globex")  # never in c1's history
HISTORY_TAG = "<conversation_so_far>"


def recording_judge() -> ScriptedModel:
    """The judge model `build_evaluator` resolves ('module:attribute'): the inspecting rubric judge, recording."""
    return ScriptedModel(grade, name="scripted/inspecting-judge", record=True)


def landed_conversations(tmp: Path, fake_server: Any) -> Path:
    """The data dir after both tenants' apps ran against a collector process in `tmp`, answered by `fake_server`."""
    return land_chats(tmp, fake_server, ANSWERS, TOKENS, {"acme": ACME_TURNS, "globex": GLOBEX_TURNS})


@pytest.fixture(scope="module")
def lake(tmp_path_factory, _fake_openai_server) -> Path:
    """The data dir after both tenants' apps ran against the collector process."""
    return landed_conversations(tmp_path_factory.mktemp("conversation-history"), _fake_openai_server)


@pytest.fixture(scope="module")
def sampled(lake) -> StateStore:
    """Every trace of both tenants sampled (their window closed: as of two days on), history budget 1,000."""
    store = StateStore(lake)
    as_of = datetime.now(UTC) + timedelta(days=2)
    for tenant in ("acme", "globex"):
        report = sample(store, lake, TenantId(tenant), Sampling(per_cluster_per_window=10), as_of, Conversations())
        assert report.sampled == {"acme": 5, "globex": 1}[tenant]
    return store


def _stored(store: StateStore) -> dict[str, tuple[str, str, Any]]:
    """query -> (tenant, response, stored history) of every sampled trace."""
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        rows = con.execute("SELECT tenant_id, query, response, history FROM sampled_traces").fetchall()
    finally:
        con.close()
    return {query: (tenant, response, json.loads(history) if history else None)
            for tenant, query, response, history in rows}


def _judged(store: StateStore, history_tokens: int) -> tuple[str, dict[str, str]]:
    """Judge acme's picks with a rubric evaluator under `history_tokens`; its fingerprint and, per graded answer,
    the text of every message its judge received. (Once per budget and store: the policy is the fingerprint, and
    a fingerprint judges a trace once.)"""
    if (store, history_tokens) in _JUDGED:
        return _JUDGED[(store, history_tokens)]
    evaluator = build_evaluator(EvaluatorConfig(name="quality", kind="rubric", model=f"{__name__}:recording_judge"),
                                history_tokens)
    report = judge(store, TenantId("acme"), evaluator, Judging(concurrency=1), f"run-{history_tokens}")
    assert (report.judged, report.errors) == (5, 0)
    prompts = {}
    for request in evaluator.judge.model.requests:  # type: ignore[attr-defined]  # a JudgeEvaluator's Judge
        graded = next(answer for answer in ANSWERS.values() if f"<answer>\n{answer}\n</answer>" in
                      request.messages[-1].content)
        prompts[graded] = "\n".join(m.content for m in request.messages)
    assert len(prompts) == 5
    _JUDGED[(store, history_tokens)] = evaluator.fingerprint, prompts
    return _JUDGED[(store, history_tokens)]


_JUDGED: dict[tuple[StateStore, int], tuple[str, dict[str, str]]] = {}


def _history_block(prompt: str) -> str:
    assert prompt.count(HISTORY_TAG) == 2, prompt  # the rule names the tag once, the block opens it once
    return prompt.split(HISTORY_TAG + "\n", 1)[1].split("\n</conversation_so_far>", 1)[0]


def test_a_turn_is_stored_with_its_conversation_so_far(sampled):
    stored = _stored(sampled)
    tenant, response, history = stored[USER_3]
    assert (tenant, response) == ("acme", ANSWER_3)
    assert (history["conversation_id"], history["conversation_seq"], history["turn"]) == ("c1", 1, 3)
    (first, second) = history["turns"]
    assert (first["turn"], second) == (1, {"turn": 2, "query": USER_2, "response": ANSWER_2})
    assert first["response"] == ANSWER_1 and first["query"].startswith("I was charged twice for order 1001")
    assert "jane@example.com" not in first["query"]  # redacted as stored
    assert stored[USER_2][2]["turns"] == [first]
    assert stored[first["query"]][2] == {"conversation_id": "c1", "conversation_seq": 1, "turn": 1, "turns": []}
    assert stored["What are your opening hours?"][2] == {
        "conversation_id": "c2", "conversation_seq": 1, "turn": 1, "turns": []}
    assert stored["How do I reset my password?"][2] is None  # in no conversation
    # globex's c1 is another conversation: its first turn, nothing of acme's
    assert stored["Tell me the globex launch date."][0::2] == (
        "globex", {"conversation_id": "c1", "conversation_seq": 1, "turn": 1, "turns": []})


def test_the_judge_reads_turns_one_and_two_when_grading_turn_three(sampled):
    _, prompts = _judged(sampled, 1000)
    block = _history_block(prompts[ANSWER_3])
    lines = block.splitlines()
    assert lines[0].startswith("[turn 1] user: I was charged twice for order 1001")
    assert lines[1:] == [f"[turn 1] assistant: {ANSWER_1}", f"[turn 2] user: {USER_2}",
                         f"[turn 2] assistant: {ANSWER_2}"]
    assert "jane@example.com" not in prompts[ANSWER_3]
    # The graded question and answer stay apart from the history, the answer alone in the last message.
    assert f"<question>\n{USER_3}\n</question>" in prompts[ANSWER_3]
    assert not any(foreign in prompts[ANSWER_3] for foreign in FOREIGN)
    assert _history_block(prompts[ANSWER_2]).splitlines()[1:] == [f"[turn 1] assistant: {ANSWER_1}"]
    for first_or_alone in (ANSWER_1, "We are open from 9 to 5.", "Use the reset link on the login page."):
        assert HISTORY_TAG not in prompts[first_or_alone]


def test_over_the_budget_the_oldest_turns_are_dropped(sampled):
    budget = Turn(2, USER_2, ANSWER_2).tokens()  # turn 2 fits exactly; turn 1 does not fit beside it
    _, prompts = _judged(sampled, budget)
    assert _history_block(prompts[ANSWER_3]).splitlines() == [
        "(1 earlier turn not shown)", f"[turn 2] user: {USER_2}", f"[turn 2] assistant: {ANSWER_2}"]
    assert "charged twice" not in prompts[ANSWER_3]
    _, tighter = _judged(sampled, budget - 1)
    assert _history_block(tighter[ANSWER_3]) == "(2 earlier turns not shown)"


def test_the_fingerprint_follows_the_history_policy_and_no_history_changes_nothing(sampled):
    with_history, prompts = _judged(sampled, 1000)
    smaller, _ = _judged(sampled, 500)
    off, plain = _judged(sampled, 0)
    assert len({with_history, smaller, off}) == 3
    assert off == Judge(recording_judge(), name="quality").fingerprint  # history off: the fingerprint of before
    assert not any(HISTORY_TAG in prompt for prompt in plain.values())
    # A trace in no conversation, and a first turn, are shown to the judge exactly as without the policy.
    for answer in ("Use the reset link on the login page.", ANSWER_1):
        assert prompts[answer] == plain[answer]


def test_graph_and_ensemble_evaluators_read_the_same_history(sampled):
    """A graph evaluator gets `{source.history}` within its budget; an ensemble's judges each get the block."""
    from tests.daemon.graphs import CompletenessUnit
    from verdict.graph import Pipeline
    from verdict_daemon.service.evaluators import GraphEvaluator
    from verdict_daemon.service.judging import pending_work

    (turn_3,) = [m for m, _ in pending_work(sampled, TenantId("acme"), "no-such-fingerprint", 3, 100)
                 if m.response == ANSWER_3]
    model = ScriptedModel(lambda request: json.dumps({"note": "ok", "complete": True}), record=True)
    graph = Pipeline() >> CompletenessUnit().prompt("@user\nEarlier:\n{source.history}\nNow: {source.response}").via(model)
    with_history, without = GraphEvaluator("g", "m:a", graph, 1000), GraphEvaluator("g", "m:a", graph)
    assert with_history.fingerprint != without.fingerprint
    with_history.evaluate(turn_3)
    without.evaluate(turn_3)
    shown, not_shown = (r.messages[0].content for r in model.requests)
    assert f"[turn 2] assistant: {ANSWER_2}\nNow: {ANSWER_3}" in shown and "[turn 1] user: I was charged" in shown
    assert not_shown == f"Earlier:\n\nNow: {ANSWER_3}"

    panel = build_evaluator(EvaluatorConfig(name="panel", kind="ensemble",
                                            models=(f"{__name__}:recording_judge",) * 2), 1000)
    assert panel.evaluate(turn_3).error_code is None
    for member in panel.judge.judges:  # type: ignore[attr-defined]  # a JudgeEnsemble's Judges
        assert _history_block("\n".join(m.content for m in member.model.requests[0].messages)).endswith(ANSWER_2)


# --- conversations recorded from real packages (tests/fixtures/dialects): the SDKs' own ways to keep a chat --------
RECORDED = ("openai-agents-session-openinference",  # SQLiteSession, OpenInference's using_session: session.id
            "vercel-ai-conversation")  # messages + experimental_telemetry.metadata.sessionId
@pytest.fixture(scope="module")
def recorded(tmp_path_factory, request) -> Path:
    """The data dir after each recorded conversation landed in its own tenant of the real collector process."""
    return replay_fixtures(tmp_path_factory.mktemp("recorded-conversations") / "data", RECORDED, request)


@pytest.mark.parametrize("sender", RECORDED)
def test_a_recorded_conversations_last_turn_is_judged_with_the_turns_before_it(recorded, sender):
    """Two turns, each its own trace, sent by the SDK with the turn before it: one key, one conversation of two
    turns, and the second turn's judge reads the first (redacted as stored) as its history; the first has none."""
    con = open_scoped(recorded, validate_tenant_id(sender))
    turns = con.execute("SELECT conversation_id, conversation_seq, turn FROM conversation_turns ORDER BY turn"
                        ).fetchall()
    whole = con.execute("SELECT conversation_id, turns, status FROM conversations").fetchall()
    con.close()
    assert turns == [(_peer.CONVERSATION, 1, 1), (_peer.CONVERSATION, 1, 2)]
    assert whole == [(_peer.CONVERSATION, 2, "open")]  # nothing after it in the lake: not closed by inactivity yet
    (first, second), (question_1, question_2) = (map(redact_text, _peer.ANSWERS), map(redact_text, _peer.QUESTIONS))
    _, prompts = judged(recorded, sender, 0, history_tokens=1000)
    (graded_2,) = [p for p in prompts if f"<answer>\n{second}\n</answer>" in p]
    (graded_1,) = [p for p in prompts if f"<answer>\n{first}\n</answer>" in p]
    assert _history_block(graded_2).splitlines() == [f"[turn 1] user: {question_1}", f"[turn 1] assistant: {first}"]
    assert f"<question>\n{question_2}\n</question>" in graded_2 and HISTORY_TAG not in graded_1
    assert not any(secret in graded_2 for secret in _peer.SECRETS)
