"""state.duckdb: migrations, short transactions, a second process holding the file, tenant scoping."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pytest

from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.store.state import MIGRATIONS, SCHEMA_VERSION, StateStore

HOLDER = """
import duckdb, sys, time
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE IF NOT EXISTS held (x INTEGER)")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_fresh_file_is_migrated_to_the_current_version(tmp_path):
    store = StateStore(tmp_path)
    assert store.schema_version() == SCHEMA_VERSION == len(MIGRATIONS)
    con = duckdb.connect(str(store.path), read_only=True)
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    con.close()
    assert {"sampled_traces", "judgment_attempts", "dimension_verdicts", "evaluators", "drift_runs",
            "drift_signals", "alert_deliveries", "cursors", "cluster_assignments", "schema_version"} <= tables
    # every table carries a tenant
    con = duckdb.connect(str(store.path), read_only=True)
    for table in tables - {"schema_version"}:
        columns = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
        assert columns[0] == "tenant_id", table
    con.close()


def test_a_newer_schema_is_refused_not_downgraded(tmp_path):
    StateStore(tmp_path).schema_version()
    con = duckdb.connect(str(tmp_path / "state.duckdb"))
    con.execute("INSERT INTO schema_version VALUES (?, now()::TIMESTAMP)", [SCHEMA_VERSION + 1])
    con.close()
    with pytest.raises(DaemonError) as err:
        StateStore(tmp_path).schema_version()
    assert err.value.code == "storage_error" and "upgrade verdict" in err.value.message


def test_cursors_are_scoped_by_tenant(tmp_path):
    store = StateStore(tmp_path)
    store.set_cursor(TenantId("acme"), "sample.as_of", "a")
    store.set_cursor(TenantId("globex"), "sample.as_of", "g")
    assert store.cursor(TenantId("acme"), "sample.as_of") == "a" and store.cursor(TenantId("globex"), "sample.as_of") == "g"
    assert store.cursor(TenantId("initech"), "sample.as_of") is None  # tenant ids are validated at the edges (TenantId)


def test_failed_transaction_rolls_back(tmp_path):
    store = StateStore(tmp_path)
    with pytest.raises(RuntimeError), store.transaction() as con:
        con.execute("INSERT INTO cursors VALUES ('acme', 'x', '1', now()::TIMESTAMP)")
        raise RuntimeError("boom")
    assert store.cursor(TenantId("acme"), "x") is None


def _hold(path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None  # piped
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_a_file_held_by_another_process_is_storage_locked_after_the_timeout(tmp_path):
    StateStore(tmp_path).schema_version()
    holder = _hold(tmp_path / "state.duckdb", 30)
    try:
        with pytest.raises(DaemonError) as err:
            StateStore(tmp_path, lock_timeout=0.5).cursor(TenantId("acme"), "x")
        assert err.value.code == "storage_locked" and "held by another process" in err.value.message
    finally:
        holder.kill()
        holder.wait()


def test_a_short_hold_is_waited_out_with_backoff(tmp_path):
    StateStore(tmp_path).schema_version()
    holder = _hold(tmp_path / "state.duckdb", 0.5)
    try:
        StateStore(tmp_path, lock_timeout=20).set_cursor(TenantId("acme"), "x", "done")
    finally:
        holder.wait()
    assert StateStore(tmp_path).cursor(TenantId("acme"), "x") == "done"
