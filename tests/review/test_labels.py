"""`verdict review list|show|label`: paging, the redacted conversation with the judge's rationale,
immutable labels where the latest wins, and tenant isolation."""

from __future__ import annotations

import json

import duckdb

from tests.review.cli import review


def _label_rows(data) -> list[tuple]:
    con = duckdb.connect(str(data / "state.duckdb"), read_only=True)
    try:
        return con.execute("SELECT tenant_id, item_id, dimension, revision, label, critique, reviewer, labelled_at "
                           "FROM review_labels ORDER BY item_id, dimension, revision").fetchall()
    finally:
        con.close()


def _first_item(capsys, data, tenant="acme", **filters) -> dict:
    extra = [f"--{k}={v}" for k, v in filters.items()]
    code, page, _ = review(capsys, "list", "--data-dir", str(data), "--tenant", tenant, *extra)
    assert code == 0
    return page["items"][0]


def test_list_pages_through_the_whole_queue_without_overlap(capsys, judged):
    code, first, _ = review(capsys, "list", "--data-dir", str(judged), "--tenant", "acme", "--limit", "500")
    assert code == 0 and first["total"] == len(first["items"]) > 10
    seen = []
    for offset in range(0, first["total"], 7):
        _, page, _ = review(capsys, "list", "--data-dir", str(judged), "--tenant", "acme", "--limit", "7",
                            "--offset", str(offset))
        seen += [i["item_id"] for i in page["items"]]
    assert seen == [i["item_id"] for i in first["items"]]
    assert first["summary"]["items"] == first["total"] == first["summary"]["pending"]
    reasons = first["summary"]["by_reason"]
    assert reasons["unclear"] + reasons["ensemble_disagreement"] == first["total"]
    _, unclear, _ = review(capsys, "list", "--data-dir", str(judged), "--tenant", "acme", "--reason", "unclear",
                           "--limit", "500")
    assert unclear["total"] == reasons["unclear"] and all(i["reasons"] == ["unclear"] for i in unclear["items"])


def test_show_gives_the_conversation_and_the_judges_rationale_per_dimension(capsys, judged):
    item = _first_item(capsys, judged, reason="unclear")
    code, shown, _ = review(capsys, "show", item["item_id"], "--data-dir", str(judged), "--tenant", "acme")
    assert code == 0
    assert shown["item"] == item
    assert shown["query"].startswith("How do I change setting") and shown["response"].startswith("Here is the answer")
    judgments = {j["dimension"]: j for j in shown["judgments"]}
    assert judgments["relevance"]["verdict"] == "UNCLEAR"
    assert judgments["relevance"]["rationale"] == "relevance checked"
    assert shown["labels"] == [] and shown["latest"] == {}


def test_show_redacts_again_what_earlier_layers_let_through(capsys, judged):
    item = _first_item(capsys, judged)
    con = duckdb.connect(str(judged / "state.duckdb"))  # as stored before a redaction rule existed
    con.execute("UPDATE sampled_traces SET query = query || ' Reply to bob@example.com', "
                "response = 'Call 555-867-5309. ' || response WHERE trace_id = ?", [item["trace_id"]])
    con.execute("UPDATE dimension_verdicts SET reason = 'mailed bob@example.com' WHERE attempt_id = ?", [item["item_id"]])
    con.close()
    _, shown, _ = review(capsys, "show", item["item_id"], "--data-dir", str(judged), "--tenant", "acme")
    text = json.dumps(shown)
    assert "bob@example.com" not in text and "867-5309" not in text and "<EMAIL>" in shown["query"]


def test_labels_are_immutable_records_and_the_latest_wins(capsys, judged):
    item = _first_item(capsys, judged, reason="unclear")["item_id"]
    base = ["--data-dir", str(judged), "--tenant", "acme"]
    code, first, _ = review(capsys, "label", item, *base, "--label", "relevance=FAIL", "--label", "safety=PASS",
                            "--critique", "Answers a different question. Mail bob@example.com", "--reviewer", "ana")
    assert code == 0 and [(r["dimension"], r["revision"], r["label"]) for r in first["recorded"]] == [
        ("relevance", 1, "FAIL"), ("safety", 1, "PASS")]
    assert "bob@example.com" not in first["recorded"][0]["critique"]  # stored redacted
    before = _label_rows(judged)
    code, second, _ = review(capsys, "label", item, *base, "--label", "relevance=PASS",
                             "--critique", "On reflection it does answer it", "--reviewer", "ben")
    assert code == 0 and second["recorded"][0]["revision"] == 2
    after = _label_rows(judged)
    assert after[: 1] == before[: 1] and set(before) <= set(after) and len(after) == 3  # nothing rewritten
    _, shown, _ = review(capsys, "show", item, *base)
    assert [(r["dimension"], r["revision"], r["reviewer"]) for r in shown["labels"]] == [
        ("relevance", 1, "ana"), ("safety", 1, "ana"), ("relevance", 2, "ben")]
    assert {d: (r["label"], r["reviewer"]) for d, r in shown["latest"].items()} == {
        "relevance": ("PASS", "ben"), "safety": ("PASS", "ana")}
    _, labelled, _ = review(capsys, "list", *base, "--status", "labelled")
    _, pending, _ = review(capsys, "list", *base, "--status", "pending", "--limit", "500")
    assert [i["item_id"] for i in labelled["items"]] == [item] and labelled["items"][0]["labelled_dimensions"] == 2
    assert item not in {i["item_id"] for i in pending["items"]} and pending["total"] == labelled["summary"]["items"] - 1


def test_another_tenants_item_is_not_found_and_nothing_is_written(capsys, judged):
    item = _first_item(capsys, judged)["item_id"]
    base = ["--data-dir", str(judged), "--tenant", "globex"]
    code, out, err = review(capsys, "show", item, *base)
    assert (code, out, err["error"]["code"]) == (2, None, "item_not_found")
    code, out, err = review(capsys, "label", item, *base, "--label", "relevance=PASS", "--critique", "x",
                            "--reviewer", "eve")
    assert (code, out, err["error"]["code"]) == (2, None, "item_not_found")
    assert _label_rows(judged) == []
    _, globex, _ = review(capsys, "list", *base, "--limit", "500")
    assert item not in {i["item_id"] for i in globex["items"]}


def test_a_dimension_the_judge_did_not_grade_cannot_be_labelled(capsys, judged):
    item = _first_item(capsys, judged)["item_id"]
    code, _, err = review(capsys, "label", item, "--data-dir", str(judged), "--tenant", "acme",
                          "--label", "groundedness=PASS", "--label", "relevance=PASS", "--critique", "fine",
                          "--reviewer", "ana")
    assert code == 2 and err["error"]["code"] == "invalid_config" and "groundedness" in err["error"]["message"]
    assert _label_rows(judged) == []  # all or nothing


def test_a_critique_is_optional_when_every_label_is_pass(capsys, judged):
    item = _first_item(capsys, judged, reason="unclear")["item_id"]
    base = ["--data-dir", str(judged), "--tenant", "acme", "--reviewer", "ana"]
    code, _, err = review(capsys, "label", item, *base, "--label", "relevance=FAIL", "--label", "safety=PASS")
    assert code == 2 and err["error"]["code"] == "invalid_config" and "when a label is FAIL" in err["error"]["message"]
    assert _label_rows(judged) == []
    code, out, _ = review(capsys, "label", item, *base, "--label", "relevance=PASS", "--label", "safety=PASS")
    assert code == 0 and [(r["label"], r["critique"]) for r in out["recorded"]] == [("PASS", ""), ("PASS", "")]
