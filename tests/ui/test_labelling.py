"""The label form over the real app and a copy of the real pipeline's state: each dimension shows its rubric
description (from the evaluator definition stored with the item's fingerprint), escaped."""

from __future__ import annotations

import json

import duckdb

from tests.ui.conftest import csrf_of, state_rows
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
