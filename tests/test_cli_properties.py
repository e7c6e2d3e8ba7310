"""Every subcommand of the `verdict` tree, and every deprecated console script, for arbitrary argv, exits
with a documented code and never prints a traceback; a failure ends with the one envelope on stderr, its code
from the closed set and its exit code the one the table gives (issues 16 and 18; docs/cli.md).

In-process through each script's main() (fast), in a fresh working directory per example, with provider keys
removed from the environment (no network). Only the collector's and the UI's `serve` are replaced, by a stub that
returns 0 at once: with a valid argv it would start a server that runs until SIGTERM; its argument and
configuration handling, the subject here, runs for real (so does `--maintenance-once`). `verdict daemon`
cannot start for real here (no config file exists in the fresh directory), and `verdict demo` is always given
an invalid `--days` first, so that it never runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verdict.cli_errors import ERROR_CODES, EXIT_CODES

VALUES = ["", ".", "acme", "bad tenant!", "__verdict_local__", "-1", "0", "1", "1.5", "1e309", "inf", "nan", "x" * 300,
          "9999-12-31T23:59:59+14:00", "2026-11-19T00:00:00Z", "cv-0123456789abcdef", "SELECT 1", "SELECT uuid()",
          "SELECT 'nan'::DOUBLE", "openai/gpt-4o-mini", "tests.trust.scripted:GOOD_MODEL", "verdict.toml",
          "\x00", "é", "-", "--", "=", "json", "csv", "table", "active", "off", "explicit"]


def _tokens(flags: list[str]) -> st.SearchStrategy[list[str]]:
    token = st.one_of(st.sampled_from(flags), st.sampled_from(VALUES), st.text(max_size=12))
    return st.lists(token, max_size=8)


def _serve_stub(config) -> int:
    return 0


def _ui_serve_stub(settings, sock) -> int:
    sock.close()
    return 0


COLLECTOR_FLAGS = [
    "--data-dir", "--http-host", "--http-port", "--grpc-host", "--grpc-port", "--tokens", "--max-body-bytes",
    "--redact", "--trust-sdk-redaction", "--batch-delay-ms", "--read-timeout-s", "--decode-workers",
    "--retention-days", "--compact-interval-s", "--log-level", "--maintenance-once", "--allow-claimed-tenant"]
DAEMON_FLAGS = ["--config", "--log-level", "DEBUG", "INFO"]
PIPELINE_FLAGS = ["--config", "--data-dir", "--tenant", "--tenant-id", "--as-of", "--registry-mode", "--judge-model",
                  "--judge-sentinel-file", "--fail-on-signal", "--json"]
CLUSTER_FLAGS = [
    "--data-dir", "--tenant", "--actor", "--lock-timeout", "normalize", "fit", "assign", "validate", "activate",
    "rollback", "rename", "inspect", "--limit", "--strategy", "--cutoff", "--target-workload", "--version",
    "--through-cutoff", "--expected-generation", "--cluster-id", "--display-name", "--cluster-limit"]

# script -> (its documented exit codes, the words its argv is drawn from, the words every argv starts with)
SCRIPTS: dict[str, tuple[set[int], list[str], list[str]]] = {
    "verdict": ({0, 1, 2, 3, 4, 5, 6}, ["collector", "daemon", "pipeline", "cluster", "gate", "probes", "report",
                                        "review", "sql", "--data-dir", "--tenant", "--json", "--help"], []),
    "verdict collector": ({0, 2}, COLLECTOR_FLAGS, ["collector"]),
    "verdict daemon": ({0, 2}, DAEMON_FLAGS, ["daemon"]),
    "verdict pipeline": ({0, 1, 2}, PIPELINE_FLAGS, ["pipeline"]),
    "verdict cluster": ({0, 2}, CLUSTER_FLAGS, ["cluster"]),
    "verdict sql": ({0, 2, 3, 4, 5, 6}, ["--data-dir", "--tenant", "--format", "--json", "--print-views"], ["sql"]),
    "verdict report": ({0, 2}, ["--data-dir", "--tenant", "--out", "--probes", "--lock-timeout", "--json"],
                       ["report"]),
    "verdict review": ({0, 1, 2}, [
        "list", "show", "label", "agreement", "export-sentinel", "correlate", "--data-dir", "--tenant", "--status",
        "--limit", "--offset", "--evaluator", "--label", "--critique", "--dimension", "--reviewer",
        "--signals-file", "--seed", "--min-ac1", "--resamples", "--fail-on", "--out"], ["review"]),
    "verdict probes": ({0, 1, 2}, [
        "run", "list", "show", "--suite", "--target-model", "--judge-model", "--min-pass-rate", "--out",
        "--data-dir", "--tenant", "--concurrency", "--json", "default"], ["probes"]),
    "verdict gate": ({0, 1, 2}, ["--cases", "--judge-model", "--min-pass-rate", "--use-lower-bound", "--rubric",
                                 "--out", "--json"], ["gate"]),
    "verdict demo": ({2}, ["--data-dir", "--per-day", "--seed", "--corrupt-intent", "--judge-model", "--json"],
                     ["demo", "--days", "0"]),
    "verdict ui": ({0, 2}, ["--data-dir", "--tenant", "--host", "--port", "--tokens", "--lock-timeout"], ["ui"]),
    # the deprecated aliases (one release): the same commands under their old names
    "verdict-collector": ({0, 2}, COLLECTOR_FLAGS, []),
    "verdict-daemon": ({0, 2}, DAEMON_FLAGS, []),
    "verdict-pipeline": ({0, 1, 2}, PIPELINE_FLAGS, []),
    "verdict-cluster": ({0, 2}, CLUSTER_FLAGS, []),
}


def _main(script: str) -> Callable[[list[str]], int]:
    if script == "verdict-collector":
        from collector.cli import main
    elif script == "verdict-daemon":
        from verdict_daemon.cli.daemon import main
    elif script == "verdict-pipeline":
        from verdict_daemon.cli.pipeline import main
    elif script == "verdict-cluster":
        from verdict_daemon.cli.cluster import main
    else:
        from verdict_daemon.cli import main
    return main


@pytest.fixture
def quiet_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("VERDICT_", "OPENAI_", "ANTHROPIC_", "OTEL_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from collector import cli as collector_cli

    monkeypatch.setattr(collector_cli, "serve", _serve_stub)  # see the module docstring
    from verdict_ui import cli as ui_cli

    monkeypatch.setattr(ui_cli, "serve", _ui_serve_stub)  # likewise: `verdict ui` would serve until SIGTERM


def run_in_process(script: str, argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `script argv` run by its main() in a fresh directory."""
    main = _main(script)
    argv = [*SCRIPTS[script][2], *argv]
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
    codes = SCRIPTS[script][0]
    assert code in codes, (script, argv, code, stderr)
    assert "Traceback" not in stdout + stderr, (script, argv, stderr)
    if code in (0, 1) or (script == "verdict" and code == 2 and stdout.startswith("usage: ") and not stderr):
        return  # success, a below-threshold result, or bare `verdict` printing its help
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    envelope = json.loads(last)
    assert set(envelope) == {"error"} and {"code", "message"} <= set(envelope["error"]), (script, argv, last)
    assert envelope["error"]["code"] in ERROR_CODES, (script, argv, last)
    assert EXIT_CODES[envelope["error"]["code"]] == code, (script, argv, code, last)
    assert stdout == "", (script, argv, stdout)  # nothing half-written on stdout


def _property(script: str):
    _, flags, _ = SCRIPTS[script]

    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(argv=_tokens(flags))
    def test(quiet_env, argv):
        check(script, argv, *run_in_process(script, argv))

    name = script.replace("-", "_").replace(" ", "_")
    test.__name__ = f"test_{name}_any_argv_exits_documented_without_traceback"
    return test


for _script in SCRIPTS:
    _test = _property(_script)
    globals()[_test.__name__] = _test


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
    ("verdict sql", ["--json", "--tenant", "Not A Tenant", "SELECT 1"]),  # exit 3, not 2
    ("verdict cluster", ["--tenant", "acme", "--actor", "alice", "inspect"]),  # no --data-dir: not argparse's
])
def test_known_past_failures(quiet_env, script, argv):
    """Inputs that broke a script before (a traceback, an error on stdout, an undocumented code)."""
    check(script, argv, *run_in_process(script, argv))
