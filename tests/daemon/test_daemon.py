"""The daemon's jobs: tenant isolation, alerts (retry, backoff, dedup), the instance lock, compaction,
and a clean SIGTERM mid-judging (a real process)."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from collector import lake as lake_layout
from tests.daemon.cli import closed_error, env, write_config
from tests.daemon.conftest import INTENTS, NOW, make_config
from tests.daemon.lakes import JUDGE_CALLS_ENV, synthetic_days, write_rows
from tests.daemon.test_end_to_end import Webhook
from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.service import alerts
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.service.daemon import Daemon, InstanceLock


def _count(data_dir, query: str) -> int:
    con = duckdb.connect(str(data_dir / "state.duckdb"), read_only=True)
    try:
        return con.execute(query).fetchall()[0][0]
    finally:
        con.close()


def test_one_tenants_broken_lake_does_not_stop_the_others(lake, caplog):
    broken = lake_layout.partition_dir(lake, "globex", (NOW - timedelta(days=1)).date().isoformat())
    broken.mkdir(parents=True)
    (broken / "0-bad.parquet").write_bytes(b"not parquet at all")
    daemon = Daemon(make_config(lake), clock=lambda: NOW)
    with caplog.at_level(logging.ERROR, logger="verdict.daemon"):
        daemon.sample()
    assert "job=sample tenant=globex error=storage_error" in caplog.text
    assert _count(lake, "SELECT count(*) FROM sampled_traces WHERE tenant_id = 'acme'") > 0
    assert daemon.store.cursor(TenantId("acme"), "sample.last_success") == NOW.isoformat()
    assert daemon.store.cursor(TenantId("globex"), "sample.last_success") is None


def test_alerts_retry_with_backoff_then_deliver_once(lake):
    config = make_config(lake)
    run_cycle(config, TenantId("acme"), NOW, build_evaluators(config))
    hook = Webhook()
    failures = [500, 503]
    handler: Any = hook.server.RequestHandlerClass  # the Webhook's handler class
    original = handler.do_POST

    def flaky(handler):
        if failures:
            handler.rfile.read(int(handler.headers["Content-Length"]))
            handler.send_response(failures.pop(0))
            handler.end_headers()
            return
        original(handler)

    handler.do_POST = flaky
    settings = config.alerts.model_copy(update={"webhook_url": hook.url})
    store = Daemon(config).store
    assert alerts.deliver(store, TenantId("acme"), settings) == alerts.AlertReport(0, 1, 0)
    assert alerts.deliver(store, TenantId("acme"), settings) == alerts.AlertReport(0, 0, 0)  # not due yet: backoff
    time.sleep(1.1)
    assert alerts.deliver(store, TenantId("acme"), settings) == alerts.AlertReport(0, 1, 0)  # second failure, 2 s backoff
    time.sleep(2.1)
    assert alerts.deliver(store, TenantId("acme"), settings) == alerts.AlertReport(1, 0, 0)
    # NOW closed the day before; the regression goes on, so the new day's first look alerts once for
    # the new day, and a later look of the same day raising the same signal is not alerted again
    run_cycle(config, TenantId("acme"), NOW + timedelta(minutes=5), build_evaluators(config))
    assert alerts.deliver(store, TenantId("acme"), settings) == alerts.AlertReport(1, 0, 0)
    run_cycle(config, TenantId("acme"), NOW + timedelta(minutes=10), build_evaluators(config))
    time.sleep(0.1)
    assert alerts.deliver(store, TenantId("acme"), settings) == alerts.AlertReport(0, 0, 0)
    assert [body["dimension"] for _key, body in hook.received] == ["completeness"] * 2
    closing, early = (body for _key, body in hook.received)
    assert (closing["alpha"], closing["current_start"]) == (pytest.approx(0.04), "2026-11-19T00:00:00Z")
    assert early["alpha"] == pytest.approx(0.01 * 5 / 1440) and early["as_of"] == "2026-11-20T00:05:00Z"
    assert len({key for key, _body in hook.received}) == 2  # one signal id per alert period
    assert _count(lake, "SELECT count(DISTINCT run_id) FROM drift_signals") == 3


def test_a_judge_job_with_no_usable_judgment_is_logged_as_low_coverage(lake, caplog):
    """`verdict pipeline` exits low_coverage; the service keeps running but says so in its log (issue 30)."""
    config = make_config(lake, evaluators=[{"name": "quality", "kind": "rubric",
                                            "model": "tests.daemon.lakes:prose_judge_model"}])
    daemon = Daemon(config, clock=lambda: NOW)
    daemon.sample()
    with caplog.at_level(logging.WARNING, logger="verdict.daemon"):
        daemon.judge()
    assert "job=judge tenant=acme error=low_coverage: evaluator 'quality': 0 usable judgment(s)" in caplog.text
    assert "tenant=globex error=low_coverage" not in caplog.text  # nothing to judge there: not a low coverage


def test_alerts_give_up_after_max_attempts(lake, caplog):
    config = make_config(lake, alerts={"webhook_url": "http://127.0.0.1:9/hook", "max_attempts": 1,
                                       "timeout_seconds": 2})
    run_cycle(config, TenantId("acme"), NOW, build_evaluators(config))
    with caplog.at_level(logging.ERROR, logger="verdict.daemon"):
        report = alerts.deliver(Daemon(config).store, TenantId("acme"), config.alerts)
    assert report == alerts.AlertReport(0, 0, 1) and "error=webhook_failed" in caplog.text


def test_a_stop_request_leaves_due_alerts_pending_for_the_next_start(lake):
    config = make_config(lake)
    run_cycle(config, TenantId("acme"), NOW, build_evaluators(config))
    hook = Webhook()
    settings = config.alerts.model_copy(update={"webhook_url": hook.url})
    store = Daemon(config).store
    assert alerts.deliver(store, TenantId("acme"), settings, should_stop=lambda: True) == alerts.AlertReport(0, 0, 0)
    assert hook.received == [] and _count(lake, "SELECT count(*) FROM alert_deliveries WHERE status = 'pending'") == 1
    assert alerts.deliver(store, TenantId("acme"), settings) == alerts.AlertReport(1, 0, 0)


def test_a_second_instance_on_the_same_data_dir_is_refused(tmp_path):
    first = InstanceLock(tmp_path)
    first.acquire()
    try:
        with pytest.raises(DaemonError) as err:
            InstanceLock(tmp_path).acquire()
        assert err.value.code == "already_running" and str(tmp_path) in err.value.message
    finally:
        first.release()
    InstanceLock(tmp_path).acquire()  # free again once released


def test_compact_retain_uses_the_collector_functions_unless_a_collector_runs(tmp_path):
    data = tmp_path / "data"
    rows = synthetic_days(NOW, intents=("billing.v1",), per_day=4, days=2)
    for row in rows:  # one segment per row: plenty to compact
        write_rows(data, "acme", [row])
    write_rows(data, "acme", synthetic_days(NOW - timedelta(days=60), intents=("billing.v1",), per_day=1, days=1))
    config = make_config(data, retention={"days": 30, "compact_min_segments": 2, "delete_grace_seconds": 0})
    daemon = Daemon(config)
    before = [(t, date, len(lake_layout.segments(d))) for t, date, d in lake_layout.partitions(data)]
    held = lake_layout.LakeLock(data)
    held.acquire()
    try:
        daemon.compact_retain()  # a collector owns the lake: nothing touched
        assert [(t, date, len(lake_layout.segments(d))) for t, date, d in lake_layout.partitions(data)] == before
    finally:
        held.release()
    daemon.compact_retain()
    after = [(t, date, len(lake_layout.segments(d))) for t, date, d in lake_layout.partitions(data)]
    assert after == [(t, date, 1) for t, date, _n in before[1:]]  # the 60-day-old partition expired
    assert duckdb.connect().execute(
        f"SELECT count(*) FROM read_parquet('{data}/spans/*/*/*.parquet')").fetchall()[0][0] == len(rows)


def _live_daemon(tmp_path, model: str, extra: str, **environ: str) -> tuple[subprocess.Popen, Path, Path]:
    """A daemon process on a lake of the last 9 days (it runs on the wall clock), started once it sampled."""
    lake = tmp_path / "live"
    write_rows(lake, "acme", synthetic_days(datetime.now(UTC), intents=INTENTS, per_day=40))
    config = write_config(tmp_path / "verdict.toml", lake).read_text()
    config = config.replace("scripted_judge_model", model) + extra + (
        "[schedules]\nsample = { interval_seconds = 60 }\n"
        "judge = { interval_seconds = 1 }\nassign = { interval_seconds = 60 }\ndrift = { interval_seconds = 60 }\n")
    (tmp_path / "verdict.toml").write_text(config)
    log = tmp_path / "daemon.log"
    proc = subprocess.Popen([sys.executable, "-m", "verdict_daemon.cli.daemon", "--config",
                             str(tmp_path / "verdict.toml")], stderr=log.open("w"), env=env(**environ))
    deadline = time.monotonic() + 120
    while "sample tenant=acme eligible=" not in log.read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError(log.read_text())
        time.sleep(0.2)
    return proc, lake, log


def _sigterm(proc: subprocess.Popen, log) -> str:
    """SIGTERM; the daemon must exit 0 (SIGKILL and fail after 90 s, with its thread dump)."""
    try:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(90) == 0
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)
            time.sleep(1)
            raise AssertionError("no exit after SIGTERM:\n" + log.read_text()[-6000:]) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert "verdict-daemon stopped" in text and "Traceback" not in text
    return text


def test_sigterm_mid_judging_stops_cleanly(tmp_path):
    calls = tmp_path / "judge-calls"
    calls.touch()
    proc, lake, log = _live_daemon(tmp_path, "counted_slow_judge_model", "[judging]\nconcurrency = 2\n",
                                   **{JUDGE_CALLS_ENV: str(calls)})
    deadline = time.monotonic() + 120
    while len(calls.read_text().splitlines()) < 4:  # judging has answered a few calls; most are still to come
        assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
        time.sleep(0.05)
    assert "stopped=True" in _sigterm(proc, log)
    judged = _count(lake, "SELECT count(*) FROM judgment_attempts")
    sampled = _count(lake, "SELECT count(*) FROM sampled_traces")
    assert 0 < judged < sampled  # what finished was written; the rest waits for the next start
    assert _count(lake, "SELECT count(*) FROM judgment_attempts WHERE status = 'ERROR'") == 0


def test_sigterm_abandons_hung_judge_calls_after_the_grace(tmp_path):
    """A provider that never answers cannot keep the daemon from stopping: after
    `judging.stop_grace_seconds` the calls in flight are abandoned, unwritten (judged again later)."""
    proc, lake, log = _live_daemon(tmp_path, "hung_judge_model",
                                   "[judging]\nconcurrency = 2\nstop_grace_seconds = 0.5\n")
    deadline = time.monotonic() + 60
    while "judge tenant=acme evaluator=quality started" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    time.sleep(0.5)  # its two calls are in flight (and stay there)
    text = _sigterm(proc, log)
    assert "abandoned 2 call(s)" in text and "stopped=True" in text
    assert _count(lake, "SELECT count(*) FROM judgment_attempts") == 0


@pytest.mark.parametrize(("setup", "code", "message"), [
    (lambda config, data: config.write_text("[[tenants]\n"), "invalid_config", "is not valid TOML"),
    (lambda config, data: None, "invalid_config", "does not exist"),  # the data dir
    (lambda config, data: data.write_text("a file"), "invalid_config", "is not a directory"),
    (lambda config, data: data.mkdir() or config.write_text(config.read_text().replace('"acme"', '"bad tenant!"')),
     "invalid_config", "tenants[0].id: invalid tenant id"),
])
def test_daemon_start_failures_are_one_line_closed_errors(tmp_path, setup, code, message):
    config = write_config(tmp_path / "verdict.toml", tmp_path / "data")
    setup(config, tmp_path / "data")
    proc = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.daemon", "--config", str(config)],
                          capture_output=True, text=True, env=env(), timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    error = closed_error(proc.stderr)
    assert error["code"] == code and message in error["message"], proc.stderr


def test_a_job_never_overlaps_itself_and_missed_ticks_coalesce(tmp_path):
    """A 0.4 s job on a 0.1 s interval: the ticks missed while it runs collapse into one next run
    (replaying them would start it ~4 times per run) and two runs never overlap."""
    (tmp_path / "data").mkdir()
    off = {"interval_seconds": 60, "enabled": False}
    config = make_config(tmp_path / "data", schedules={
        "sample": {"interval_seconds": 0.1}, **{job: off for job in ("judge", "assign", "drift", "alert")},
        "compact_retain": off})
    daemon = Daemon(config)
    runs: list[tuple[float, float]] = []

    def slow_sample() -> None:
        start = time.monotonic()
        time.sleep(0.4)
        runs.append((start, time.monotonic()))

    daemon.sample = slow_sample  # type: ignore[method-assign]  # a slow job, to see runs never overlap
    runner = threading.Thread(target=daemon.run)
    runner.start()
    time.sleep(2.0)
    daemon.request_stop()
    runner.join(60)
    assert not runner.is_alive()
    assert 2 <= len(runs) <= 2.0 / 0.4 + 1
    assert all(end <= next_start for (_, end), (next_start, _) in zip(runs, runs[1:], strict=False))
