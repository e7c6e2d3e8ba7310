"""Settings that pass validation must not break the daemon later (issue 16, items 9 and 10): every number
has finite bounds checked at start, `--as-of` has a range, deep TOML is refused, an unset webhook token
variable stops the start."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from tests.daemon.cli import closed_error, env
from verdict_daemon.cli.pipeline import main as pipeline_main
from verdict_daemon.config import load_config
from verdict_daemon.errors import DaemonError

# (TOML section, key, a value that used to pass and then broke the daemon: overflow, endless wait, ...)
UNBOUNDED = [
    ("judging", "stop_grace_seconds", "inf"),
    ("judging", "stop_grace_seconds", "1e12"),
    ("drift", "baseline_days", "1e300"),
    ("drift", "current_window_hours", "inf"),
    ("drift", "current_window_hours", "1e-300"),  # a zero-length alert period
    ("drift", "gap_hours", "1e300"),
    ("sampling", "window_hours", "inf"),
    ("sampling", "window_hours", "1e-300"),
    ("sampling", "lookback_days", "inf"),
    ("alerts", "timeout_seconds", "1e300"),
    ("sentinel", "recheck_seconds", "inf"),
    ("judging.budget", "max_cost_usd", "inf"),
    ("retention", "days", "9223372036854775807"),
    ("retention", "drift_cells_days", "9223372036854775807"),
    ("retention", "drift_cells_days", "-1"),
]


def _config(tmp_path, text: str, top: str = ""):
    """A valid minimal verdict.toml plus `top` (top-level keys) and `text` (tables)."""
    (tmp_path / "data").mkdir(exist_ok=True)
    path = tmp_path / "verdict.toml"
    path.write_text(f'{top}data_dir = "data"\n[[tenants]]\nid = "acme"\n[[evaluators]]\nname = "quality"\n'
                    f'kind = "rubric"\nmodel = "tests.daemon.lakes:scripted_judge_model"\n{text}')
    return path


@pytest.mark.parametrize(("section", "key", "value"), UNBOUNDED, ids=[f"{s}.{k}={v}" for s, k, v in UNBOUNDED])
def test_every_number_has_finite_bounds_checked_at_start(tmp_path, section, key, value):
    with pytest.raises(DaemonError) as err:
        load_config(_config(tmp_path, f"[{section}]\n{key} = {value}\n"))
    assert err.value.code == "invalid_config" and err.value.message.startswith(f"{section}.{key}: "), err.value


@pytest.mark.parametrize(("text", "top", "key"), [
    ("[schedules]\nsample = { interval_seconds = inf }\n", "", "schedules.sample.interval_seconds"),
    ("[schedules]\ndrift = { interval_seconds = 1e300 }\n", "", "schedules.drift.interval_seconds"),
    ("", "state_lock_timeout_seconds = inf\n", "state_lock_timeout_seconds"),
])
def test_schedules_and_lock_timeout_are_bounded(tmp_path, text, top, key):
    with pytest.raises(DaemonError) as err:
        load_config(_config(tmp_path, text, top))
    assert err.value.code == "invalid_config" and err.value.message.startswith(f"{key}: "), err.value.message


def test_the_daemon_process_refuses_an_endless_grace_at_start(tmp_path):
    config = _config(tmp_path, "[judging]\nstop_grace_seconds = inf\n")
    proc = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.daemon", "--config", str(config)],
                          capture_output=True, text=True, env=env(), timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    error = closed_error(proc.stderr)
    assert error["code"] == "invalid_config" and error["message"].startswith("judging.stop_grace_seconds: "), error


def test_deeply_nested_toml_is_invalid_config_not_recursion_error(tmp_path):
    config = _config(tmp_path, "")
    config.write_text(config.read_text() + "deep = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(DaemonError) as err:
        load_config(config)
    assert err.value.code == "invalid_config" and "nested too deeply" in err.value.message


@pytest.mark.parametrize("as_of", ["9999-12-31T23:59:59+14:00", "0001-01-01T00:00:00-14:00", "9999-12-31T23:59:59",
                                   "1900-01-01T00:00:00Z"])
def test_as_of_outside_its_range_is_invalid_config(tmp_path, capsys, as_of):
    config = _config(tmp_path, "")
    code = pipeline_main(["--json", "--config", str(config), "--tenant", "acme", "--as-of", as_of])
    out = capsys.readouterr()
    assert (code, out.out) == (2, "")
    error = json.loads(out.err)["error"]
    assert error["code"] == "invalid_config" and error["message"].startswith("--as-of: "), error


def test_an_unset_webhook_token_variable_stops_the_start(tmp_path):
    config = _config(tmp_path, '[alerts]\nwebhook_url = "http://127.0.0.1:9/hook"\n'
                     'token_env = "VERDICT_TEST_UNSET_TOKEN"\n')
    proc = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.daemon", "--config", str(config)],
                          capture_output=True, text=True, env={k: v for k, v in env().items()
                                                              if k != "VERDICT_TEST_UNSET_TOKEN"}, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stderr) == {"error": {"code": "invalid_config", "message": "alerts.token_env: "
                                                 "environment variable VERDICT_TEST_UNSET_TOKEN is not set"}}


def test_a_failing_daemon_exits_even_with_threads_still_running(tmp_path):
    """The entry point's error path leaves like its normal path: threads still running (judge calls abandoned when a
    stop fails) must not keep the interpreter joining them at exit. Here a thread that never ends stands in
    for them, and the start fails."""
    config = _config(tmp_path, "[judging]\nstop_grace_seconds = -1\n")
    script = ("import sys, threading\n"
              "threading.Thread(target=threading.Event().wait).start()  # never ends, not a daemon thread\n"
              "from verdict_daemon.cli.daemon import run\n"
              "run(['--config', sys.argv[1]])\n")
    proc = subprocess.run([sys.executable, "-c", script, str(config)], capture_output=True, text=True, env=env(),
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert closed_error(proc.stderr)["message"].startswith("judging.stop_grace_seconds: "), proc.stderr


def test_main_in_process_returns_its_code_while_threads_run(tmp_path):
    """Only the process entry point (`run`) leaves through os._exit: `main` called in-process (a test
    runner, an embedding app) returns its code, whatever threads the host has running."""
    from verdict_daemon.cli.daemon import main

    config = _config(tmp_path, "[judging]\nstop_grace_seconds = -1\n")
    stop = threading.Event()
    host_thread = threading.Thread(target=stop.wait)
    host_thread.start()
    try:
        assert main(["--config", str(config)]) == 2
    finally:
        stop.set()
        host_thread.join()
