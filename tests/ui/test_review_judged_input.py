"""A turn judged with its conversation so far and its tool trajectory is reviewed, and re-graded by the sentinel, on
the input its judge graded (docs/review.md, "What a reviewer sees"), on real parts over loopback.

The chat app (tests/daemon/conversation_app.py: the real SDK and openai client against the fake OpenAI server)
sends a conversation of two turns whose second turn carries an agent's tool step (the assistant's call of
`lookup_charge` and its result before the answer); the real collector process lands them. The daemon's real sampler
stores the second turn's history and trajectory, a rubric evaluator with `trajectory = true` judges it through the
real openai client against the same fake server (which records every judge request), and the review router queues
it. The UI's item page, `verdict review show`'s data and the sentinel set exported from the label are then compared
with the request the judge was sent.
"""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

from tests.daemon.chats import land_chats
from tests.daemon.lakes import grade
from tests.fakes import RecordedRequest, Reply
from tests.ui.conftest import client
from verdict.tenancy import TenantId
from verdict_ui.access import Access

if TYPE_CHECKING:
    from verdict.models.base import ModelRequest

TOKENS = {"acme": "acme-token-0123456789abcdef"}
FIRST = "I was charged twice for order 1001."
SECOND = "Can you refund the second charge?"
ANSWERS = {FIRST: "I see two charges of 30 EUR on order 1001.",
           SECOND: "I have refunded the second charge of 30 EUR on order 1001."}
TOOL: dict[str, Any] = {"name": "lookup_charge", "arguments": {"order": "1001"}, "result": "two charges of 30 EUR on order 1001"}
TURNS = [{"conversation": "c-tools", "intent": "billing.v1", "user": FIRST},
         {"conversation": "c-tools", "intent": "billing.v1", "user": SECOND, "tool": TOOL}]
JUDGE: dict[str, str] = {}  # the fake server's base URL, set by the fixture


def judge_model():
    """The evaluator's judge (`model = "tests.ui.test_review_judged_input:judge_model"`): the real openai client
    against the fake OpenAI server, which answers as the scripted rubric judge does."""
    from verdict.models.openai_model import OpenAIModel

    return OpenAIModel("gpt-4o-mini", base_url=JUDGE["base_url"], api_key="test-key", rate_limits=None)


def _judge_reply(request: RecordedRequest) -> Reply:
    messages = [SimpleNamespace(content=m["content"]) for m in request.body["messages"]]
    return Reply(grade(cast("ModelRequest", SimpleNamespace(messages=messages))))  # grade reads .messages only


def _block(request: RecordedRequest, tag: str) -> str | None:
    """The text of a request's <tag> block (None when the request has none)."""
    for message in request.body["messages"]:
        found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", message["content"], re.S)
        if found:
            return found.group(1)
    return None


@pytest.fixture(scope="module")
def judged(tmp_path_factory, _fake_openai_server):
    """(data dir, the evaluator, the judge request of the second turn, its review item id)."""
    from verdict_daemon.config import Conversations, EvaluatorConfig, Judging, Review, Sampling
    from verdict_daemon.review.routing import route
    from verdict_daemon.service.cycle import build_evaluator
    from verdict_daemon.service.judging import judge
    from verdict_daemon.service.sampling import sample
    from verdict_daemon.store.state import StateStore

    data = land_chats(tmp_path_factory.mktemp("review-judged-input"), _fake_openai_server, ANSWERS, TOKENS,
                      {"acme": TURNS})
    JUDGE["base_url"] = _fake_openai_server.base_url
    _fake_openai_server.handler = _judge_reply
    try:
        store, tenant = StateStore(data), TenantId("acme")
        evaluator = build_evaluator(EvaluatorConfig(name="tools", kind="rubric", model=f"{__name__}:judge_model",
                                                    trajectory=True), history_tokens=1000, trajectory_steps=20)
        sample(store, data, tenant, Sampling(per_cluster_per_window=10), datetime.now(UTC) + timedelta(days=2),
               Conversations())
        report = judge(store, tenant, evaluator, Judging(concurrency=1), "run-acme")
        assert report.judged == 2, report
        route(store, tenant, Review(audit_rate=1.0))
        # the second turn's (the only one with a tool step; land_chats reset the server: only judge requests)
        [request] = [r for r in _fake_openai_server.requests if _block(r, "trajectory")]
    finally:
        _fake_openai_server.reset()
    import duckdb

    with duckdb.connect(str(data / "state.duckdb"), read_only=True) as con:
        ((item_id,),) = con.execute("SELECT i.item_id FROM review_items i JOIN sampled_traces s USING (tenant_id, "
                                    "trace_id) WHERE s.query = ?", [SECOND]).fetchall()
    return data, evaluator, request, item_id


def test_the_review_item_shows_the_history_and_trajectory_the_judge_was_sent(judged):
    from verdict_daemon.review import get_item
    from verdict_daemon.store.state import StateStore

    data, _, request, item_id = judged
    # the judge request of the second turn holds the first turn and the tool step as background
    history, trajectory = _block(request, "conversation_so_far"), _block(request, "trajectory")
    assert history is not None and FIRST in history and ANSWERS[FIRST] in history
    assert trajectory is not None and "call lookup_charge" in trajectory and TOOL["result"] in trajectory
    detail = get_item(StateStore(data), TenantId("acme"), item_id)
    # exactly the judge's blocks (nothing here for redaction to change), apart from the graded answer
    assert (detail.history, detail.trajectory) == (history, trajectory)
    assert detail.response == _block(request, "answer") == ANSWERS[SECOND] and detail.query == SECOND
    page = client(data, Access.create(TenantId("acme"), None)).get(f"/review/{item_id}").text
    sections = dict(re.findall(r'<h3 id="judged-([a-z]+)-h">(.*?)</h3>', page))
    assert list(sections) == ["history", "question", "trajectory", "answer"]  # the judge's order
    assert sections["history"].startswith("Conversation so far") and "not graded" in sections["history"]
    assert sections["trajectory"].startswith("Tool trajectory") and sections["answer"] == "The graded answer"
    for key, text in (("history", detail.history), ("trajectory", detail.trajectory)):
        shown = re.search(rf'<section class="background" id="judged-{key}".*?<pre>(.*?)</pre>', page, re.S)
        assert shown is not None and html.unescape(shown.group(1)) == text
    answer = page.split('id="judged-answer"', 1)[1]
    assert html.escape(ANSWERS[SECOND], quote=False) in answer and TOOL["result"] not in answer.split("</section>")[0]


def test_the_sentinel_grades_the_labelled_turn_with_the_same_history_and_trajectory(judged, tmp_path,
                                                                                    _fake_openai_server):
    """The label exported to a sentinel set carries the background its reviewer saw, and the sentinel check sends
    the judge the very prompt the turn was judged with."""
    from verdict_daemon.config import Sentinel
    from verdict_daemon.review import export_sentinel, get_item, record_labels
    from verdict_daemon.service.sentinel_health import HealthGate
    from verdict_daemon.store.state import StateStore

    data, evaluator, request, item_id = judged
    store = StateStore(data)
    labelled = [j.dimension for j in get_item(store, TenantId("acme"), item_id).judgments if j.verdict == "PASS"
                and j.dimension != "tool_calls_answered"]  # the deterministic check is no judge dimension
    record_labels(store, TenantId("acme"), item_id, dict.fromkeys(labelled, "PASS"), critique="", reviewer="ana")
    out = tmp_path / "sentinel.jsonl"
    assert export_sentinel(store, TenantId("acme"), out) == 1
    [example] = [json.loads(line) for line in out.read_text().splitlines()]
    assert example["history"] == _block(request, "conversation_so_far")
    assert example["trajectory"] == _block(request, "trajectory")
    _fake_openai_server.reset()
    _fake_openai_server.handler = _judge_reply
    try:
        gate = HealthGate(Sentinel(file=out, minimum_examples=1, threshold=0.0), [evaluator])
        [record] = gate.require_all(store, TenantId("acme"), [evaluator])
        [regraded] = _fake_openai_server.requests
    finally:
        _fake_openai_server.reset()
    assert record["status"] == "healthy" and record["passed"] == 1
    assert regraded.body["messages"] == request.body["messages"]
