"""Drift runs: a run and its exact signal set commit together (zero-signal runs included), a failure
mid-commit leaves nothing visible, and readers get the latest completed run."""

from __future__ import annotations

from datetime import timedelta

import duckdb
import pytest

from tests.daemon.conftest import NOW, make_config
from verdict_daemon import drift_runs
from verdict_daemon.cycle import build_evaluators, run_cycle
from verdict_daemon.daemon import Daemon
from verdict_daemon.errors import DaemonError


def _rows(lake, query: str) -> list[tuple]:
    con = duckdb.connect(str(lake / "state.duckdb"), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.fixture
def judged(lake):
    config = make_config(lake)
    summary = run_cycle(config, "acme", NOW, build_evaluators(config))
    assert len(summary["signals"]) == 1
    return config, Daemon(config).store, summary["evaluators"][0]["fingerprint"]


def test_a_failure_while_committing_a_run_leaves_no_trace_of_it(judged, lake, monkeypatch):
    config, store, fingerprint = judged
    before = _rows(lake, "SELECT (SELECT count(*) FROM drift_runs), (SELECT count(*) FROM drift_signals), "
                         "(SELECT count(*) FROM alert_deliveries)")
    real = drift_runs.insert_rows

    def crash_on_signals(con, table, *args, **kwargs):
        if table == "drift_signals":  # the run row is already inserted in this transaction
            raise duckdb.IOException("disk full")
        real(con, table, *args, **kwargs)

    monkeypatch.setattr(drift_runs, "insert_rows", crash_on_signals)
    with pytest.raises(DaemonError) as err:
        drift_runs.run_drift(store, "acme", fingerprint, config.drift, NOW + timedelta(hours=1))
    assert err.value.code == "storage_error"
    assert _rows(lake, "SELECT (SELECT count(*) FROM drift_runs), (SELECT count(*) FROM drift_signals), "
                       "(SELECT count(*) FROM alert_deliveries)") == before == [(1, 1, 1)]


def test_zero_signal_runs_are_stored_and_readers_take_the_latest(judged, lake):
    config, store, fingerprint = judged
    # 30 days later every judgment is outside the windows: a run with no cells and no signals
    (later,) = drift_runs.run_drift(store, "acme", fingerprint, config.drift, NOW + timedelta(days=30))
    assert later.signals == () and not later.reused
    assert drift_runs.latest_run(store, "acme", fingerprint).run_id == later.run_id
    assert _rows(lake, "SELECT as_of, signals FROM drift_runs ORDER BY completed_at") == [
        (NOW.replace(tzinfo=None), 1), ((NOW + timedelta(days=30)).replace(tzinfo=None), 0)]
    assert drift_runs.latest_run(store, "globex", fingerprint) is None  # another tenant sees nothing
