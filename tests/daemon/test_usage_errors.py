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


def run(script: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / script), *args], capture_output=True, text=True, env=env(), timeout=60, cwd=cwd)


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
    (["probes", "list", "--bogus"], "verdict probes list: unrecognized arguments: --bogus"),
    (["probes", "run", "--target-model", "openai/x", "--judge-model", "openai/y", "--min-pass-rate", "high"],
     "verdict probes run: argument --min-pass-rate: invalid float value: 'high'"),
    (["probes"], "verdict probes: the following arguments are required: ACTION"),
    (["report", "--lock-timeout", "soon"], "verdict report: argument --lock-timeout: invalid float value: 'soon'"),
    (["review", "show", "NOT-HEX"], "verdict review show: argument item: 'NOT-HEX' is not a valid item id (hex)"),
])
def test_every_verdict_usage_error_is_one_closed_json_error_on_stderr(argv, message):
    done = run("verdict", *argv)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.endswith("\n") and done.stderr.count("\n") == 1, done.stderr
    error = json.loads(done.stderr)
    assert set(error) == {"error"} and set(error["error"]) == {"code", "message"}
    assert error["error"]["code"] == "invalid_config" and "invalid_config" in ERROR_CODES
    assert error["error"]["message"].startswith(message), error


@pytest.mark.parametrize(("argv", "usage"), [(["--help"], "usage: verdict [-h] [--version] COMMAND"),
                                             (["sql", "--help"], "usage: verdict sql "),
                                             (["gate", "-h"], "usage: verdict gate ")])
def test_help_stays_plain_text_with_exit_0(argv, usage):
    done = run("verdict", *argv)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(usage) and "\n\n" in done.stdout


@pytest.mark.parametrize(("script", "argv", "message"), [
    ("verdict-daemon", ["--config", "verdict.toml", "--bogus"], "verdict-daemon: unrecognized arguments: --bogus"),
    ("verdict-daemon", ["--config", "verdict.toml", "--log-level", "LOUD"],
     "verdict-daemon: argument --log-level: invalid choice: 'LOUD'"),
    ("verdict-daemon", [], "verdict-daemon: the following arguments are required: --config"),
    ("verdict", ["daemon"], "verdict daemon: the following arguments are required: --config"),
    ("verdict-pipeline", ["--bogus"], "verdict-pipeline: unrecognized arguments: --bogus"),
    ("verdict-pipeline", ["--json", "--bogus"], "verdict-pipeline: unrecognized arguments: --bogus"),
    ("verdict", ["pipeline", "--bogus"], "verdict pipeline: unrecognized arguments: --bogus"),
])
def test_daemon_and_pipeline_usage_errors_are_the_one_envelope_without_any_flag(script, argv, message):
    """Once a text line by default (issue 18): now the envelope, whatever the flags, under both names."""
    done = run(script, *argv)
    assert (done.returncode, done.stdout) == (2, "")
    error = json.loads(done.stderr)
    assert set(error) == {"error"} and set(error["error"]) == {"code", "message"}
    assert error["error"]["code"] == "invalid_config" and error["error"]["message"].startswith(message), error


# Run-time errors (the command line parsed; the input is wrong): every subcommand, the same JSON object on
# stderr, nothing on stdout, its documented exit code. Each fails before any model call or output.
SCRIPTED = "tests.trust.scripted:GOOD_MODEL"  # a verdict Model (never called: the input is rejected first)
BAD_SUITE = "name: broken\nversion: 1\nprobes: []\n"


@pytest.mark.parametrize(("argv", "exit_code", "code", "message"), [
    ([*GATE, "1.5"], 2, "invalid_config", "--min-pass-rate must be in [0, 1], got 1.5"),
    (["gate", "--cases", "nope.jsonl", "--judge-model", SCRIPTED, "--min-pass-rate", "0.9"], 2, "invalid_cases",
     "nope.jsonl"),
    (["probes", "show", "bad-suite.yaml"], 2, "invalid_suite", "bad-suite.yaml"),
    (["probes", "run", "--target-model", SCRIPTED, "--judge-model", SCRIPTED, "--min-pass-rate", "1.5"], 2,
     "invalid_config", "--min-pass-rate must be in [0, 1], got 1.5"),
    (["report", "--data-dir", "missing", "--tenant", "acme", "--json"], 2, "invalid_config", "missing"),
    (["review", "list", "--data-dir", "missing", "--tenant", "acme"], 2, "invalid_config",
     "--data-dir: missing is not a directory"),
    (["review", "list", "--data-dir", "."], 2, "tenant_required", "give --tenant"),
    (["sql", "--format", "json", "--data-dir", "missing", "SELECT 1"], 4, "no_data_dir", "missing"),
    (["sql", "--format", "json", "--tenant", "Not A Tenant", "SELECT 1"], 3, "invalid_tenant", "Not A Tenant"),
])
def test_every_verdict_run_time_error_is_the_same_closed_json_error_on_stderr(tmp_path, argv, exit_code, code,
                                                                             message):
    (tmp_path / "bad-suite.yaml").write_text(BAD_SUITE)
    done = run("verdict", *argv, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (exit_code, ""), done.stderr
    assert done.stderr.endswith("\n") and done.stderr.count("\n") == 1, done.stderr
    error = json.loads(done.stderr)
    assert set(error) == {"error"} and set(error["error"]) == {"code", "message"}
    assert error["error"]["code"] == code and code in ERROR_CODES
    assert message in error["error"]["message"], error


@pytest.mark.parametrize(("argv", "json_flag", "exit_code"), [
    (["report", "--data-dir", "missing", "--tenant", "acme"], ["--json"], 2),
    (["sql", "--data-dir", "missing", "SELECT 1"], ["--format", "json"], 4),
    (["sql", "--data-dir", "missing", "SELECT 1"], ["--json"], 4),
])
def test_an_output_format_flag_does_not_change_the_error(tmp_path, argv, json_flag, exit_code):
    """`verdict report` and `verdict sql` print text by default, but an error is the same envelope with or
    without their JSON flag (issue 18: text-mode errors are gone)."""
    text, as_json = run("verdict", *argv, cwd=tmp_path), run("verdict", *argv, *json_flag, cwd=tmp_path)
    assert (text.returncode, text.stdout, as_json.returncode, as_json.stdout) == (exit_code, "", exit_code, "")
    assert text.stderr == as_json.stderr and json.loads(text.stderr)["error"]["code"] in ERROR_CODES


def test_the_gate_and_sql_codes_are_in_the_one_closed_set():
    """`verdict gate` and `verdict sql` name the codes they raise; both must stay inside the one closed set,
    and sql's keep their exits 3-6."""
    from collector.sql import SQL_ERROR_CODES
    from verdict.cli_errors import EXIT_CODES
    from verdict_daemon.cli.gate import ERROR_CODES as GATE_CODES

    assert set(GATE_CODES) <= set(ERROR_CODES) and set(SQL_ERROR_CODES) <= set(ERROR_CODES)
    assert [EXIT_CODES[code] for code in SQL_ERROR_CODES] == [3, 4, 5, 6]
