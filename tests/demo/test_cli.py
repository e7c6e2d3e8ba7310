"""The demo's command line without running the whole demo: options, refusals, the data dir, the
generated daemon config."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from verdict.pidlock import PidFileLock
from verdict_daemon.cli import main as verdict
from verdict_daemon.config import load_config
from verdict_daemon.errors import DaemonError
from verdict_demo.orchestrator import MARKER, daemon_config, prepare_data_dir
from verdict_demo.scenario import Scenario


def test_help_documents_every_option():
    out = subprocess.run([sys.executable, "-m", "verdict_demo", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    for option in ("--data-dir", "--days", "--per-day", "--seed", "--corrupt-intent", "--judge-model", "--json",
                   "VERDICT_JUDGE_MODEL", "Exit codes", "130"):
        assert option in out.stdout


def demo(argv: list[str]) -> int:
    return verdict(["demo", *argv])


def error_of(stderr: str) -> dict:
    """The one error envelope (docs/cli.md), the last line of stderr."""
    envelope = json.loads(stderr.strip().splitlines()[-1])
    assert set(envelope) == {"error"}, envelope
    return envelope["error"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--days", "2"], "argument --days: must be at least 3, got 2"),
    (["--per-day", "many"], "argument --per-day: 'many' is not an integer"),
    (["--corrupt-intent", "billing"], "argument --corrupt-intent: invalid choice: 'billing'"),
    (["--judge-model", "llama3"], "unknown model 'llama3'"),
])
def test_bad_options_are_invalid_config_without_a_traceback(argv, message, capsys, tmp_path):
    assert demo([*argv, "--data-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert error_of(err)["code"] == "invalid_config" and message in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()  # refused before anything was created


def test_a_real_llm_judge_without_its_key_is_refused_before_anything_starts(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("VERDICT_JUDGE_MODEL", "openai/gpt-4o-mini")
    assert demo(["--data-dir", str(tmp_path / "d"), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # issue 18: the error is the envelope on stderr, with or without --json
    error = error_of(captured.err)
    assert error["code"] == "invalid_config" and "OPENAI_API_KEY" in error["message"]
    assert error["message"].startswith("judge model 'openai/gpt-4o-mini' (--judge-model or VERDICT_JUDGE_MODEL)")
    assert not (tmp_path / "d").exists()


def test_a_foreign_data_dir_is_never_deleted(tmp_path, capsys):
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    assert demo(["--data-dir", str(precious)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and error_of(err)["code"] == "invalid_config"  # refused before the banner
    assert error_of(err)["message"].startswith("--data-dir: ")
    assert "is not empty and was not created by the demo" in err
    assert (precious / "notes.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("x")
    with pytest.raises(DaemonError, match="is not a directory"):
        prepare_data_dir(tmp_path / "file")


def test_a_data_dir_that_cannot_be_created_is_a_storage_error(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert demo(["--data-dir", str(tmp_path / "file" / "demo")]) == 2
    assert error_of(capsys.readouterr().err) == {
        "code": "storage_error", "message": f"--data-dir: cannot create {tmp_path / 'file' / 'demo'}: Not a directory"}


def test_a_demo_dir_in_use_by_a_running_component_is_refused_untouched(tmp_path, capsys):
    data = prepare_data_dir(tmp_path / "demo")
    (data / "state.duckdb").write_text("a running demo's state")
    lock = PidFileLock(data / "daemon.lock")  # what a running verdict-daemon holds (an flock)
    lock.acquire()
    try:
        assert demo(["--data-dir", str(data)]) == 2
        err = capsys.readouterr().err
        assert error_of(err)["code"] == "already_running"
        assert f"in use by a running verdict-daemon (pid {os.getpid()})" in err
        assert (data / "state.duckdb").read_text() == "a running demo's state"
    finally:
        lock.release()
    assert prepare_data_dir(data) == data and not (data / "state.duckdb").exists()  # released: fresh again


def test_a_previous_demo_dir_starts_fresh(tmp_path):
    data = prepare_data_dir(tmp_path / "demo")
    (data / "state.duckdb").write_text("old state")
    (data / "logs" / "daemon.log").write_text("old log")
    again = prepare_data_dir(tmp_path / "demo")
    assert again == data and sorted(p.name for p in data.iterdir()) == sorted([MARKER, "logs"])
    assert list((data / "logs").iterdir()) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (prepare_data_dir(empty) / MARKER).is_file()


def test_the_generated_daemon_config_is_valid_and_compressed(tmp_path):
    scenario = Scenario(days=5, per_day=20, seed=4)
    path = tmp_path / "verdict.toml"
    path.write_text(daemon_config(tmp_path, scenario, "offline/heuristic-judge"))
    config = load_config(path)
    assert config.data_dir == tmp_path and [t.id for t in config.tenants] == ["__verdict_local__"]
    intervals = [getattr(config.schedules, job).interval_seconds for job in ("sample", "judge", "assign", "drift")]
    assert all(0 < s <= 3 for s in intervals)
    assert config.drift.baseline_days == 3 and config.drift.gap_hours == 24 and config.drift.min_usable == 15
    assert config.sampling.seed == 4 and config.sampling.per_cluster_per_window >= scenario.per_day
    assert config.evaluators[0].model == "offline/heuristic-judge"


def test_the_summary_ends_with_the_verdict_ui_command_for_its_data_dir(tmp_path):
    from verdict_demo.cli import render_text
    from verdict_demo.summary import DemoSummary, Injected

    summary = DemoSummary(str(tmp_path), "__verdict_local__", "offline", True, 3, 10, 0,
                          Injected("coding.v1", "truncation", 3, 0.5, 4), 30, 30, 30, 0, 1.0, None, None, None, 0, 0,
                          None, (), 0, None, "no report", 1.0)
    [line] = [x for x in render_text(summary).splitlines() if x.strip().startswith("browse")]
    assert line.endswith(f"ui --data-dir {tmp_path} --tenant __verdict_local__")
