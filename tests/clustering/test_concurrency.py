"""Two real `verdict-cluster` processes racing on the tenant's active pointer, and a state file held
by another process."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pytest

from tests.clustering.cli import finish, lifecycle, ok, spawn
from tests.clustering.lakes import build
from tests.daemon.cli import env

HOLDER = """
import duckdb, sys, time
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _race(lake, *commands: tuple[str, ...]) -> tuple[list[dict], list[dict]]:
    """Start every command as its own process at once; (winners' results, losers' errors)."""
    procs = [spawn(lake, "--lock-timeout", "60", *command) for command in commands]
    results = [finish(proc) for proc in procs]
    assert all(code in (0, 2) for code, _, _ in results), results
    return [out["result"] for code, out, _ in results if code == 0], [out for code, out, _ in results if code == 2]


@pytest.mark.slow  # four racing real processes and two lifecycles (~14 s here); CI runs it
def test_two_concurrent_activations_from_one_generation_exactly_one_wins(tmp_path):
    lake = build(tmp_path / "data", tenants=("acme",), days=2)
    first = lifecycle(lake, cutoff="2026-11-19T00:00:00Z", generation=None)
    second = lifecycle(lake, cutoff="2026-11-20T00:00:00Z", generation=None)

    winners, losers = _race(lake, ("activate", "--version", first, "--expected-generation", "0"),
                            ("activate", "--version", second, "--expected-generation", "0"))
    assert len(winners) == 1 and len(losers) == 1
    assert winners[0]["generation"] == 1 and winners[0]["previous_version"] is None
    assert losers[0]["code"] == "generation_conflict" and losers[0]["generation"] == 1
    assert ok(lake, "inspect")["active_version"] == winners[0]["active_version"]

    # from generation 1, an activation of the other version races a rollback to it: again one move
    other = second if winners[0]["active_version"] == first else first
    ok(lake, "activate", "--version", other, "--expected-generation", "1")
    back = winners[0]["active_version"]
    winners, losers = _race(lake, ("rollback", "--version", back, "--expected-generation", "2"),
                            ("activate", "--version", back, "--expected-generation", "2"))
    assert len(winners) == 1 and winners[0]["generation"] == 3
    assert [out["code"] for out in losers] == ["generation_conflict"]

    con = duckdb.connect(str(lake / "state.duckdb"), read_only=True)
    moves = con.execute("SELECT generation FROM registry_events WHERE action IN ('activated', 'rolled_back') "
                        "ORDER BY seq").fetchall()
    con.close()
    assert [g for (g,) in moves] == [1, 2, 3]  # every generation was taken exactly once


def test_a_state_file_held_by_another_process_is_storage_locked(tmp_path):
    lake = build(tmp_path / "data", tenants=("acme",), days=1)
    ok(lake, "inspect")  # creates and migrates state.duckdb
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lake / "state.duckdb"), "30"],
                              stdout=subprocess.PIPE, text=True, env=env())
    try:
        assert holder.stdout is not None  # piped
        assert holder.stdout.readline().strip() == "holding"
        proc = spawn(lake, "--lock-timeout", "0.5", "normalize", "--limit", "10")
        code, out, _ = finish(proc)
        assert code == 2 and out["code"] == "storage_locked" and "held by another process" in out["message"]
    finally:
        holder.kill()
        holder.wait()
    assert ok(lake, "inspect")["versions"]["total"] == 0
