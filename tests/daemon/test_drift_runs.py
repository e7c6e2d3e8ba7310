"""Drift runs: a run and its exact signal set commit together (zero-signal runs included), a failure
mid-commit leaves nothing visible, and readers get the latest completed run."""

from __future__ import annotations

from datetime import timedelta

import duckdb
import pytest

from tests.daemon.conftest import NOW, make_config
from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.service import drift_runs
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.service.daemon import Daemon
from verdict_daemon.store import drift_runs as drift_store
from verdict_daemon.store.drift_runs import latest_run
from verdict_daemon.store.state import StateStore


def _naive(t):
    return t.replace(tzinfo=None)


def _rows(lake, query: str) -> list[tuple]:
    con = duckdb.connect(str(lake / "state.duckdb"), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.fixture
def judged(lake):
    config = make_config(lake)
    summary = run_cycle(config, TenantId("acme"), NOW, build_evaluators(config))
    assert len(summary["signals"]) == 1
    return config, Daemon(config).store, summary["evaluators"][0]["fingerprint"]


def test_a_failure_while_committing_a_run_leaves_no_trace_of_it(judged, lake, monkeypatch):
    config, store, fingerprint = judged
    before = _rows(lake, "SELECT (SELECT count(*) FROM drift_runs), (SELECT count(*) FROM drift_signals), "
                         "(SELECT count(*) FROM alert_deliveries)")
    real = drift_store.insert_rows

    def crash_on_signals(con, table, *args, **kwargs):
        if table == "drift_signals":  # the run row is already inserted in this transaction
            raise duckdb.IOException("disk full")
        real(con, table, *args, **kwargs)

    monkeypatch.setattr(drift_store, "insert_rows", crash_on_signals)
    with pytest.raises(DaemonError) as err:
        drift_runs.run_drift(store, TenantId("acme"), fingerprint, config.drift, NOW + timedelta(hours=1))
    assert err.value.code == "storage_error"
    assert _rows(lake, "SELECT (SELECT count(*) FROM drift_runs), (SELECT count(*) FROM drift_signals), "
                       "(SELECT count(*) FROM alert_deliveries)") == before == [(1, 1, 1)]


def test_zero_signal_runs_are_stored_and_readers_take_the_latest(judged, lake):
    config, store, fingerprint = judged
    # 30 days later every judgment is outside the windows: a run with no cells and no signals
    runs = drift_runs.run_drift(store, TenantId("acme"), fingerprint, config.drift, NOW + timedelta(days=30))
    # the look also closes the days nobody watched, as far back as catch_up_periods (7), oldest first
    assert [r.as_of for r in runs] == [_naive(NOW + timedelta(days=d)) for d in range(24, 31)]
    later = runs[-1]
    assert all(r.signals == () and not r.reused for r in runs)
    latest = latest_run(store, TenantId("acme"), fingerprint)
    assert latest is not None and latest.run_id == later.run_id
    rows = _rows(lake, "SELECT as_of, signals FROM drift_runs ORDER BY as_of")
    assert rows[0] == (_naive(NOW), 1) and rows[-1] == (_naive(NOW + timedelta(days=30)), 0) and len(rows) == 8
    assert latest_run(store, TenantId("globex"), fingerprint) is None  # another tenant sees nothing


def test_the_next_look_closes_the_days_nobody_watched_once(lake, monkeypatch):
    """Daemon down over two midnights: its next look takes both closing decisions, oldest first, then the
    look. A crash between them (kill -9) keeps what was committed; the rerun finishes, a repeat adds nothing."""
    config = make_config(lake)
    evaluators = build_evaluators(config)
    first = run_cycle(config, TenantId("acme"), NOW - timedelta(days=2) + timedelta(hours=5), evaluators)
    assert [r["alpha"] for r in first["drift_runs"]] == [pytest.approx(0.01 * 5 / 24)]  # an early look, then down
    real, calls = drift_runs._decide, []

    def killed_after_the_first_decision(*args, **kwargs):
        calls.append(args[-1])
        if len(calls) == 2:
            raise RuntimeError("killed")
        return real(*args, **kwargs)

    monkeypatch.setattr(drift_runs, "_decide", killed_after_the_first_decision)
    back = NOW + timedelta(hours=2)
    with pytest.raises(RuntimeError):
        run_cycle(config, TenantId("acme"), back, evaluators)
    monkeypatch.setattr(drift_runs, "_decide", real)
    again = run_cycle(config, TenantId("acme"), back, evaluators)
    assert [(r["as_of"], r["alpha"]) for r in again["drift_runs"]] == [
        (_naive(NOW).isoformat(), pytest.approx(0.04)), (_naive(back).isoformat(), pytest.approx(0.01 * 2 / 24))]
    assert {(s["cluster"], s["kind"]) for s in again["signals"]} == {("search.v1", "regression")}
    repeat = run_cycle(config, TenantId("acme"), back, evaluators)
    assert all(r["reused"] for r in repeat["drift_runs"])
    rows = _rows(lake, "SELECT as_of, alpha FROM drift_runs ORDER BY as_of")
    assert [(t - _naive(NOW), a) for t, a in rows] == [
        (timedelta(hours=-43), pytest.approx(0.01 * 5 / 24)), (timedelta(days=-1), pytest.approx(0.04)),
        (timedelta(0), pytest.approx(0.04)), (timedelta(hours=2), pytest.approx(0.01 * 2 / 24))]
    signals = _rows(lake, "SELECT signal_id FROM drift_signals")
    assert _rows(lake, "SELECT count(*), count(DISTINCT signal_id) FROM alert_deliveries") == [
        (len(set(signals)), len(set(signals)))]  # one delivery per signal id, however often it was raised


def test_a_pipeline_looking_while_the_daemon_looks_never_spends_the_period_twice(judged, lake, monkeypatch):
    """The daemon plans its look at 10:30 from the runs it read (last one at 09:00); before it commits, a
    `verdict-pipeline` (its own store on the same file) takes a look at 10:00. The daemon's commit sees the
    runs changed and plans again: 10:30 spends only the half hour since 10:00."""
    config, store, fingerprint = judged
    drift_runs.run_drift(store, TenantId("acme"), fingerprint, config.drift, NOW + timedelta(hours=9))
    pipeline = StateStore(lake)
    real = drift_runs.judgment_table

    def pipeline_commits_meanwhile(*args):
        monkeypatch.setattr(drift_runs, "judgment_table", real)  # once
        drift_runs.run_drift(pipeline, TenantId("acme"), fingerprint, config.drift, NOW + timedelta(hours=10))
        return real(*args)

    monkeypatch.setattr(drift_runs, "judgment_table", pipeline_commits_meanwhile)
    (look,) = drift_runs.run_drift(store, TenantId("acme"), fingerprint, config.drift, NOW + timedelta(hours=10, minutes=30))
    assert look.alpha == pytest.approx(0.01 * 0.5 / 24)
    rows = _rows(lake, "SELECT as_of, alpha FROM drift_runs WHERE as_of > ? ORDER BY as_of".replace("?", f"'{_naive(NOW)}'"))
    assert [(t - _naive(NOW), a) for t, a in rows] == [
        (timedelta(hours=9), pytest.approx(0.01 * 9 / 24)), (timedelta(hours=10), pytest.approx(0.01 / 24)),
        (timedelta(hours=10, minutes=30), pytest.approx(0.01 * 0.5 / 24))]
