"""A broken state file stops the real `verdict daemon` process: truncated, zeroed, random or deleted while
it runs, it exits 2 with the `state_corrupt` envelope naming the file (nothing recreated), and
`verdict daemon --check` says unhealthy; a sound file checks healthy."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.daemon.cli import closed_error, env, write_config
from tests.daemon.conftest import INTENTS
from tests.daemon.lakes import synthetic_days, write_rows

SCHEDULES = ("[schedules]\nsample = { interval_seconds = 3600 }\njudge = { interval_seconds = 3600 }\n"
             "assign = { interval_seconds = 3600 }\ndrift = { interval_seconds = 3600 }\n"
             "alert = { interval_seconds = 0.2 }\n")


def _daemon(*args: str, config: Path) -> list[str]:
    return [sys.executable, "-m", "verdict_daemon.cli", "daemon", "--config", str(config), *args]


def _check(config: Path) -> subprocess.CompletedProcess:
    return subprocess.run(_daemon("--check", config=config), capture_output=True, text=True, env=env(), timeout=120)


def _start(tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    from datetime import UTC, datetime

    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(datetime.now(UTC), intents=INTENTS, per_day=5, days=2))
    config = write_config(tmp_path / "verdict.toml", data, SCHEDULES)
    config.write_text(config.read_text().replace("state_lock_timeout_seconds = 1", "state_lock_timeout_seconds = 30"))
    log = tmp_path / "daemon.log"
    proc = subprocess.Popen(_daemon(config=config), stderr=log.open("w"), env=env())
    deadline = time.monotonic() + 120
    while "verdict-daemon ready" not in log.read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError(log.read_text())
        time.sleep(0.1)
    return proc, data / "state.duckdb", log


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 8)


def _zero(path: Path) -> None:
    path.write_bytes(b"\0" * path.stat().st_size)


def _random(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


def _damage_between_transactions(path: Path, damage) -> None:
    """The daemon's connection holds DuckDB's lock on the file while a transaction runs; damage then can be
    covered by the transaction's own writes (found only when the damaged blocks are read, see
    docs/daemon.md). Holding the lock lands it between transactions, where each job's check must find it."""
    with path.open("r+b") as held:
        fcntl.lockf(held, fcntl.LOCK_EX)
        damage(path)


def _exit(proc: subprocess.Popen, log: Path) -> dict:
    try:
        assert proc.wait(120) == 2, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert "Traceback" not in text
    return closed_error(text)


@pytest.mark.parametrize("damage", [_truncate, _zero, _random], ids=["truncated", "zeroed", "random"])
def test_a_damaged_state_file_stops_the_daemon_and_checks_unhealthy(tmp_path, damage):
    proc, state, log = _start(tmp_path)
    first = _check(tmp_path / "verdict.toml")
    assert first.returncode == 0, first.stderr  # healthy while it runs
    _damage_between_transactions(state, damage)
    error = _exit(proc, log)
    assert error["code"] == "state_corrupt" and error["file"] == str(state) and str(state) in error["message"]
    check = _check(tmp_path / "verdict.toml")
    assert check.returncode == 2 and check.stdout == "" and closed_error(check.stderr)["code"] == "state_corrupt"


def test_a_state_file_deleted_while_running_stops_the_daemon_and_is_not_recreated(tmp_path):
    proc, state, log = _start(tmp_path)
    state.unlink()
    error = _exit(proc, log)
    # "deleted", or "replaced" when the delete fell between the daemon's check and its connect (which
    # created a new, empty file); either way it stops, and nothing is migrated into a new file
    assert error["code"] == "state_corrupt" and "while in use" in error["message"]
    check = _check(tmp_path / "verdict.toml")
    assert check.returncode == 2 and closed_error(check.stderr)["code"] == "state_corrupt"


def test_a_daemon_does_not_start_on_a_damaged_state_file(tmp_path):
    proc, state, log = _start(tmp_path)
    proc.terminate()
    assert proc.wait(120) == 0
    healthy = _check(tmp_path / "verdict.toml")
    assert healthy.returncode == 0 and json.loads(healthy.stdout)["healthy"] is True
    _zero(state)
    again = subprocess.run(_daemon(config=tmp_path / "verdict.toml"), capture_output=True, text=True, env=env(),
                           timeout=120)
    assert again.returncode == 2 and closed_error(again.stderr)["code"] == "state_corrupt"


def test_a_file_made_at_the_path_after_a_delete_is_never_taken_for_the_store_file(tmp_path):
    """The race the daemon test above hit under load: the file is deleted, then something creates a new one at
    the path before the next transaction (a DuckDB connect does). The filesystem may give the new file the old
    one's inode number once nothing holds the old one; the store holds it open, so the check cannot be fooled."""
    import duckdb

    from verdict_daemon.store.state import StateFileBroken, StateStore

    store = StateStore(tmp_path)
    store.schema_version()  # creates and migrates the file
    store.verify()
    store.path.unlink()
    duckdb.connect(str(store.path)).close()  # a new, empty database where the state file was
    with pytest.raises(StateFileBroken, match="was deleted while in use"):
        store.check()
    assert duckdb.connect(str(store.path)).execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()").fetchall() == [(0,)]


def test_a_file_cut_short_anywhere_fails_the_jobs_check(tmp_path):
    """DuckDB opens a file cut short after its catalog and answers from its first blocks, so the old check
    (open, read the catalog and schema_version) passed on most cuts. The cheap check may pass only where
    reading every table in full passes too (a cut through free blocks at the end loses nothing)."""
    from verdict.tenancy import TenantId
    from verdict_daemon.store.state import StateFileBroken, StateStore

    store = StateStore(tmp_path)
    for n in range(4):  # several checkpoints: table blocks both before and after the catalog's
        with store.transaction() as con:
            con.execute("INSERT INTO cursors SELECT ?, 'c' || i, repeat(md5(i::VARCHAR), 40), now()::TIMESTAMP "
                        "FROM range(2000) t(i)", [TenantId(f"t{n}")])
    whole = store.path.read_bytes()
    block = 256 * 1024
    failed = 0
    for cut in sorted({len(whole) // 8, *range(3 * 4096 + block, len(whole), block), len(whole) - 1}):
        store.path.write_bytes(whole[:cut])
        try:
            StateStore(tmp_path).check()
        except StateFileBroken as exc:
            assert "is truncated" in str(exc) or "is corrupt" in str(exc), exc
            failed += 1
        else:
            StateStore(tmp_path).verify()
    assert failed >= 3
    store.path.write_bytes(whole)
    assert StateStore(tmp_path).check() > 0
