"""Every console script, for arbitrary argv, exits with a documented code and never prints a traceback; a
failure ends with the closed error (issue 16; docs/daemon.md "Error codes").

In-process through each script's main() (fast), in a fresh working directory per example, with provider keys
removed from the environment (no network). Only `verdict-collector`'s `serve` is replaced, by a stub that
returns 0 at once: with a valid argv it would start a server that runs until SIGTERM; its argument and
configuration handling, the subject here, runs for real (so does `--maintenance-once`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verdict.cli_errors import ERROR_CODES

TEXT_ERROR = re.compile(r"^[\w -]+: error \[([a-z_]+)\]: ")
VALUES = ["", ".", "acme", "bad tenant!", "__verdict_local__", "-1", "0", "1", "1.5", "1e309", "inf", "nan", "x" * 300,
          "9999-12-31T23:59:59+14:00", "2026-11-19T00:00:00Z", "cv-0123456789abcdef", "SELECT 1", "SELECT uuid()",
          "SELECT 'nan'::DOUBLE", "openai/gpt-4o-mini", "tests.trust.scripted:GOOD_MODEL", "verdict.toml",
          "\x00", "é", "-", "--", "=", "json", "csv", "table", "active", "off", "explicit"]


def _tokens(flags: list[str]) -> st.SearchStrategy[list[str]]:
    token = st.one_of(st.sampled_from(flags), st.sampled_from(VALUES), st.text(max_size=12))
    return st.lists(token, max_size=8)


def _serve_stub(config) -> int:
    return 0


def _main(script: str) -> Callable[[list[str]], int]:
    if script == "verdict":
        from verdict_daemon.cli import main
    elif script == "verdict-collector":
        from collector.cli import main
    elif script == "verdict-daemon":
        from verdict_daemon.daemon_cli import main
    elif script == "verdict-pipeline":
        from verdict_daemon.pipeline_cli import main
    else:
        from verdict_daemon.cluster_cli import main
    return main


# script -> (its documented exit codes, the flags and words its argv is drawn from)
SCRIPTS: dict[str, tuple[set[int], list[str]]] = {
    "verdict": ({0, 1, 2, 3, 4, 5, 6}, [
        "gate", "probes", "report", "review", "sql", "list", "show", "label", "agreement", "export-sentinel",
        "correlate", "run", "--data-dir", "--tenant", "--format", "--print-views", "--json", "--cases",
        "--judge-model", "--min-pass-rate", "--target-model", "--suite", "--out", "--limit", "--offset",
        "--lock-timeout", "--evaluator", "--label", "--dimension", "--reviewer", "--signals-file", "--seed",
        "--concurrency", "--use-lower-bound", "--min-ac1", "--resamples"]),
    "verdict-collector": ({0, 2}, [
        "--data-dir", "--http-host", "--http-port", "--grpc-host", "--grpc-port", "--tokens", "--max-body-bytes",
        "--redact", "--trust-sdk-redaction", "--batch-delay-ms", "--read-timeout-s", "--decode-workers",
        "--retention-days", "--compact-interval-s", "--log-level", "--maintenance-once", "--allow-claimed-tenant"]),
    "verdict-daemon": ({0, 2}, ["--config", "--log-level", "DEBUG", "INFO"]),
    "verdict-pipeline": ({0, 1, 2}, [
        "--config", "--data-dir", "--tenant-id", "--as-of", "--registry-mode", "--judge-model",
        "--judge-sentinel-file", "--fail-on-signal", "--json"]),
    "verdict-cluster": ({0, 2}, [
        "--data-dir", "--tenant", "--actor", "--lock-timeout", "normalize", "fit", "assign", "validate", "activate",
        "rollback", "rename", "inspect", "--limit", "--strategy", "--cutoff", "--target-workload", "--version",
        "--through-cutoff", "--expected-generation", "--cluster-id", "--display-name", "--cluster-limit"]),
}


@pytest.fixture
def quiet_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("VERDICT_", "OPENAI_", "ANTHROPIC_", "OTEL_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from collector import cli as collector_cli

    monkeypatch.setattr(collector_cli, "serve", _serve_stub)  # see the module docstring


def run_in_process(script: str, argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `script argv` run by its main() in a fresh directory."""
    main = _main(script)
    previous = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        out_path, err_path = Path(tmp) / ".stdout", Path(tmp) / ".stderr"
        work = Path(tmp) / "work"
        work.mkdir()
        os.chdir(work)
        try:
            with out_path.open("w") as out, err_path.open("w") as err, \
                    contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(list(argv))
                except SystemExit as exit_:  # --help
                    code = exit_.code if isinstance(exit_.code, int) else 2
        finally:
            os.chdir(previous)
        return code, out_path.read_text(errors="replace"), err_path.read_text(errors="replace")


def check(script: str, argv: list[str], code: int, stdout: str, stderr: str) -> None:
    codes, _ = SCRIPTS[script]
    assert code in codes, (script, argv, code, stderr)
    assert "Traceback" not in stdout + stderr, (script, argv, stderr)
    if code in (0, 1) or (script == "verdict" and code == 2 and stdout.startswith("usage: ") and not stderr):
        return  # success, a below-threshold result, or bare `verdict` printing its help
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    text = TEXT_ERROR.match(last)
    error_code = text.group(1) if text else json.loads(last)["error"]["code"]
    assert error_code in ERROR_CODES, (script, argv, last)
    if not text:
        assert stdout == "", (script, argv, stdout)  # a JSON error: nothing half-written on stdout


def _property(script: str):
    _, flags = SCRIPTS[script]

    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(argv=_tokens(flags))
    def test(quiet_env, argv):
        check(script, argv, *run_in_process(script, argv))

    test.__name__ = f"test_{script.replace('-', '_')}_any_argv_exits_documented_without_traceback"
    return test


test_verdict = _property("verdict")
test_verdict_collector = _property("verdict-collector")
test_verdict_daemon = _property("verdict-daemon")
test_verdict_pipeline = _property("verdict-pipeline")
test_verdict_cluster = _property("verdict-cluster")


@pytest.mark.parametrize(("script", "argv"), [
    ("verdict", ["sql", "--data-dir", "x" * 300, "SELECT 1"]),
    ("verdict", ["sql", "--format", "json", "SELECT 'nan'::DOUBLE, uuid()"]),
    ("verdict-cluster", ["--bogus"]),
    ("verdict-pipeline", ["--json", "--data-dir", ".", "--judge-model", "openai/x", "--tenant-id", "acme",
                          "--as-of", "9999-12-31T23:59:59+14:00"]),
    ("verdict-collector", ["--bogus"]),
    ("verdict-daemon", ["--config", "."]),
    ("verdict-daemon", ["--config", "DEBUG", "\r", "DEBUG"]),  # a line break echoed into the error line
    ("verdict-pipeline", ["\x1e0"]),  # str.splitlines() breaks at \x1e too
])
def test_known_past_failures(quiet_env, script, argv):
    """Inputs that broke a script before (a traceback, an error on stdout, an undocumented code)."""
    check(script, argv, *run_in_process(script, argv))
