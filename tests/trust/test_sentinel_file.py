"""load_sentinel_set: every kind of load error names the line; the fingerprint tracks content only."""

import json

import pytest

from tests.trust.scripted import RUBRIC, examples, write_jsonl
from verdict.sentinel import SentinelError, load_sentinel_set


def test_loads_examples_with_context_and_labels(tmp_path):
    rows = examples(3)
    rows[1]["context"] = ["doc one", "doc two"]
    loaded = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", rows), RUBRIC)
    assert [e.id for e in loaded] == ["ex-0", "ex-1", "ex-2"]
    assert loaded.examples[1].context == ("doc one", "doc two")
    assert loaded.examples[0].label_map == {"relevance": "FAIL", "safety": "PASS"}
    assert len(loaded.fingerprint) == 64


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "ex-0", "response": "dup", "labels": {"safety": "PASS"}}', "duplicate id 'ex-0' (first on line 1)"),
    ('{"id": "x", "response": "r", "labels": {"safety": "pass"}}', "label 'pass' for 'safety' must be exactly PASS or FAIL"),
    ('{"id": "x", "response": "r", "labels": {"safety": "UNCLEAR"}}', "label 'UNCLEAR' for 'safety'"),
    ('{"id": "x", "response": "r", "labels": {"tone": "PASS"}}', "dimension 'tone' is not in rubric 'trust-tests'"),
    ('{"id": "x", "response": "r", "labels": {"safety": "PASS"}', "not valid JSON"),
    ('["x"]', "expected a JSON object, got list"),
    ('{"id": "x", "response": "r"}', "example 'x' declares no labels"),
    ('{"id": "x", "response": 3, "labels": {"safety": "PASS"}}', "'response' must be a string"),
    ('{"id": "", "response": "r", "labels": {"safety": "PASS"}}', "'id' must be a non-empty string"),
    ('{"id": "x", "response": "r", "context": 5, "labels": {"safety": "PASS"}}', "'context' must be"),
    ('{"id": "x", "answer": "r", "labels": {"safety": "PASS"}}', "unknown key(s) ['answer']"),
])
def test_load_errors_name_the_line(tmp_path, line, message):
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([json.dumps(r) for r in examples(2)] + [line]) + "\n")
    with pytest.raises(SentinelError) as error:
        load_sentinel_set(path, RUBRIC)
    assert str(error.value).startswith(f"{path}:3: ") and message in str(error.value)


def test_blank_lines_keep_line_numbers(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(examples(1)[0]) + "\n\n{oops\n")
    with pytest.raises(SentinelError, match=r"s\.jsonl:3: not valid JSON"):
        load_sentinel_set(path, RUBRIC)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(SentinelError, match="cannot read the file"):
        load_sentinel_set(tmp_path / "absent.jsonl", RUBRIC)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(SentinelError, match="no examples"):
        load_sentinel_set(tmp_path / "empty.jsonl", RUBRIC)


def test_default_rubric_rejects_dimensions_it_lacks(tmp_path):
    rows = [{"id": "a", "response": "r", "labels": {"politeness": "PASS"}}]
    with pytest.raises(SentinelError, match="not in rubric 'verdict-default'"):
        load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", rows))


def test_fingerprint_is_stable_across_order_and_formatting_and_changes_with_content(tmp_path):
    rows = examples(5)
    base = load_sentinel_set(write_jsonl(tmp_path / "a.jsonl", rows), RUBRIC).fingerprint
    assert load_sentinel_set(write_jsonl(tmp_path / "a.jsonl", rows), RUBRIC).fingerprint == base
    reordered = tmp_path / "b.jsonl"
    reordered.write_text("\n\n".join(json.dumps(r, indent=None, separators=(", ", ": "))
                                     for r in reversed(rows)) + "\n")
    assert load_sentinel_set(reordered, RUBRIC).fingerprint == base
    for change in ({"labels": {"relevance": "PASS", "safety": "FAIL"}}, {"response": "other"},
                   {"query": "other"}, {"context": "added"}, {"id": "renamed"}):
        changed = [dict(rows[0], **change), *rows[1:]]
        assert load_sentinel_set(write_jsonl(tmp_path / "c.jsonl", changed), RUBRIC).fingerprint != base
