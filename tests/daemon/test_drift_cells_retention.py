"""`drift_cells` is pruned (`[retention] drift_cells_days`): the daemon's compact_retain job deletes the cells of
runs older than the retention, except those of the runs a report (and the UI, through it) reads — per evaluator
its latest closing decision, latest early look and latest weekly decision, however old — and nothing another
tenant stored. What the report reads is the same before and after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pytest

from tests.daemon.conftest import make_config
from verdict.tenancy import TenantId
from verdict_daemon.service.daemon import Daemon
from verdict_daemon.store import views
from verdict_daemon.store.drift_runs import RunCell, RunRecord, commit_run
from verdict_daemon.store.state import STATE_FILE, StateStore

NOW = datetime(2026, 3, 20, 12, 30)  # naive UTC, a Friday
DAY, HOUR = timedelta(days=1), timedelta(hours=1)
CELLS = [RunCell(f"c{i}", "d0", "binary", "stable", 40, 40, None, None, 0.1, False) for i in range(3)]
SINCE = datetime(2000, 1, 1)
_TAKEN: dict[tuple, list[datetime]] = {}


def _run(store: StateStore, tenant: str, fingerprint: str, as_of: datetime, *, weekly: bool = False) -> str:
    """A run as of `as_of`: a closing decision when on the daily grid (its window is the day before), else an
    early look; `weekly`: the weekly decision (small cells tested over the week before)."""
    run_id = f"{tenant}-{fingerprint}-{as_of:%Y%m%dT%H%M}"
    start = as_of - DAY
    record = RunRecord(tenant, run_id, fingerprint, as_of, start, start - 8 * DAY, start - DAY, 0.01, 0.05, 30,
                       100, len(CELLS), len(CELLS), as_of - 7 * DAY if weekly else None)
    taken = _TAKEN.setdefault((store.path, tenant, fingerprint), [])  # what run_times would read (one less transaction)
    assert commit_run(store, record, [], CELLS, as_of, (SINCE, sorted(taken)))
    taken.append(as_of)
    return run_id


def _history(store: StateStore, tenant: str) -> dict[str, set[str]]:
    """12 days of an evaluator's runs (a closing decision a day, early looks at 08:00 and 16:00, one weekly decision
    11 days back: the daemon missed the last Monday) and a retired evaluator's runs of 30 days ago."""
    runs: dict[str, set[str]] = {"old": set(), "recent": set(), "kept": set()}
    weekly = _run(store, tenant, "fp", datetime(2026, 3, 9), weekly=True)  # a Monday
    runs["kept"].add(weekly)
    for day in range(12, 0, -1):
        midnight = datetime(2026, 3, 20) - day * DAY
        for at in (midnight, midnight + 8 * HOUR, midnight + 16 * HOUR):
            if at != datetime(2026, 3, 9):
                runs["old" if at < NOW - 7 * DAY else "recent"].add(_run(store, tenant, "fp", at))
    runs["recent"] |= {_run(store, tenant, "fp", datetime(2026, 3, 20)), _run(store, tenant, "fp", NOW - HOUR)}
    runs["old"].add(weekly)
    retired = [_run(store, tenant, "fp-retired", datetime(2026, 2, 18) + h * HOUR) for h in (0, 6, 24, 30)]
    runs["old"] |= set(retired)
    runs["kept"] |= {retired[2], retired[3]}  # its latest closing decision and its latest early look
    return runs


def _cells_by_run(store: StateStore, tenant: str) -> set[str]:
    with store.transaction() as con:
        return {r for (r,) in con.execute("SELECT DISTINCT run_id FROM drift_cells WHERE tenant_id = ?", [tenant]).fetchall()}


def _report_cells(data, tenant) -> list[tuple]:
    """What the report and the UI read of drift_cells: the snapshot's `run_cells` (views.add_report_tables)."""
    con = duckdb.connect()
    try:
        views.add_state_views(con, data, tenant)
        views.add_report_tables(con, data / STATE_FILE, tenant, 10.0)
        return con.execute("SELECT * FROM run_cells ORDER BY ALL").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("days", [7, 0])
def test_compact_retain_prunes_old_cells_and_keeps_what_the_report_reads(tmp_path, days):
    data = tmp_path / "data"
    data.mkdir()
    store = StateStore(data)
    acme, globex = _history(store, "acme"), _history(store, "globex")
    other = {_run(store, "initech", "fp", datetime(2026, 2, 1) + h * HOUR) for h in (0, 6, 24, 30)}
    report = {t: _report_cells(data, t) for t in ("acme", "globex")}
    assert {r[1] for r in report["acme"]} == acme["kept"] | {"acme-fp-20260320T0000", "acme-fp-20260320T1130"}

    daemon = Daemon(make_config(data, retention={"drift_cells_days": days}), clock=lambda: NOW.replace(tzinfo=UTC))
    daemon.compact_retain()

    for tenant, runs in (("acme", acme), ("globex", globex)):
        every = runs["old"] | runs["recent"]
        left = _cells_by_run(store, tenant)
        assert left == (every if days == 0 else runs["recent"] | runs["kept"]), tenant
        assert _report_cells(data, tenant) == report[tenant]  # the report and the UI see the same cells
        assert store.cursor(TenantId(tenant), "compact_retain.last_success") == NOW.replace(tzinfo=UTC).isoformat()
    assert _cells_by_run(store, "initech") == other  # no configured tenant: its rows are not this daemon's to prune
    with store.transaction() as con:  # the runs themselves stay: only their per-cell detail goes
        assert con.execute("SELECT count(*) FROM drift_runs").fetchone()[0] == sum(
            len(r["old"] | r["recent"]) for r in (acme, globex)) + len(other)
