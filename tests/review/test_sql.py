"""`verdict sql` exposes the review queue and its labels as tenant-scoped tables, like `judgments`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb

from tests.review.cli import review
from verdict.tenancy import TenantId
from verdict_daemon.cli import main
from verdict_daemon.store.state import MIGRATIONS, STATE_FILE
from verdict_daemon.store.views import add_state_views

DOC = Path(__file__).resolve().parents[2] / "docs" / "review.md"


def _sql(capsys, data, tenant: str, query: str) -> list[dict]:
    code = main(["sql", "--data-dir", str(data), "--tenant", tenant, "--format", "json", query])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    return json.loads(out)


def test_review_tables_are_tenant_scoped_and_mark_the_latest_label(capsys, judged):
    base = ["--data-dir", str(judged), "--tenant", "acme"]
    _, page, _ = review(capsys, "list", *base, "--reason", "unclear", "--limit", "1")
    item = page["items"][0]["item_id"]
    for label, who in (("FAIL", "ana"), ("PASS", "ben")):
        code, _, _ = review(capsys, "label", item, *base, "--label", f"relevance={label}",
                            "--critique", "see mail to bob@example.com", "--reviewer", who)
        assert code == 0

    items = _sql(capsys, judged, "acme", "SELECT tenant_id, evaluator, reasons FROM review_items")
    assert len(items) == page["summary"]["items"] and {r["tenant_id"] for r in items} == {"acme"}
    assert {r["evaluator"] for r in items} == {"single", "panel"}
    labels = _sql(capsys, judged, "acme", "SELECT item_id, trace_id, evaluator, revision, label, reviewer, latest, "
                  "critique FROM review_labels ORDER BY revision")
    assert [(r["item_id"], r["revision"], r["label"], r["reviewer"], r["latest"]) for r in labels] == [
        (item, 1, "FAIL", "ana", False), (item, 2, "PASS", "ben", True)]
    assert labels[0]["trace_id"] == page["items"][0]["trace_id"] and labels[0]["evaluator"] == "single"
    assert all("bob@example.com" not in r["critique"] for r in labels)

    # docs/review.md's query: the judge's verdict against the label in force (the item's relevance is UNCLEAR).
    (documented,) = re.findall(r'```text\nverdict sql [^"]*"(.*?)"\n```', DOC.read_text(), re.DOTALL)
    assert _sql(capsys, judged, "acme", documented) == [
        {"dimension": "relevance", "judge": "UNCLEAR", "human": "PASS", "items": 1}]

    globex = _sql(capsys, judged, "globex", "SELECT (SELECT count(*) FROM review_labels) AS labels, "
                  "count(*) AS items, count(*) FILTER (WHERE tenant_id <> 'globex') AS foreign FROM review_items")
    assert globex[0]["labels"] == 0 and globex[0]["items"] > 0 and globex[0]["foreign"] == 0


def _tables(data_dir) -> dict[str, int]:
    scoped = duckdb.connect()
    add_state_views(scoped, data_dir, TenantId("acme"))
    return {t: scoped.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            for (t,) in scoped.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_without_state_the_review_tables_exist_and_are_empty(tmp_path):
    tables = _tables(tmp_path)
    assert (tables["review_items"], tables["review_labels"]) == (0, 0)


def test_a_state_file_from_before_the_review_migration_still_serves_the_other_tables(tmp_path):
    # As left by an older release and read before any newer process migrated it (ATTACH is read-only).
    review_step = next(i for i, step in enumerate(MIGRATIONS) if any("review_labels" in s for s in step))
    con = duckdb.connect(str(tmp_path / STATE_FILE))
    for step in MIGRATIONS[:review_step]:
        for statement in step:
            con.execute(statement)
    con.close()
    tables = _tables(tmp_path)
    assert {"judgments", "drift_runs", "drift_signals"} <= set(tables) and not {"review_items", "review_labels"} & set(tables)
