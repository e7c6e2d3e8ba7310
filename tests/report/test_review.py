"""The review-queue section: the newest pending and labelled items with their redacted conversation, the
judge's verdict and rationale, and the labels in force, on a state the real pipeline judged and routed
(`run_cycle`, which calls `verdict_daemon.review.route`) and reviewers labelled with `record_labels`.

Tenant `acme`: two small intents with every confident judgment audited (audit_rate 1), so the pending
list is longer than the page shows; three hostile traces carry markup, an API key and a phone number in
the conversation, and two of them are labelled (one relabelled) with markup in the critique. Tenant
`umbrella`, judged and labelled the same way, must never show up in acme's page."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tests.daemon.conftest import INTENTS, NOW, make_config
from tests.daemon.lakes import span_row, synthetic_days, write_rows
from tests.report.conftest import JUDGE, _unique_queries
from tests.report.test_render import Elements
from verdict.tenancy import TenantId
from verdict_daemon.report import build_report
from verdict_daemon.report.panels import LABELLED_SHOWN, PENDING_SHOWN
from verdict_daemon.report.render import render
from verdict_daemon.review import get_item, list_items, queue_summary, record_labels
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.store.state import StateStore

AT = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
KEY, PHONE = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEf", "+1 415 555 0132"
QUERY = f'Is <img src=x onerror="alert(1)"> safe? My key is {KEY}, call {PHONE}'
ANSWER = "<script>alert('pwned')</script> Never share keys."
CRITIQUE = "Answer quotes <script>alert(2)</script> verbatim"
HOSTILE = [f"{0xbad0 + i:032x}" for i in range(3)]


@dataclass(frozen=True)
class Queue:
    data_dir: Path
    labelled: dict[str, str]  # acme item id -> trace id, for the labelled items
    umbrella_item: str


def _item_of(store: StateStore, tenant: str, trace_id: str) -> str:
    [item] = [i.item_id for i in list_items(store, TenantId(tenant), limit=500).items if i.trace_id == trace_id]
    return item


@pytest.fixture(scope="module")
def queue(tmp_path_factory) -> Queue:
    data = tmp_path_factory.mktemp("review-report") / "data"
    hostile = [span_row(trace, NOW - timedelta(minutes=5 + i), intent="search.v1", query=QUERY, answer=ANSWER)
               for i, trace in enumerate(HOSTILE)]
    write_rows(data, "acme", _unique_queries(synthetic_days(NOW, intents=INTENTS[:2], per_day=8, days=2)) + hostile)
    write_rows(data, "umbrella", _unique_queries(synthetic_days(NOW, intents=INTENTS[:1], per_day=3, days=1, seed=5)))
    config = make_config(data, evaluators=[{"name": "quality", "kind": "rubric", "model": JUDGE}],
                         tenants=[{"id": "acme"}, {"id": "umbrella"}], review={"audit_rate": 1.0})
    evaluators = build_evaluators(config)
    for tenant in ("acme", "umbrella"):
        assert run_cycle(config, TenantId(tenant), NOW, evaluators)["review_queued"] > 0
    store = StateStore(data)
    first, second = (_item_of(store, "acme", t) for t in HOSTILE[:2])
    at = datetime(2026, 11, 20, 1, 0, tzinfo=UTC)
    record_labels(store, TenantId("acme"), first, {"relevance": "FAIL", "safety": "PASS"}, critique=CRITIQUE, reviewer="ana",
                  now=at)
    record_labels(store, TenantId("acme"), first, {"relevance": "PASS"}, critique="On reflection it answers", reviewer="bo",
                  now=at + timedelta(hours=1))  # a relabel: the latest wins
    record_labels(store, TenantId("acme"), second, {"safety": "FAIL"}, critique=f"leaks {KEY}", reviewer="ana", now=at)
    umbrella = list_items(store, TenantId("umbrella"), limit=1).items[0].item_id
    record_labels(store, TenantId("umbrella"), umbrella, {"safety": "PASS"}, critique="umbrella-only critique",
                  reviewer="umbrella-reviewer", now=at)
    return Queue(data, {first: HOSTILE[0], second: HOSTILE[1]}, umbrella)


@pytest.fixture(scope="module")
def report(queue):
    data = build_report(queue.data_dir, "acme", generated_at=AT)
    return data, render(data)


def test_the_newest_items_are_those_of_the_review_api_with_their_cluster(queue, report):
    data, _ = report
    store = StateStore(queue.data_dir)
    summary = queue_summary(store, TenantId("acme"))
    pending = list_items(store, TenantId("acme"), status="pending", limit=PENDING_SHOWN)
    assert data.review.pending.total == summary["pending"] == pending.total > PENDING_SHOWN
    assert [i.summary for i in data.review.pending.items] == list(pending.items)
    assert data.review.labelled.total == summary["labelled"] == len(data.review.labelled.items) == 2
    con = duckdb.connect(str(queue.data_dir / "state.duckdb"), read_only=True)
    try:
        clusters = dict(con.execute("SELECT trace_id, cluster FROM cluster_assignments WHERE tenant_id = 'acme'")
                        .fetchall())
    finally:
        con.close()
    for item in (*data.review.pending.items, *data.review.labelled.items):
        detail = get_item(store, TenantId("acme"), item.summary.item_id)  # what `verdict review show` prints
        assert (item.query, item.response, item.judgments) == (detail.query, detail.response, detail.judgments)
        assert item.cluster == clusters[item.summary.trace_id] and item.cluster in INTENTS[:2]


def test_each_item_shows_reason_evaluator_cluster_and_an_expandable_conversation(report):
    data, page = report
    elements = Elements(page)
    shown = (*data.review.pending.items, *data.review.labelled.items)
    assert len(elements.all("li", "review-item")) == len(elements.all("details", "review")) == len(shown)
    for item in shown:
        assert item.summary.item_id in page and item.summary.trace_id in page
    text = "".join(elements.text)
    assert "audit sample · evaluator quality · cluster" in text
    for j in shown[0].judgments:  # every dimension's verdict and rationale, inside the <details>
        assert f"{j.dimension}: {j.verdict}" in text and j.rationale in text
    assert "verdict review label ITEM --data-dir DATA_DIR --tenant acme --label DIMENSION=PASS" in text
    assert f"verdict review label {shown[0].summary.item_id} --data-dir DATA_DIR --tenant acme" in text


def test_a_longer_queue_than_shown_says_so(report):
    data, page = report
    total = data.review.pending.total
    assert data.review.pending.truncated and not data.review.labelled.truncated
    assert (f"Showing the {PENDING_SHOWN} most recently queued of {total:,} pending items; "
            f"<code>verdict review list --status pending --offset {PENDING_SHOWN}</code>") in page
    assert "All 2 labelled item(s), most recently queued first." in page
    assert LABELLED_SHOWN >= 2


def test_labelled_items_show_the_latest_label_per_dimension_with_reviewer_and_critique(queue, report):
    data, page = report
    first = next(i for i in data.review.labelled.items if i.summary.trace_id == HOSTILE[0])
    assert {r.dimension: (r.label, r.revision, r.reviewer) for r in first.latest} == {
        "relevance": ("PASS", 2, "bo"), "safety": ("PASS", 1, "ana")}
    text = "".join(Elements(page).text)
    assert "relevance: PASS by bo (2026-11-20 02:00 UTC, revision 2; judge: PASS) — “On reflection it answers”" in text
    assert "relevance: FAIL by ana" not in text  # the superseded revision is not the label in force
    assert "safety: FAIL by ana" in text and "leaks <API_KEY>" in text


def test_markup_in_conversations_and_critiques_is_text_and_secrets_are_redacted(report):
    _, page = report
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in page  # the response
    assert "&lt;script&gt;alert(2)&lt;/script&gt; verbatim" in page  # the reviewer's critique
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page  # the query
    assert KEY not in page and PHONE not in page and "My key is &lt;API_KEY&gt;" in page


def test_the_renderer_redacts_what_reaches_it_unredacted(report):
    """get_item redacts already; the page must not rely on it: secrets planted after the API still vanish."""
    data, _ = report
    item = data.review.labelled.items[0]
    planted = dataclasses.replace(
        item, context=f"ctx {KEY}", query=f"q {PHONE}", cluster=f"c {KEY}",
        judgments=tuple(dataclasses.replace(j, rationale=f"why {PHONE}") for j in item.judgments),
        latest=tuple(dataclasses.replace(r, critique=f"crit {KEY}", reviewer=f"rev {PHONE}") for r in item.latest))
    review = dataclasses.replace(data.review, labelled=dataclasses.replace(data.review.labelled, items=(planted,)))
    page = render(dataclasses.replace(data, review=review))
    assert KEY not in page and PHONE not in page
    assert "ctx &lt;API_KEY&gt;" in page and "crit &lt;API_KEY&gt;" in page and "why &lt;PHONE&gt;" in page


def test_another_tenants_items_never_appear(queue, report):
    data, page = report
    assert queue.umbrella_item not in page and "umbrella" not in page
    umbrella = build_report(queue.data_dir, "umbrella", generated_at=AT)
    assert [i.summary.item_id for i in umbrella.review.labelled.items] == [queue.umbrella_item]
    assert not {i.summary.item_id for i in (*umbrella.review.pending.items, *umbrella.review.labelled.items)} & {
        i.summary.item_id for i in (*data.review.pending.items, *data.review.labelled.items)}
    assert "umbrella-only critique" in render(umbrella)


def test_empty_states_explain_the_queue(lake, queue):
    """A tenant without a queue, and a queue without labels (the session lake: nothing labelled)."""
    empty = render(build_report(lake.data_dir, "globex", generated_at=AT))
    assert "The review queue is empty: the daemon routes UNCLEAR verdicts" in empty
    assert not Elements(empty).all("li", "review-item")
    unlabelled = render(build_report(lake.data_dir, "acme", generated_at=AT))
    assert "No item labelled yet: labels recorded with <code>verdict review label</code> appear here" in unlabelled
