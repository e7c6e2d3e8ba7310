"""Usage errors of the installed console scripts, run as real processes: a closed `invalid_config` error
(exit 2, nothing on stdout, never argparse's usage text or a traceback), while `--help` stays plain text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.cli import env
from verdict_daemon.errors import ERROR_CODES

BIN = Path(sys.executable).parent  # where pip installed the [project.scripts] entry points
GATE = ["gate", "--cases", "cases.jsonl", "--judge-model", "openai/m", "--min-pass-rate"]


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / script), *args], capture_output=True, text=True, env=env(), timeout=60)


@pytest.mark.parametrize(("argv", "message"), [
    (["--bogus"], "verdict: unrecognized arguments: --bogus"),
    (["nosuchcommand"], "verdict: argument COMMAND: invalid choice: 'nosuchcommand'"),
    ([*GATE, "0.9", "--bogus"], "verdict gate: unrecognized arguments: --bogus"),
    ([*GATE, "high"], "verdict gate: argument --min-pass-rate: invalid float value: 'high'"),
    (["gate"], "verdict gate: the following arguments are required: --cases, --judge-model, --min-pass-rate"),
    (["report", "--bogus"], "verdict report: unrecognized arguments: --bogus"),
    (["review", "--bogus"], "verdict review: unrecognized arguments: --bogus"),
    (["review", "list", "--bogus"], "verdict review list: unrecognized arguments: --bogus"),
    (["sql", "--bogus", "SELECT 1"], "verdict sql: unrecognized arguments: --bogus"),
    (["sql", "--format", "xml"], "verdict sql: argument --format: invalid choice: 'xml'"),
    (["probes", "list", "--bogus"], "verdict probes: unrecognized arguments: --bogus"),
])
def test_every_verdict_usage_error_is_one_closed_json_error_on_stderr(argv, message):
    done = run("verdict", *argv)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.endswith("\n") and done.stderr.count("\n") == 1, done.stderr
    error = json.loads(done.stderr)
    assert set(error) == {"error"} and set(error["error"]) == {"code", "message"}
    assert error["error"]["code"] == "invalid_config" and "invalid_config" in ERROR_CODES
    assert error["error"]["message"].startswith(message), error


@pytest.mark.parametrize(("argv", "usage"), [(["--help"], "usage: verdict [-h] COMMAND"),
                                             (["sql", "--help"], "usage: verdict sql "),
                                             (["gate", "-h"], "usage: verdict gate ")])
def test_help_stays_plain_text_with_exit_0(argv, usage):
    done = run("verdict", *argv)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(usage) and "\n\n" in done.stdout


@pytest.mark.parametrize(("argv", "message"), [
    (["--config", "verdict.toml", "--bogus"], "unrecognized arguments: --bogus"),
    (["--config", "verdict.toml", "--log-level", "LOUD"], "argument --log-level: invalid choice: 'LOUD'"),
    ([], "the following arguments are required: --config"),
])
def test_daemon_usage_errors_are_its_closed_start_failure_line(argv, message):
    done = run("verdict-daemon", *argv)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"verdict-daemon: error [invalid_config]: {message}") and done.stderr.count("\n") == 1


def test_pipeline_usage_errors_follow_its_error_contract():
    """verdict-pipeline already reports usage errors as closed errors: a line on stderr, JSON on stdout with --json."""
    text = run("verdict-pipeline", "--bogus")
    assert (text.returncode, text.stdout) == (2, "")
    assert text.stderr == "verdict-pipeline: error [invalid_config]: unrecognized arguments: --bogus\n"
    as_json = run("verdict-pipeline", "--json", "--bogus")
    assert (as_json.returncode, as_json.stderr) == (2, "")
    assert json.loads(as_json.stdout) == {"error": {"code": "invalid_config", "message": "unrecognized arguments: --bogus"}}
