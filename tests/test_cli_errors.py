"""One error shape for every console script (issue 16, item 11), run as the installed processes: a failure is
nothing on stdout and one line `{"error": {"code", "message"}}` on stderr with a code from the one closed set
(verdict.cli_errors.ERROR_CODES) and exit 2 (issue 18: `verdict-daemon`, `verdict-pipeline`, `verdict report` and
`verdict sql` once printed a text line by default)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.cli import env
from verdict.cli_errors import ERROR_CODES

BIN = Path(sys.executable).parent


def _envelope(argv: list[str], cwd: Path) -> dict:
    done = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=env(), timeout=60,
                          cwd=cwd)
    assert (done.returncode, done.stdout) == (2, ""), (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    envelope = json.loads(done.stderr)
    assert set(envelope) == {"error"} and {"code", "message"} <= set(envelope["error"]), envelope
    assert envelope["error"]["code"] in ERROR_CODES, envelope
    return envelope["error"]


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["verdict-collector", "--bogus"], "invalid_config", "verdict-collector: unrecognized arguments: --bogus"),
    (["verdict-collector", "--http-port", "http"], "invalid_config",
     "verdict-collector: argument --http-port: invalid int value: 'http'"),
    (["verdict-collector", "--read-timeout-s", "0"], "invalid_config", "--read-timeout-s must be positive"),
    (["verdict-collector", "--compact-interval-s", "nan"], "invalid_config",
     "--compact-interval-s must be a finite number"),
    (["verdict-cluster", "--bogus"], "invalid_config", "verdict-cluster: "),
    (["verdict-cluster", "--data-dir", ".", "--tenant", "acme", "--actor", "alice", "inspect", "--version", "v1"],
     "invalid_config", "--version"),
    (["verdict-pipeline", "--json", "--bogus"], "invalid_config", "verdict-pipeline: unrecognized arguments"),
    (["verdict-pipeline", "--json", "--data-dir", ".", "--judge-model", "openai/x"], "tenant_required",
     "--tenant"),
    (["verdict-pipeline", "--data-dir", ".", "--judge-model", "openai/x"], "tenant_required", "--tenant"),
    (["verdict-daemon", "--config", "missing.toml"], "invalid_config", "missing.toml"),
    (["verdict", "daemon", "--config", "missing.toml"], "invalid_config", "missing.toml"),
    (["verdict", "cluster", "--tenant", "acme", "--actor", "alice", "inspect"], "invalid_config",
     "verdict cluster: the following arguments are required: --data-dir"),
    (["verdict", "sql", "--format", "xml"], "invalid_config", "verdict sql: argument --format"),
])
def test_every_console_script_prints_the_one_envelope_on_stderr(tmp_path, argv, code, message):
    error = _envelope(argv, tmp_path)
    assert error["code"] == code and message in error["message"], error


def test_collector_start_failures_are_closed_codes(tmp_path):
    """A second collector on the same data dir: already_running, through the same envelope."""
    from collector import lake

    data = tmp_path / "data"
    data.mkdir()
    held = lake.LakeLock(data)
    held.acquire()
    try:
        error = _envelope(["verdict-collector", "--data-dir", str(data), "--http-port", "0", "--grpc-port", "-1"],
                          tmp_path)
    finally:
        held.release()
    assert error["code"] == "already_running", error


def test_the_registry_codes_are_in_the_one_closed_set():
    from collector.sql import SQL_ERROR_CODES
    from verdict_daemon.clustering.errors import CLUSTER_ERROR_CODES

    assert set(CLUSTER_ERROR_CODES) <= set(ERROR_CODES) and set(SQL_ERROR_CODES) <= set(ERROR_CODES)


BLOCKED_RUN = """
import sys
from verdict.cli_errors import EXTRA_OF_MODULE
for name, extra in EXTRA_OF_MODULE.items():
    if extra == sys.argv[1]:
        sys.modules[name] = None  # as if not installed: importing it raises ModuleNotFoundError
from verdict_daemon.cli import run
run(sys.argv[2:])
"""


@pytest.mark.parametrize(("extra", "argv"), [
    ("server", ["sql", "SELECT 1", "--tenant", "acme", "--data-dir", "."]),
    ("server", ["collector", "--data-dir", "lake", "--http-port", "0", "--grpc-port", "-1"]),
    ("server", ["ui", "--data-dir", ".", "--tenant", "acme"]),
    ("server", ["report", "--data-dir", ".", "--tenant", "acme", "--out", "r.html"]),
])
def test_a_missing_extra_names_the_pip_line(tmp_path, extra, argv):
    """An app-only install (`verdict-monitor[openai]`) has the `verdict` command but not the server
    packages: each command says missing_extra with the install line, not internal_error."""
    done = subprocess.run([sys.executable, "-c", BLOCKED_RUN, extra, *argv], capture_output=True, text=True,
                          env=env(), timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "missing_extra", error
    assert f"pip install 'verdict-monitor[{extra}]'" in error["message"], error
