"""`verdict-pipeline` as a process: JSON summary, exit codes, closed error codes, idempotent reruns."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import duckdb

from tests.daemon.cli import closed_error, env, pipeline, write_config
from tests.daemon.conftest import NOW
from tests.daemon.lakes import synthetic_days, write_rows
from tests.fakes import Fail
from verdict.cli_errors import EXIT_CODES, closed
from verdict_daemon.errors import ERROR_CODES

AS_OF = NOW.isoformat()


def test_one_shot_finds_exactly_the_corrupted_cell_and_reruns_are_idempotent(lake, tmp_path):
    config = write_config(tmp_path / "verdict.toml", lake)
    code, summary, stderr = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF)
    assert code == 0, stderr
    assert summary["sampled"] == 4 * 9 * 40 and summary["judged"] == summary["sampled"] and summary["errors"] == 0
    assert summary["evaluators"][0]["coverage"]["rate"] == 1.0
    assert [(s["cluster"], s["dimension"], s["kind"]) for s in summary["signals"]] == \
        [("search.v1", "completeness", "regression")]
    run = summary["drift_runs"][0]
    assert run["tested"] == run["cells"] == 4 * 4  # 4 intents x 4 dimensions (groundedness skipped: no context)

    code, again, _ = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF, "--fail-on-signal")
    assert code == 1  # same signal, now failing the build
    assert again["sampled"] == again["judged"] == 0
    assert again["drift_runs"][0]["run_id"] == run["run_id"] and again["drift_runs"][0]["reused"]
    con = duckdb.connect(str(lake / "state.duckdb"), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT trace_id) FROM judgment_attempts").fetchone() == \
        (summary["judged"],) * 2
    assert con.execute("SELECT count(*) FROM drift_runs").fetchall()[0][0] == 1
    con.close()


def test_nothing_to_do_is_success(tmp_path):
    (tmp_path / "empty").mkdir()  # a data dir the collector has not written to yet
    config = write_config(tmp_path / "verdict.toml", tmp_path / "empty")
    code, summary, _ = pipeline("--config", str(config), "--tenant", "acme", "--fail-on-signal")
    assert code == 0 and summary["sampled"] == 0 and summary["signals"] == []


def test_a_judge_refused_on_every_first_call_stops_early_and_the_summary_says_why(tmp_path):
    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=("billing.v1",), per_day=4))
    config = write_config(tmp_path / "verdict.toml", data, "[judging]\nearly_stop_after = 3\nconcurrency = 1\n")
    config.write_text(config.read_text().replace("lakes:scripted_judge_model", "lakes:refusing_judge_model"))
    done = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.pipeline", "--json", "--config", str(config),
                           "--tenant", "acme", "--as-of", AS_OF], capture_output=True, text=True, env=env(), timeout=120)
    # None usable of 36 to judge: low coverage, exit 2 after the summary (issue 30)
    assert done.returncode == 2 and closed_error(done.stderr)["code"] == "low_coverage", done.stderr
    summary = json.loads(done.stdout)
    (evaluator,) = summary["evaluators"]
    assert (evaluator["pending"], evaluator["judged"], evaluator["errors"]) == (36, 0, 3)
    assert re.match(r"stopped early: the first 3 result\(s\) all failed with \w+/bad_request ", evaluator["early_stop"])
    assert summary["low_coverage"] == summary["warnings"] and "'quality': 0 usable judgment(s) of 36" in \
        summary["low_coverage"][0]
    text = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.pipeline", "--config", str(config),
                           "--tenant", "acme", "--as-of", AS_OF], capture_output=True, text=True, env=env(),
                          timeout=120).stdout
    assert re.search(r"stopped early: the first 3 result\(s\) all failed with \w+/bad_request ", text)


def _error(code: int, out: dict, expected: str) -> None:
    assert code == EXIT_CODES[closed(expected)] and out["error"]["code"] == expected and expected in ERROR_CODES


def test_errors_are_closed_codes_without_tracebacks(lake, tmp_path, fake_openai):
    config = write_config(tmp_path / "verdict.toml", lake)
    two = write_config(tmp_path / "two.toml", lake, '[[tenants]]\nid = "globex"\n')
    code, out, stderr = pipeline("--config", str(two))  # one [[tenants]] entry would be the default
    _error(code, out, "tenant_required")
    for bad_tenant in ("Not/A/Tenant", "bad tenant!"):
        code, out, _ = pipeline("--config", str(config), "--tenant", bad_tenant)
        _error(code, out, "invalid_tenant")
    for data_dir, reason in ((tmp_path / "typo", "does not exist"), (config, "is not a directory")):
        code, out, _ = pipeline("--config", str(config), "--data-dir", str(data_dir), "--tenant", "acme")
        _error(code, out, "invalid_config")
        assert out["error"]["message"].startswith("data_dir: ") and reason in out["error"]["message"]
    bad = write_config(tmp_path / "bad.toml", lake, "[drift]\nalpha = 2\n")
    code, out, _ = pipeline("--config", str(bad), "--tenant", "acme")
    _error(code, out, "invalid_config")
    assert out["error"]["message"].startswith("drift.alpha: ")
    code, out, _ = pipeline("--config", str(tmp_path / "missing.toml"), "--tenant", "acme")
    _error(code, out, "invalid_config")
    code, out, _ = pipeline("--config", str(config), "--tenant", "acme", "--as-of", "yesterday")
    _error(code, out, "invalid_config")
    code, out, _ = pipeline("--config", str(config), "--tenant", "acme", "--registry-mode", "sometimes")
    _error(code, out, "invalid_config")
    assert "--registry-mode" in out["error"]["message"]
    fake_openai.default = Fail(401, "invalid api key")  # the provider refuses every call
    unreachable = write_config(tmp_path / "down.toml", lake).read_text().replace(
        'model = "tests.daemon.lakes:scripted_judge_model"', 'model = "openai/gpt-4o-mini"')
    (tmp_path / "down.toml").write_text(unreachable)
    down = subprocess.run(
        [sys.executable, "-m", "verdict_daemon.cli.pipeline", "--json", "--config", str(tmp_path / "down.toml"),
         "--tenant", "acme", "--as-of", AS_OF],
        capture_output=True, text=True, timeout=120,
        env={**env(), "OPENAI_API_KEY": "sk-test-not-real",
             "OPENAI_BASE_URL": fake_openai.base_url})
    assert down.returncode == 2 and down.stdout == "" and closed_error(down.stderr)["code"] == "provider_unavailable"
    assert "sk-test-not-real" not in down.stdout + down.stderr
    for text in (stderr, down.stderr):
        assert "Traceback" not in text


def test_a_locked_state_file_is_storage_locked(lake, tmp_path):
    config = write_config(tmp_path / "verdict.toml", lake)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)"),
        str(lake / "state.duckdb")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None  # piped
        assert holder.stdout.readline().strip() == "held"
        code, out, stderr = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF)
        _error(code, out, "storage_locked")
        assert "Traceback" not in stderr
    finally:
        holder.kill()
        holder.wait()


def test_sigterm_mid_judging_prints_the_envelope_with_what_was_stored(lake, tmp_path):
    import signal
    import time

    from tests.daemon.lakes import JUDGE_CALLS_ENV

    calls = tmp_path / "judge-calls"
    calls.touch()
    config = write_config(tmp_path / "verdict.toml", lake, "[judging]\nconcurrency = 2\n")
    config.write_text(config.read_text().replace("scripted_judge_model", "counted_slow_judge_model"))
    proc = subprocess.Popen([sys.executable, "-m", "verdict_daemon.cli.pipeline", "--json", "--config", str(config),
                             "--tenant", "acme", "--as-of", AS_OF], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env(**{JUDGE_CALLS_ENV: str(calls)}))
    try:
        deadline = time.monotonic() + 120
        while len(calls.read_text().splitlines()) < 4:  # judging has answered a few calls; most are still to come
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143 and stdout == "" and "Traceback" not in stderr
    error = closed_error(stderr)
    assert error["code"] == "interrupted" and error["message"].startswith("stopped by SIGTERM: ")
    summary = error["summary"]
    con = duckdb.connect(str(lake / "state.duckdb"), read_only=True)
    stored = con.execute("SELECT count(*) FROM judgment_attempts WHERE status = 'OK'").fetchall()[0][0]
    sampled = con.execute("SELECT count(*) FROM sampled_traces").fetchall()[0][0]
    con.close()
    assert 0 < summary["judged"] == stored < sampled == summary["sampled"]  # what finished was stored, and said
    assert summary["evaluators"][0]["stopped"] and summary["drift_runs"] == []
    assert f"{stored} judgment(s)" in error["message"] and "drift was not run" in error["message"]
