"""`verdict ui`'s ways between pages and out of them (the real app over the real pipeline's lake, as in
test_app.py): the trace table's question and answer, filters listing the values present, heatmap cells,
cluster names and dimensions opening their traces, the trace page's links back, the signals page with
each cell's history, agreement only from a minimum n, and every list as CSV and JSON."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from dataclasses import dataclass

import pytest

from collector.sql import execute
from tests.report.conftest import HOSTILE_ANSWER
from tests.ui.conftest import csrf_of, state_rows
from tests.ui.test_app import trace_links
from verdict_ui import export
from verdict_ui.labelling import MIN_AGREEMENT_ITEMS


def options(page: str, name: str) -> list[str]:
    """The values a filter's select list offers (its "any" entry left out)."""
    found = re.search(rf'<select id="f-{name}" name="{name}">(.*?)</select>', page, re.S)
    assert found is not None, f"no select list for {name}"
    return [html.unescape(v) for v in re.findall(r'<option value="([^"]*)"', found.group(1)) if v]


def hrefs(page: str, css: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(rf'class="{css}" href="([^"]+)"', page)]


def judged(lake, tenant: str, **where: str) -> set[str]:
    """Traces with a latest judgment matching `where` (judgments columns), read straight from state.duckdb."""
    rows = state_rows(lake.data_dir, """
        SELECT DISTINCT a.trace_id, e.name, c.cluster, v.dimension FROM judgment_attempts a
        JOIN evaluators e USING (tenant_id, fingerprint)
        LEFT JOIN cluster_assignments c ON c.tenant_id = a.tenant_id AND c.trace_id = a.trace_id
        LEFT JOIN dimension_verdicts v ON v.tenant_id = a.tenant_id AND v.attempt_id = a.attempt_id
        WHERE a.tenant_id = $t""", t=tenant)
    keys = ("evaluator", "cluster", "dimension")
    return {r[0] for r in rows if all(where.get(k) in (None, r[1 + i]) for i, k in enumerate(keys))}


def test_trace_table_shows_question_and_answer_with_the_full_text_on_demand(ui):
    page = ui["acme"].get("/traces?q=ONERROR").text
    rows = re.findall(r"<tr>(.*?)</tr>", page.split("<tbody>")[1], re.S)
    assert len(rows) == 3
    for row in rows:
        clips = re.findall(r'<details class="clip"><summary>(.*?)</summary></details>', row, re.S)
        assert len(clips) == 2, row  # the question and the answer, each clipped with the whole on demand
        question, answer = clips
        assert "onerror" in question and "&lt;img" in question  # escaped, never markup
        assert "&lt;script&gt;alert" in answer and "bob@example.com" not in answer  # escaped and redacted
        assert 'data-label="Answer"' in row  # a phone shows each cell under its column's name
    assert HOSTILE_ANSWER not in page


def test_filters_list_the_values_present(ui, lake):
    page = ui["acme"].get("/traces").text
    _, calls = execute(lake.data_dir, "acme", "SELECT DISTINCT intent_key, coalesce(request_model, response_model), "
                                              "service_name FROM llm_calls")
    for name, column in (("intent", 0), ("model", 1), ("service", 2)):
        assert options(page, name) == sorted({r[column] for r in calls if r[column] is not None}), name
    clusters = {r[0] for r in state_rows(lake.data_dir, "SELECT DISTINCT cluster FROM cluster_assignments "
                                                        "WHERE tenant_id = 'acme'")}
    assert set(options(page, "cluster")) == clusters
    evaluators = {r[0] for r in state_rows(lake.data_dir, "SELECT DISTINCT e.name FROM judgment_attempts a JOIN evaluators "
                                                          "e USING (tenant_id, fingerprint) WHERE a.tenant_id = 'acme'")}
    assert set(options(page, "evaluator")) == evaluators
    assert options(page, "verdict") == ["PASS", "FAIL", "UNCLEAR", "ERROR", "NO_CONTENT"]
    # a value from a link that the data does not hold stays selected (and finds nothing)
    gone = ui["acme"].get("/traces?intent=gone.v9").text
    assert '<option value="gone.v9" selected>' in gone and "No model call matches" in gone
    assert '<input id="f-intent"' not in page  # no free-text intent any more
    days = [r[0].isoformat() for r in execute(lake.data_dir, "acme", "SELECT DISTINCT date FROM llm_calls "
                                                                      "ORDER BY 1 DESC")[1]]
    assert options(page, "date") == days
    one = ui["acme"].get(f"/traces?date={days[1]}&size=200").text
    _, that_day = execute(lake.data_dir, "acme", f"SELECT DISTINCT trace_id FROM llm_calls WHERE date = DATE '{days[1]}'")
    assert set(trace_links(one)) == {r[0] for r in that_day} and f'<option value="{days[1]}" selected>' in one
    assert ui["acme"].get(f"/traces?date={days[1]}&from={days[2]}").status_code == 400


def test_heatmap_cells_clusters_and_dimensions_open_their_traces(ui, lake):
    overview = ui["acme"].get("/").text
    heatmap = overview.split('id="heatmap"')[1].split("</section>")[0]
    links = hrefs(heatmap, "filter-link")
    cells = [h for h in links if "cluster=" in h and "dimension=" in h]
    rows = [h for h in links if "cluster=" in h and "dimension=" not in h]
    columns = [h for h in links if "dimension=" in h and "cluster=" not in h]
    assert cells and rows and columns
    for url in (cells[0], rows[0], columns[0]):
        query = dict(re.findall(r"([a-z]+)=([^&]+)", url))
        listed = set(trace_links(ui["acme"].get(url + "&size=200").text))
        assert listed, url
        expected = judged(lake, "acme", **{k: html.unescape(v).replace("+", " ") for k, v in query.items()
                                           if k in ("evaluator", "cluster", "dimension")})
        assert listed <= expected, url


def test_signals_page_lists_every_signal_cell_with_its_history(ui, lake, ids):
    page = ui["acme"].get("/signals")
    assert page.status_code == 200 and 'href="/signals" aria-current="page"' in page.text
    cells = state_rows(lake.data_dir, "SELECT DISTINCT fingerprint, cluster, dimension, kind FROM drift_signals "
                                      "WHERE tenant_id = 'acme'")
    body = page.text.split("<tbody>")[1]
    assert body.count("<tr>") == len(cells) > 0
    assert "open" in body  # the one closing decision raised every signal
    for url in hrefs(body, "signal-link"):
        assert ui["acme"].get(url).status_code == 200
    assert not any(s in page.text for s in ids["umbrella"].signals)
    for url in hrefs(body, "filter-link"):  # a cell opens its traces
        assert trace_links(ui["acme"].get(url).text), url


def test_signal_page_opens_its_cells_traces_and_back(ui, lake, ids):
    acme = ui["acme"]
    signal = acme.get(f"/signals/{ids['acme'].signals[0]}").text
    assert 'href="/signals"' in signal
    tested = hrefs(signal, "button")[0]
    assert "verdict=" in tested and "from=" in tested and "cluster=" in tested
    listed = set(trace_links(acme.get(tested + "&size=200").text))
    assert listed
    query = {k: html.unescape(v).replace("+", " ") for k, v in re.findall(r"([a-z]+)=([^&]+)", tested)}
    assert listed <= judged(lake, "acme", evaluator=query["evaluator"], cluster=query["cluster"],
                            dimension=query["dimension"])


def test_trace_page_links_its_intent_clusters_signals_and_review_items(ui, lake):
    [(trace, item)] = state_rows(lake.data_dir, "SELECT trace_id, item_id FROM review_items WHERE tenant_id = 'acme' "
                                                "ORDER BY item_id LIMIT 1")
    page = ui["acme"].get(f"/traces/{trace}").text
    related = page.split('<dl class="related">')[1].split("</dl>")[0]
    assert f'href="/review/{item}"' in related
    assert re.search(r'href="/traces\?intent=[a-z]+\.v1"', related)
    assert re.search(r'href="/traces\?evaluator=[a-z]+&amp;cluster=', related)
    [(example, signal)] = state_rows(lake.data_dir, "SELECT json_extract_string(examples, '$[0]'), signal_id "
                                                    "FROM drift_signals WHERE tenant_id = 'acme' ORDER BY signal_id LIMIT 1")
    linked = ui["acme"].get(f"/traces/{example}").text.split('<dl class="related">')[1].split("</dl>")[0]
    assert f'href="/signals/{signal}"' in linked and "example" in linked


def test_agreement_needs_a_minimum_of_items_and_names_its_evaluator(writable_ui, ids):
    acme = writable_ui["acme"]
    item = ids["acme"].items[0]
    page = acme.get(f"/review/{item}").text
    acme.post("/reviewer", data={"csrf": csrf_of(page), "reviewer": "alice"})
    form = acme.get(f"/review/{item}").text
    dims = re.findall(r'name="label\.([a-z_]+)" value="PASS"', form)
    acme.post(f"/review/{item}/labels", data={"csrf": csrf_of(form), **{f"label.{d}": "PASS" for d in dims},
                                              "critique": "fine"})
    review = acme.get("/review").text
    table = review.split("<h2>Judge–human agreement</h2>")[1]
    assert "insufficient data: 1 of the" in table and f"{MIN_AGREEMENT_ITEMS} labelled items" in table
    assert "Gwet" in table and not re.search(r"-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]", table)  # no AC1 at n = 1
    assert re.search(r"evaluator (quality|graph)</caption>", table)  # its name, not a fingerprint


@pytest.mark.parametrize(("path", "listing"), [("/traces?size=20", "traces cards"), ("/signals", "history cards"),
                                               ("/review?status=all", "queue cards")])
def test_every_list_exports_as_csv_and_json(ui, path, listing):
    acme = ui["acme"]
    shown = acme.get(path).text
    exported = json.loads(acme.get(f"{path}&format=json" if "?" in path else f"{path}?format=json").text)
    table = acme.get(f"{path}&format=csv" if "?" in path else f"{path}?format=csv")
    assert table.headers["content-type"].startswith("text/csv") and "attachment" in table.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(table.text)))
    body = shown.split(f'<table class="{listing}">')[1].split("</tbody>")[0]
    assert len(rows) == len(exported["rows"]) == body.count("<tr>") - 1 > 0  # less the header row
    assert 'class="export"' in shown
    if path.startswith("/traces"):
        assert exported["next"] and "format=json" in exported["next"] and "before=" in exported["next"]
        assert {r["trace_id"] for r in exported["rows"]} == set(trace_links(shown))
        assert "Link" in table.headers and 'rel="next"' in table.headers["Link"]


def test_exports_redact_and_defuse_formulas(ui):
    acme = ui["acme"]
    rows = json.loads(acme.get("/traces?q=ONERROR&format=json").text)["rows"]
    assert len(rows) == 3 and all("bob@example.com" not in json.dumps(r) for r in rows)
    assert all(r["answer"].startswith("<script>") for r in rows)  # JSON is data: escaped by the reader, not here
    text = acme.get("/traces?q=ONERROR&format=csv").text
    assert "bob@example.com" not in text
    assert acme.get("/traces?format=xml").status_code == 400


def test_a_csv_cell_is_never_a_formula():
    @dataclass(frozen=True)
    class Row:
        text: str
        number: int

    body = export.respond("rows", [Row("=HYPERLINK(\"http://x\")", -1), Row("@SUM(A1)", 2), Row("plain", 3)], "csv").body
    assert list(csv.reader(io.StringIO(bytes(body).decode()))) == [
        ["text", "number"], ["'=HYPERLINK(\"http://x\")", "-1"], ["'@SUM(A1)", "2"], ["plain", "3"]]


def test_unclear_leaves_a_dimension_unlabelled_and_all_pass_needs_no_critique(writable_ui, data_dir, ids):
    acme = writable_ui["acme"]
    items = [i for i in ids["acme"].items
             if len(state_rows(data_dir, "SELECT dimension FROM dimension_verdicts WHERE attempt_id = $i "
                                         "AND value IN ('PASS', 'FAIL')", i=i)) >= 2][:2]
    first = acme.get(f"/review/{items[0]}").text
    acme.post("/reviewer", data={"csrf": csrf_of(first), "reviewer": "alice"})
    form = acme.get(f"/review/{items[0]}").text
    assert 'value="UNCLEAR"' in form and "Skip to the next item (n)" in form
    assert not re.search(r'<input id="critique"[^>]*required', form)
    dims = re.findall(r'name="label\.([a-z_]+)" value="PASS"', form)
    unclear = {f"label.{d}": "UNCLEAR" for d in dims}
    moved = acme.post(f"/review/{items[0]}/labels", data={"csrf": csrf_of(form), **unclear, "critique": ""})
    assert moved.status_code == 303 and moved.headers["location"].startswith("/review/")
    assert moved.headers["location"] != f"/review/{items[0]}#judge"  # on to another item
    assert state_rows(data_dir, "SELECT count(*) FROM review_labels")[0][0] == 0  # nothing recorded
    labels = {**unclear, f"label.{dims[0]}": "PASS"}
    saved = acme.post(f"/review/{items[0]}/labels", data={"csrf": csrf_of(form), **labels, "critique": ""})
    assert saved.status_code == 303
    assert state_rows(data_dir, "SELECT dimension, label, critique FROM review_labels") == [(dims[0], "PASS", "")]
    failing = acme.post(f"/review/{items[0]}/labels", data={"csrf": csrf_of(form), f"label.{dims[1]}": "FAIL",
                                                            "critique": ""})
    assert failing.status_code == 400 and "when a label is FAIL" in html.unescape(failing.text)
    assert "Next item (n)" in acme.get(f"/review/{items[0]}").text  # labelled: no longer a skip
