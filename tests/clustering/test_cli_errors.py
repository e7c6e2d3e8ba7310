"""Malformed input for every `verdict-cluster` flag: one JSON error object with a closed code, exit 2,
no traceback, and nothing written (not even state.duckdb)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.clustering.cli import run
from tests.clustering.lakes import build
from tests.daemon.cli import env
from verdict_daemon.cli.cluster import main
from verdict_daemon.clustering.errors import CLUSTER_ERROR_CODES

GOOD = "cv-0123456789abcdef"
MALFORMED = [
    # (command line after the global flags, expected code, a word the message must contain)
    ((), "invalid_config", "command"),
    (("bogus",), "invalid_config", "bogus"),
    (("normalize", "--limit", "0"), "invalid_config", "--limit"),
    (("normalize", "--limit", "-5"), "invalid_config", "--limit"),
    (("normalize", "--limit", "50001"), "invalid_config", "--limit"),
    (("normalize", "--limit", "many"), "invalid_config", "--limit"),
    (("normalize", "--bogus"), "invalid_config", "--bogus"),
    (("fit", "--cutoff", "2026-11-19T00:00:00Z"), "invalid_config", "explicit, semantic, hybrid"),
    (("fit", "--strategy", "kmeans", "--cutoff", "2026-11-19T00:00:00Z"), "invalid_config", "explicit"),
    (("fit", "--strategy", "explicit"), "invalid_config", "--cutoff"),
    (("fit", "--strategy", "explicit", "--cutoff", "yesterday"), "invalid_config", "--cutoff"),
    (("fit", "--strategy", "explicit", "--cutoff", "2999-01-01T00:00:00Z"), "invalid_config", "future"),
    (("fit", "--strategy", "explicit", "--cutoff", "0001-01-01T00:00:00+05:00"), "invalid_config", "--cutoff"),
    (("fit", "--strategy", "explicit", "--cutoff", "2026-02-30"), "invalid_config", "--cutoff"),
    (("fit", "--strategy", "explicit", "--cutoff", "2026-11-19", "--target-workload", "two words"),
     "invalid_config", "--target-workload"),
    (("fit", "--strategy", "explicit", "--cutoff", "2026-11-19", "--model-path", "."), "invalid_config",
     "--model-path"),
    (("fit", "--strategy", "semantic", "--cutoff", "2026-11-19", "--model-path", "/no/such/model"),
     "model_unavailable", "/no/such/model"),
    (("assign", "--through-cutoff", "2026-11-19"), "invalid_config", "--version"),
    (("assign", "--version", "v1", "--through-cutoff", "2026-11-19"), "invalid_config", "--version"),
    (("assign", "--version", GOOD, "--through-cutoff", "2026-13-01"), "invalid_config", "--through-cutoff"),
    (("assign", "--version", GOOD), "invalid_config", "--through-cutoff"),
    (("assign", "--version", GOOD, "--through-cutoff", "9999-12-31T23:00:00-05:00"), "invalid_config",
     "--through-cutoff"),
    (("assign", "--version", "cv-0123456789abcdef' OR '1'='1", "--through-cutoff", "2026-11-19"), "invalid_config",
     "--version"),
    (("assign", "--version", GOOD, "--through-cutoff", "2026-11-19", "--model-path", "/no/such/model"),
     "model_unavailable", "/no/such/model"),
    (("validate",), "invalid_config", "--version"),
    (("validate", "--version", "CV-0123456789ABCDEF"), "invalid_config", "--version"),
    (("activate", "--version", GOOD), "invalid_config", "--expected-generation"),
    (("activate", "--version", GOOD, "--expected-generation", "-1"), "invalid_config", "--expected-generation"),
    (("activate", "--version", GOOD, "--expected-generation", "one"), "invalid_config", "--expected-generation"),
    (("rollback", "--version", "latest", "--expected-generation", "1"), "invalid_config", "--version"),
    (("rollback", "--version", GOOD, "--expected-generation", "1.5"), "invalid_config", "--expected-generation"),
    (("rename", "--cluster-id", "billing.v1"), "invalid_config", "--display-name"),
    (("rename", "--cluster-id", "billing.v1", "--display-name", "   "), "invalid_config", "--display-name"),
    (("rename", "--cluster-id", "billing.v1", "--display-name", "x" * 81), "invalid_config", "--display-name"),
    (("rename", "--cluster-id", "billing.v1", "--display-name", "bell\x07"), "invalid_config", "control"),
    (("rename", "--cluster-id", "billing.v1", "--display-name", "ask bob@example.com"), "invalid_config",
     "personal data"),
    (("rename", "--cluster-id", "", "--display-name", "Billing"), "invalid_config", "--cluster-id"),
    (("inspect", "--version", "cv-1"), "invalid_config", "--version"),
    (("inspect", "--event-limit", "x"), "invalid_config", "--event-limit"),
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    return build(tmp_path_factory.mktemp("errors") / "data", tenants=("acme",), days=1)


@pytest.mark.parametrize(("args", "code", "word"), MALFORMED, ids=[" ".join(a)[:60] or "none" for a, _, _ in MALFORMED])
def test_malformed_flags_are_clean_errors_and_write_nothing(lake, args, code, word):
    exit_code, out = run(lake, *args)
    assert exit_code == 2 and out["code"] == code and word in out["message"], out
    assert set(out) >= {"code", "message"} and out["code"] in CLUSTER_ERROR_CODES
    assert not (lake / "state.duckdb").exists()


@pytest.mark.parametrize(("flags", "word"), [
    (("--actor", "bob smith"), "--actor"),
    (("--actor", ""), "--actor"),
    (("--lock-timeout", "0"), "--lock-timeout"),
    (("--lock-timeout", "soon"), "--lock-timeout"),
    (("--data-dir", "/no/such/dir"), "--data-dir"),
])
def test_malformed_global_flags(lake, capsys, flags, word):
    base = {"--data-dir": str(lake), "--tenant": "acme", "--actor": "alice", "--lock-timeout": "5"}
    base.update(dict(zip(flags[::2], flags[1::2], strict=True)))
    code = main([token for pair in base.items() for token in pair] + ["normalize", "--limit", "10"])
    out = capsys.readouterr()
    document = json.loads(out.err)
    assert code == 2 and document == {"error": {"code": "invalid_config", "message": document["error"]["message"]}}
    assert word in document["error"]["message"] and not out.out
    assert not (lake / "state.duckdb").exists()


def test_data_dir_that_is_a_file_and_missing_globals(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    code, out = run(tmp_path / "file", "inspect")
    assert code == 2 and out["code"] == "invalid_config" and "--data-dir" in out["message"]
    proc = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.cluster", "inspect"], capture_output=True,
                          text=True, env=env(), timeout=60)
    document = json.loads(proc.stderr)["error"]
    assert proc.returncode == 2 and document["code"] == "invalid_config" and "--data-dir" in document["message"]
    assert proc.stdout == ""


def test_help_documents_every_command_and_the_error_codes():
    proc = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.cluster", "--help"], capture_output=True,
                          text=True, env=env(), timeout=60)
    assert proc.returncode == 0
    for word in ("normalize", "fit", "assign", "validate", "activate", "rollback", "rename", "inspect",
                 *CLUSTER_ERROR_CODES):
        assert word in proc.stdout, word


def test_an_unreadable_lake_segment_is_storage_error_not_a_traceback(tmp_path):
    lake = build(tmp_path / "data", tenants=("acme",), days=1)
    partition = next((lake / "spans" / "tenant=acme").glob("date=*"))
    (partition / "0-corrupt.parquet").write_bytes(b"not parquet at all")
    for args in (("normalize", "--limit", "10"),
                 ("fit", "--strategy", "explicit", "--cutoff", "2026-11-20T00:00:00Z")):
        code, out = run(lake, *args)
        assert code == 2 and out["code"] == "storage_error" and "tenant acme" in out["message"], out
    code, out = run(lake, "inspect")
    assert code == 0 and out["result"]["versions"]["total"] == 0


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "verdict_daemon.cli.cluster", "--data-dir", str(tmp_path),
                             "--tenant", "acme", "--actor", "alice", "inspect"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    assert proc.stdout is not None  # piped
    proc.stdout.close()  # like `verdict-cluster … | head -0`
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 141 and stderr == b""  # one policy for every command (issue 18): exit 141, quietly
