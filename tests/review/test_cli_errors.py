"""Every malformed flag of `verdict review` is one JSON error line on stderr, exit 2, nothing on
stdout, no traceback, and nothing written."""

from __future__ import annotations

import hashlib
import shutil

import duckdb
import pytest

from tests.review.cli import review
from verdict.cli_errors import EXIT_CODES

ITEM = "0" * 32


@pytest.fixture(scope="module")
def shared(_judged_template, tmp_path_factory):
    """One copy for every case: none may write, and each case checks that it did not."""
    data = tmp_path_factory.mktemp("errors") / "data"
    shutil.copytree(_judged_template, data)
    return data


def _state_digest(data) -> tuple:
    """The state file's bytes (DuckDB checkpoints on close, so any committed write changes them)."""
    files = sorted(data.glob("state.duckdb*"))
    return tuple((f.name, hashlib.sha256(f.read_bytes()).hexdigest()) for f in files)


CASES = [
    # (argv after the data dir/tenant, expected error code)
    (["list", "--limit", "0"], "invalid_config"),
    (["list", "--limit", "501"], "invalid_config"),
    (["list", "--limit", "ten"], "invalid_config"),
    (["list", "--offset", "-1"], "invalid_config"),
    (["list", "--status", "done"], "invalid_config"),
    (["list", "--reason", "hard"], "invalid_config"),
    (["list", "--bogus"], "invalid_config"),
    (["show"], "invalid_config"),
    (["show", "not-hex!"], "invalid_config"),
    (["show", ITEM], "item_not_found"),
    (["label", ITEM, "--critique", "c", "--reviewer", "r"], "invalid_config"),  # no --label
    (["label", ITEM, "--label", "relevance=pass", "--critique", "c", "--reviewer", "r"], "invalid_config"),
    (["label", ITEM, "--label", "relevance", "--critique", "c", "--reviewer", "r"], "invalid_config"),
    (["label", ITEM, "--label", "1x=PASS", "--critique", "c", "--reviewer", "r"], "invalid_config"),
    (["label", ITEM, "--label", "relevance=PASS", "--label", "relevance=FAIL", "--critique", "c", "--reviewer", "r"],
     "invalid_config"),
    (["label", ITEM, "--label", "relevance=FAIL", "--reviewer", "r"], "invalid_config"),  # a FAIL without --critique
    (["label", ITEM, "--label", "relevance=PASS", "--critique", "two\nlines", "--reviewer", "r"], "invalid_config"),
    (["label", ITEM, "--label", "relevance=FAIL", "--critique", " ", "--reviewer", "r"], "invalid_config"),
    (["label", ITEM, "--label", "relevance=PASS", "--critique", "x" * 501, "--reviewer", "r"], "invalid_config"),
    (["label", ITEM, "--label", "relevance=PASS", "--critique", "c"], "invalid_config"),  # no --reviewer
    (["label", ITEM, "--label", "relevance=PASS", "--critique", "c", "--reviewer", "a b"], "invalid_config"),
    (["agreement", "--positive", "UNCLEAR"], "invalid_config"),
    (["agreement", "--confidence", "1.5"], "invalid_config"),
    (["agreement", "--confidence", "0"], "invalid_config"),
    (["agreement", "--fingerprint", "xyz"], "invalid_config"),
    (["agreement", "--evaluator", "a", "--fingerprint", "abcdef0123"], "invalid_config"),
    (["agreement"], "no_labels"),
    (["export-sentinel"], "invalid_config"),  # no --out
    (["correlate", "--min-pairs", "1"], "invalid_config"),
    (["correlate", "--min-ac1", "2"], "invalid_config"),
    (["correlate", "--seed", "-3"], "invalid_config"),
    (["correlate", "--resamples", "5"], "invalid_config"),
    (["correlate", "--fail-on", "insufficient_data"], "invalid_config"),
    (["correlate", "--dimension", "no such"], "invalid_config"),
    (["correlate", "--signals-file", "/nonexistent/signals.jsonl"], "invalid_signals"),
    (["correlate"], "evaluator_ambiguous"),  # two evaluators judged this tenant
    (["correlate", "--evaluator", "nobody"], "invalid_config"),
    ([], "invalid_config"),  # no action
    (["frobnicate"], "invalid_config"),
]


@pytest.mark.parametrize(("argv", "code"), CASES, ids=[" ".join(a)[:60] or "no-action" for a, _ in CASES])
def test_malformed_input_is_a_clean_json_error(capsys, shared, argv, code):
    before = _state_digest(shared)
    where = ["--data-dir", str(shared), "--tenant", "acme"] if argv and argv[0] != "frobnicate" else []
    exit_code, out, err = review(capsys, *argv, *where)
    assert (exit_code, out) == (2, None)
    assert set(err) == {"error"} and err["error"]["code"] == code and err["error"]["message"]
    assert _state_digest(shared) == before


@pytest.mark.parametrize(("flags", "code"), [
    (["--tenant", "Bad Tenant!"], "invalid_tenant"),
    ([], "tenant_required"),
    (["--tenant", "acme", "--data-dir", "/nonexistent/verdict"], "invalid_config"),
])
def test_tenant_and_data_dir_are_checked(capsys, shared, monkeypatch, flags, code):
    monkeypatch.delenv("VERDICT_TENANT", raising=False)
    argv = ["list", *flags] if "--data-dir" in flags else ["list", "--data-dir", str(shared), *flags]
    exit_code, out, err = review(capsys, *argv)
    assert (exit_code, out, err["error"]["code"]) == (EXIT_CODES[code], None, code)


def test_a_data_dir_without_state_is_an_empty_queue_and_stays_without_state(capsys, tmp_path):
    code, page, _ = review(capsys, "list", "--data-dir", str(tmp_path), "--tenant", "acme")
    assert code == 0 and page["total"] == 0 and page["items"] == []
    code, _, err = review(capsys, "show", "ab" * 16, "--data-dir", str(tmp_path), "--tenant", "acme")
    assert (code, err["error"]["code"]) == (2, "item_not_found")
    assert not (tmp_path / "state.duckdb").exists()


def test_the_mixed_evaluator_error_names_the_fingerprints(capsys, shared):
    con = duckdb.connect(str(shared / "state.duckdb"), read_only=True)
    fingerprints = sorted(f for (f,) in con.execute("SELECT fingerprint FROM evaluators WHERE tenant_id = 'acme'")
                          .fetchall())
    con.close()
    _, _, err = review(capsys, "correlate", "--data-dir", str(shared), "--tenant", "acme")
    assert err["error"]["fingerprints"] == fingerprints
    assert all(f in err["error"]["message"] for f in fingerprints)
