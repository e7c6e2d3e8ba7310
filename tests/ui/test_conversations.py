"""The conversations list and a conversation's page (issue 29, item 5), on real parts over loopback.

The chat app of the conversation-history test (tests/daemon/conversation_app.py: the real SDK with
`verdict.conversation_context`, the real openai client against the fake OpenAI server) sends, for tenant acme,
three turns of conversation c1 interleaved with a turn of c2 and a turn in no conversation, and for tenant globex
one turn of its own c1; the real collector process lands them. The daemon's real sampler, a rubric evaluator built
from the config (its scripted judge model is the only stand-in) and the review router (audit rate 1: every judgment
queued) fill state.duckdb; the UI reads both.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.daemon.chats import land_chats
from tests.daemon.lakes import grade
from tests.ui.conftest import client
from tests.ui.test_app import trace_links
from verdict.models.scripted import ScriptedModel
from verdict.tenancy import TenantId
from verdict_ui.access import Access

TOKENS = {"acme": "acme-token-0123456789abcdef", "globex": "globex-token-0123456789abcdef"}
HOSTILE = "<script>alert('turn')</script> my card 4111 1111 1111 1111 <img src=x onerror=alert(1)>"
ANSWERS = {
    "I was charged twice for order 1001, reach me at jane@example.com.": "I see two charges of 30 EUR on order 1001.",
    "Can you refund the second charge?": "I can refund the second charge of 30 EUR. Shall I go ahead?",
    HOSTILE: "<b onclick=\"alert(2)\">Refunded</b>, write to bob@example.com",
    "What are your opening hours?": "We are open from 9 to 5.",
    "How do I reset my password?": "Use the reset link on the login page.",
    "Tell me the globex launch date.": "The globex launch date is not public.",
}
C1 = list(ANSWERS)[:3]
ACME_TURNS = [
    {"conversation": "c1", "intent": "billing.v1", "user": C1[0]},
    {"conversation": "c1", "intent": "billing.v1", "user": C1[1]},
    {"conversation": "c2", "intent": "hours.v1", "user": "What are your opening hours?"},
    {"conversation": None, "intent": "account.v1", "user": "How do I reset my password?"},
    {"conversation": "c1", "intent": "billing.v1", "user": HOSTILE},
]
GLOBEX_TURNS = [{"conversation": "c1", "intent": "billing.v1", "user": "Tell me the globex launch date."}]


def judge_model() -> ScriptedModel:
    """The judge model `build_evaluator` resolves ('module:attribute'): a deterministic rubric judge."""
    return ScriptedModel(grade, name="scripted/conversation-ui-judge")


@pytest.fixture(scope="module")
def chat_dir(tmp_path_factory, _fake_openai_server) -> Path:
    from verdict_daemon.config import Conversations, EvaluatorConfig, Judging, Review, Sampling
    from verdict_daemon.review.routing import route
    from verdict_daemon.service.cycle import build_evaluator
    from verdict_daemon.service.judging import judge
    from verdict_daemon.service.sampling import sample
    from verdict_daemon.store.state import StateStore

    data = land_chats(tmp_path_factory.mktemp("conversation-ui"), _fake_openai_server, ANSWERS, TOKENS,
                      {"acme": ACME_TURNS, "globex": GLOBEX_TURNS})
    store = StateStore(data)
    evaluator = build_evaluator(EvaluatorConfig(name="quality", kind="rubric", model=f"{__name__}:judge_model"), 1000)
    outcome = build_evaluator(EvaluatorConfig(  # a conversation evaluator: judges each closed conversation as a whole
        name="outcome", kind="rubric", unit="conversation",
        model="tests.daemon.test_conversation_units:recording_conversation_judge"))
    for tenant in TOKENS:
        sample(store, data, TenantId(tenant), Sampling(per_cluster_per_window=10),
               datetime.now(UTC) + timedelta(days=2), Conversations(), judge_conversations=True)
        judge(store, TenantId(tenant), evaluator, Judging(concurrency=1), f"run-{tenant}")
        judge(store, TenantId(tenant), outcome, Judging(concurrency=1), f"run-{tenant}-conversations")
        route(store, TenantId(tenant), Review(audit_rate=1.0))
    return data


@pytest.fixture(scope="module")
def ui(chat_dir):
    return {t: client(chat_dir, Access.create(TenantId(t), None)) for t in TOKENS}


def _turns(page: str) -> list[str]:
    return re.findall(r'<article class="call turn" id="turn-(\d+)">', page)


def _messages(page: str, role: str) -> list[str]:
    return [html.unescape(m) for m in re.findall(rf'<div class="msg role-{role}"><p class="role">{role}</p><pre>(.*?)</pre>',
                                                   page, re.S)]


def test_the_list_shows_each_conversation_of_the_tenant_once(ui):
    page = ui["acme"].get("/conversations").text
    assert '<a href="/conversations" aria-current="page">Conversations</a>' in page  # in the nav
    links = re.findall(r'class="conversation-link" href="/conversations/([^"?]+)\?seq=(\d+)"', page)
    assert sorted(links) == [("c1", "1"), ("c2", "1")]
    rows = json.loads(ui["acme"].get("/conversations?format=json").text)["rows"]
    assert {(r["conversation_id"], r["turns"], r["intent_key"]) for r in rows} == {("c1", 3, "billing.v1"),
                                                                                 ("c2", 1, "hours.v1")}
    table = list(csv.DictReader(io.StringIO(ui["acme"].get("/conversations?format=csv").text)))
    assert len(table) == 2 and {r["conversation_id"] for r in table} == {"c1", "c2"}
    assert re.findall(r'href="/conversations/([^"?]+)', ui["globex"].get("/conversations").text) == ["c1"]
    filtered = ui["acme"].get("/conversations?intent=hours.v1").text
    assert re.findall(r'class="conversation-link" href="/conversations/([^"?]+)', filtered) == ["c2"]
    assert ui["acme"].get("/conversations?status=maybe").status_code == 400


def test_a_conversation_shows_its_turns_in_order_with_their_verdicts(ui, chat_dir):
    page = ui["acme"].get("/conversations/c1").text
    assert _turns(page) == ["1", "2", "3"]
    questions = _messages(page, "user")
    assert questions[:2] == ["I was charged twice for order 1001, reach me at <EMAIL>.", "Can you refund the second charge?"]
    assert "jane@example.com" not in page and "opening hours" not in page and "reset my password" not in page
    assert _messages(page, "assistant")[:2] == [ANSWERS[C1[0]], ANSWERS[C1[1]]]
    for n in ("1", "2", "3"):  # each turn judged (the sampler took every trace): its verdicts summed up, then listed
        turn = page.split(f'id="turn-{n}"', 1)[1].split("</article>", 1)[0]
        assert re.search(r'<span class="badge v-(pass|fail|unclear|error)">', turn), n
        assert "<caption>This turn’s latest verdicts</caption>" in turn
        assert re.search(r'class="item-link" href="/review/[^"]+"', turn), n  # queued for review: linked both ways
    # The conversation evaluator's verdicts on c1 as a whole, apart from every turn's own
    whole = page.split('id="conversation-verdicts"', 1)[1].split("</section>", 1)[0]
    assert "No conversation evaluator" not in whole
    assert {d for d in ("resolved", "user_frustration", "consistency") if d in whole} == {
        "resolved", "user_frustration", "consistency"}
    assert "outcome" in whole and "outcome" not in page.split('id="turns"', 1)[1]
    assert "globex" not in page  # the other tenant's c1


def test_trace_and_conversation_link_both_ways(ui):
    page = ui["acme"].get("/conversations/c1").text
    turn_traces = re.findall(r'class="trace-link" href="/traces/([0-9a-f]{32})\?day=', page)
    assert len(turn_traces) == 3
    listing = ui["acme"].get("/traces").text
    for trace in turn_traces:
        back = ui["acme"].get(f"/traces/{trace}").text
        related = back.split('<dl class="related">')[1].split("</dl>")[0]
        assert f'href="/conversations/c1?trace={trace}"' in related
        opened = ui["acme"].get(f"/conversations/c1?trace={trace}").text
        assert f"/traces/{trace}?day=" in opened and _turns(opened) == ["1", "2", "3"]
        assert f'href="/conversations/c1?trace={trace}"' in listing  # the table's row links its conversation too
    alone = [t for t in trace_links(listing) if t not in turn_traces]
    assert len(alone) == 2  # c2's turn and the turn in no conversation
    assert sum(f'/conversations/c2?trace={t}' in listing for t in alone) == 1


def test_a_conversation_units_id_opens_its_first_turn(ui, chat_dir):
    """A conversation evaluator's results are stored under the unit id `conversation:<first trace>` (signal examples,
    review items link it): the trace page of that id is its first turn's, whose page links the conversation."""
    import duckdb

    with duckdb.connect(str(chat_dir / "state.duckdb"), read_only=True) as con:
        units = [u for (u,) in con.execute("SELECT trace_id FROM sampled_traces WHERE tenant_id = 'acme' "
                                           "AND unit = 'conversation' ORDER BY trace_id").fetchall()]
    assert len(units) == 2 and all(u.startswith("conversation:") for u in units)  # c1 and c2
    for unit in units:
        opened = ui["acme"].get(f"/traces/{unit}", follow_redirects=False)
        first = unit.removeprefix("conversation:")
        assert opened.status_code == 303 and opened.headers["location"] == f"/traces/{first}"
        assert "/conversations/c" in ui["acme"].get(opened.headers["location"]).text
    assert ui["globex"].get(f"/traces/{units[0]}", follow_redirects=True).status_code == 404  # not globex's trace


def test_tenants_bad_keys_and_unknown_conversations(ui):
    assert ui["globex"].get("/conversations/c2").status_code == 404  # acme's only
    assert _turns(ui["globex"].get("/conversations/c1").text) == ["1"]
    assert ui["acme"].get("/conversations/c1?seq=2").status_code == 404
    assert ui["acme"].get("/conversations/c1?seq=x").status_code == 400
    bad = ui["acme"].get("/conversations/has%20space")
    assert bad.status_code == 400 and "conversation id" in bad.text
    assert ui["acme"].get("/conversations/c1?trace=not%20an%20id").status_code == 400
    unknown = ui["acme"].get("/conversations/" + "z" * 40)
    assert unknown.status_code == 404 and "<article" not in unknown.text


def test_hostile_turn_content_is_escaped_and_redacted(ui):
    page = ui["acme"].get("/conversations/c1").text
    third = page.split('id="turn-3"', 1)[1].split("</article>", 1)[0]
    assert "&lt;script&gt;alert" in third and "&lt;b onclick" in third
    for raw in ("<script>alert", "<img src", "<b onclick", "4111 1111 1111 1111", "bob@example.com"):
        assert raw not in page, raw


def test_a_review_item_links_its_conversation_only_once_labelled(chat_dir, tmp_path):
    import shutil

    from tests.ui.conftest import csrf_of

    writable = shutil.copytree(chat_dir, tmp_path / "data")
    acme = client(writable, Access.create(TenantId("acme"), None))
    page = acme.get("/conversations/c1").text
    found = re.search(r'class="item-link" href="/review/([^"]+)"', page.split('id="turn-2"', 1)[1])
    assert found is not None
    item = found.group(1)
    before = acme.get(f"/review/{item}").text
    assert "/conversations/c1" not in before  # blind: the conversation page shows the judge's verdicts
    acme.post("/reviewer", data={"csrf": csrf_of(before), "reviewer": "alice"})
    form = acme.get(f"/review/{item}").text
    dims = re.findall(r'name="label\.([a-z_]+)" value="PASS"', form)
    assert dims
    acme.post(f"/review/{item}/labels", data={"csrf": csrf_of(form), **{f"label.{d}": "PASS" for d in dims}})
    after = acme.get(f"/review/{item}").text
    assert re.search(r'class="conversation-link" href="/conversations/c1\?trace=[0-9a-f]{32}"', after)


def test_a_signal_example_that_is_a_turn_links_its_conversation_and_back(data_dir, ids):
    """The UI lake's tenant acme has signals but no conversations: a span that arrives later with a conversation key
    (landed by the collector's segment writer) makes a stored example a turn; the signal page then links its
    conversation, and the conversation's turn links the signal."""
    from tests.daemon.lakes import span_row, write_rows
    from tests.ui.conftest import state_rows

    [(example, signal, started)] = state_rows(data_dir, """
        SELECT json_extract_string(s.examples, '$[0]'), s.signal_id, t.started_at FROM drift_signals s
        JOIN sampled_traces t ON t.tenant_id = s.tenant_id AND t.trace_id = json_extract_string(s.examples, '$[0]')
        WHERE s.tenant_id = 'acme' ORDER BY s.signal_id LIMIT 1""")
    late = span_row(example, started.replace(tzinfo=UTC) - timedelta(milliseconds=1), intent=None, query="", answer="",
                    span_id="f" * 16)
    late.update(operation="invoke_agent", name="invoke_agent late", input_messages=None, output_messages=None,
                conversation_id="c-signal")
    write_rows(data_dir, "acme", [late])
    acme = client(data_dir, Access.create(TenantId("acme"), None))
    page = acme.get(f"/signals/{signal}").text
    examples = page.split('id="examples"', 1)[1].split("</section>", 1)[0]
    assert f'class="conversation-link" href="/conversations/c-signal?trace={example}"' in examples
    turn = acme.get(f"/conversations/c-signal?trace={example}").text
    assert f'class="signal-link" href="/signals/{signal}"' in turn and _turns(turn) == ["1"]


def test_a_conversation_units_review_item_shows_the_transcript_it_was_judged_on(ui, chat_dir):
    """A reviewer labels a conversation evaluator's verdict on the conversation as a whole: the item shows every turn
    the judge was shown (redacted, escaped), not only the conversation's last answer."""
    import duckdb

    from verdict_daemon.review import get_item
    from verdict_daemon.store.state import StateStore

    with duckdb.connect(str(chat_dir / "state.duckdb"), read_only=True) as con:
        ((item_id,),) = con.execute(
            "SELECT i.item_id FROM review_items i JOIN sampled_traces s USING (tenant_id, trace_id) "
            "WHERE i.tenant_id = 'acme' AND s.unit = 'conversation' AND s.query LIKE 'I was charged twice%'").fetchall()
    detail = get_item(StateStore(chat_dir), TenantId("acme"), item_id)
    assert detail.response.count("[turn ") == 6  # three turns, user and assistant each
    assert ANSWERS[C1[0]] in detail.response and ANSWERS[C1[1]] in detail.response
    assert "jane@example.com" not in detail.response
    page = ui["acme"].get(f"/review/{item_id}").text
    assert html.escape(ANSWERS[C1[1]], quote=False) in page and "<script>alert('turn')" not in page
