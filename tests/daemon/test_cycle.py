"""The cycle is defined once (service/cycle.py): the daemon's jobs, each run once in the cycle's order, leave
the state `verdict pipeline`'s one cycle leaves on an identical lake."""

import duckdb

from tests.daemon.conftest import INTENTS, NOW, make_config
from tests.daemon.lakes import synthetic_days, write_rows
from verdict.tenancy import TenantId
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.service.daemon import Daemon
from verdict_daemon.store.state import STATE_FILE

QUERIES = (
    "SELECT trace_id, fingerprint, status FROM judgment_attempts ORDER BY ALL",
    "SELECT attempt_id, dimension, value FROM dimension_verdicts ORDER BY ALL",
    "SELECT trace_id, cluster, method FROM cluster_assignments ORDER BY ALL",
    "SELECT signal_id, cluster, dimension, kind FROM drift_signals ORDER BY ALL",
    "SELECT as_of, alpha, judgments, cells, tested, signals FROM drift_runs ORDER BY ALL",
)


def _state(data):
    con = duckdb.connect(str(data / STATE_FILE), read_only=True)
    try:
        return [con.execute(query).fetchall() for query in QUERIES]
    finally:
        con.close()


def test_the_daemons_jobs_and_the_pipeline_leave_the_same_state(tmp_path):
    by_daemon, by_pipeline = tmp_path / "daemon", tmp_path / "pipeline"
    for data in (by_daemon, by_pipeline):
        write_rows(data, "acme", synthetic_days(NOW, intents=INTENTS, per_day=40, corrupt="search.v1"))
    daemon = Daemon(make_config(by_daemon, tenants=[{"id": "acme"}]), clock=lambda: NOW)
    for job in ("sample", "judge", "assign", "drift"):
        getattr(daemon, job)()
    config = make_config(by_pipeline, tenants=[{"id": "acme"}])
    summary = run_cycle(config, TenantId("acme"), NOW, build_evaluators(config))
    assert summary["adverse_signals"] > 0  # a cycle with something to find
    assert _state(by_daemon) == _state(by_pipeline)
