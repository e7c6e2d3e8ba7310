"""The label form over the real app and a copy of the real pipeline's state: each dimension shows its rubric
description (from the evaluator definition stored with the item's fingerprint), escaped."""

from __future__ import annotations

import html
import json
import re

import duckdb

from tests.ui.conftest import csrf_of, signal_with_items, state_rows
from verdict_daemon.report.escape import safe


def _labelling_page(client, item: str) -> str:
    first = client.get(f"/review/{item}").text
    client.post("/reviewer", data={"csrf": csrf_of(first), "reviewer": "alice"})
    return client.get(f"/review/{item}").text


def _legend_blocks(page: str) -> dict[str, str]:
    """Dimension -> the HTML of its fieldset in the label form."""
    blocks = page.split('<fieldset class="dimension"')[1:]
    return {b.split("<legend>", 1)[1].split("<", 1)[0].split(" ⚑", 1)[0]: b.split("</fieldset>", 1)[0] for b in blocks}


def test_each_dimension_shows_its_rubric_description(writable_ui, data_dir, ids):
    item = ids["acme"].items[0]
    [(definition,)] = state_rows(data_dir, "SELECT e.definition FROM review_items i JOIN evaluators e USING "
                                 "(tenant_id, fingerprint) WHERE i.item_id = $i", i=item)
    described = {d["name"]: d["description"] for d in json.loads(definition)["rubric"]["dimensions"]}
    fieldsets = _legend_blocks(_labelling_page(writable_ui["acme"], item))
    assert fieldsets and set(fieldsets) <= set(described)
    for dimension, block in fieldsets.items():
        assert f'<p class="dimension-description muted">{safe(described[dimension])}</p>' in block


def test_a_hostile_description_is_escaped(writable_ui, data_dir, ids):
    item = ids["acme"].items[0]
    con = duckdb.connect(str(data_dir / "state.duckdb"))
    try:  # the stored definition is text a rubric author wrote: the page must show it, never run it
        [(fingerprint, definition)] = con.execute(
            "SELECT e.fingerprint, e.definition FROM review_items i JOIN evaluators e USING (tenant_id, fingerprint) "
            "WHERE i.item_id = ?", [item]).fetchall()
        parsed = json.loads(definition)
        for d in parsed["rubric"]["dimensions"]:
            d["description"] = '<img src=x onerror="alert(1)"> & more'
        con.execute("UPDATE evaluators SET definition = ? WHERE fingerprint = ?", [json.dumps(parsed), fingerprint])
    finally:
        con.close()
    page = _labelling_page(writable_ui["acme"], item)
    assert 'onerror="alert(1)"' not in page
    assert page.count('&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; more') == len(_legend_blocks(page)) > 0


def test_a_signal_page_opens_the_queue_of_its_examples(ui, lake):
    umbrella = ui["umbrella"]
    signal, items = signal_with_items(lake.data_dir, "umbrella", queued=True)
    page = umbrella.get(f"/signals/{signal}").text
    [link] = re.findall(r'id="signal-queue-link" href="([^"]+)"', page)
    assert "label this signal&#x27;s examples" in page or "label this signal's examples" in page
    queue = umbrella.get(html.unescape(link)).text
    listed = set(re.findall(r'class="item-link" href="/review/([^"?]+)\?signal=', queue))
    [(queued,)] = state_rows(lake.data_dir, "SELECT count(*) FROM review_items WHERE tenant_id = 'umbrella'")
    assert listed == items and queued > len(items)  # the signal's items, and only them
    assert f"All items, newest first ({len(items)})" in queue
    # the counts panel beside it is the whole queue's, and says so (its "Items" is not this list's count)
    assert "The whole review queue (every item, not only this signal's)" in html.unescape(queue)
    assert "The whole review queue" not in umbrella.get("/review?status=all").text
    [next_item] = re.findall(r'id="next-item" href="/review/([^"?]+)\?signal=', queue)
    assert next_item in items
    assert f'href="/signals/{signal}"' in queue  # and back
    exported = umbrella.get(html.unescape(link) + "&format=json").json()["rows"]
    assert {r["item_id"] for r in exported} == items
    tabs = re.findall(r'<a href="(/review\?[^"]+)"', queue.split('class="tabs"', 1)[1].split("</p>", 1)[0])
    assert tabs and all(f"signal={signal}" in t for t in tabs)


def test_a_signal_without_queued_examples_says_how_items_get_queued(ui, lake):
    signal, _ = signal_with_items(lake.data_dir, "acme", queued=False)
    queue = ui["acme"].get(f"/review?status=all&signal={signal}").text
    assert 'class="item-link"' not in queue and 'id="next-item"' not in queue
    assert "is in the review queue" in queue and "audit_rate" in queue


def test_the_name_form_returns_to_the_item_inside_the_signals_queue(writable_ui, data_dir):
    """A first-time reviewer who opens an item from a signal's queue gives a name and lands back on that item
    still inside the queue (the label form and the next item keep the signal)."""
    umbrella = writable_ui["umbrella"]
    signal, items = signal_with_items(data_dir, "umbrella", queued=True)
    item = sorted(items)[0]
    page = umbrella.get(f"/review/{item}?signal={signal}").text
    [back] = re.findall(r'name="next" value="([^"]+)"', page)
    assert html.unescape(back) == f"/review/{item}?signal={signal}"
    named = umbrella.post("/reviewer", data={"csrf": csrf_of(page), "reviewer": "alice", "next": html.unescape(back)})
    assert named.status_code == 303 and named.headers["location"] == f"/review/{item}?signal={signal}"
    page = umbrella.get(named.headers["location"]).text
    [action] = re.findall(r'<form method="post" action="([^"]+)" id="label-form"', page)
    assert html.unescape(action) == f"/review/{item}/labels?signal={signal}"


def test_the_queue_of_another_tenants_signal_is_not_found(ui, lake):
    signal, _ = signal_with_items(lake.data_dir, "umbrella", queued=True)
    assert ui["acme"].get(f"/review?signal={signal}").status_code == 404
    assert ui["acme"].get("/review?signal=%3Cscript%3E").status_code == 400


def test_labelling_inside_a_signals_queue_stays_among_its_examples(writable_ui, data_dir):
    umbrella = writable_ui["umbrella"]
    signal, items = signal_with_items(data_dir, "umbrella", queued=True)
    queue = umbrella.get(f"/review?status=all&signal={signal}").text
    [first] = re.findall(r'id="next-item" href="([^"]+)"', queue)
    assert f"signal={signal}" in html.unescape(first)
    page = umbrella.get(html.unescape(first)).text
    umbrella.post("/reviewer", data={"csrf": csrf_of(page), "reviewer": "alice"})
    page = umbrella.get(html.unescape(first)).text
    [action] = re.findall(r'<form method="post" action="([^"]+)" id="label-form"', page)
    [following] = re.findall(r'id="next-item" href="/review/([^"?]+)\?signal=', page)
    assert following in items and f"?signal={signal}" in html.unescape(action)  # the next one is the signal's too
    dims = re.findall(r'name="label\.([a-z_]+)" value="PASS"', page)
    saved = umbrella.post(html.unescape(action), data={"csrf": csrf_of(page), **{f"label.{d}": "PASS" for d in dims}})
    assert saved.status_code == 303 and saved.headers["location"].endswith(f"?signal={signal}#judge")
    labelled = state_rows(data_dir, "SELECT DISTINCT item_id FROM review_labels WHERE tenant_id = 'umbrella'")
    assert [r[0] for r in labelled] == [html.unescape(first).split("/review/", 1)[1].split("?", 1)[0]]
    unclear = umbrella.post(f"/review/{following}/labels?signal={signal}",
                            data={"csrf": csrf_of(page), **{f"label.{d}": "UNCLEAR" for d in dims}})
    assert unclear.headers["location"] == f"/review?status=all&signal={signal}"  # the signal's items are done
