"""One daemon over the whole tenant (issue 19, item 4), real processes on loopback.

The end-to-end app (tests/daemon/app.py) sends one run of traffic (4 intents x 9 simulated days, one intent
truncated on the last day) to three real collectors at once: every span to a `single` collector, and each
trace also to one of two "zones" (by trace id, as a trace-aware load balancer would): zone A keeps its lake
on local disk, zone B ships its segments to an S3-compatible server (moto) on loopback. `verdict pipeline`
and `verdict daemon` reading zone A's data dir, zone B's data dir and zone B's bucket (segments shipped and
still on B's disk are read once) must give the drift answer the single collector's lake gives.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from collector.lake_union import LakeUnion
from tests.collector.conftest import Collector
from tests.collector.s3_server import start_s3_server
from tests.daemon.app import DAYS
from tests.daemon.cli import env, pipeline, write_config
from tests.daemon.test_end_to_end import CORRUPTED, INTENTS, MIN_USABLE, PER_DAY, TENANT, llm_answer
from verdict.tenancy import validate_tenant_id
from verdict_daemon.store.state import STATE_FILE

pytestmark = pytest.mark.objectstore

TOTAL = len(INTENTS) * DAYS * PER_DAY
SIGNAL_FIELDS = ("cluster", "dimension", "kind", "baseline_level", "current_level", "baseline_n", "current_n")


@pytest.fixture(scope="module")
def s3():
    server = start_s3_server()
    with pytest.MonkeyPatch.context() as mp:
        for name, value in server.env.items():  # for the collectors, pipelines and daemons the test starts
            mp.setenv(name, value)
        yield server
    server.stop()


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _spans(lake: LakeUnion) -> int:
    """Rows in the tenant's span segments of `lake` (each relative path once)."""
    files = lake.files("spans", validate_tenant_id(TENANT), "*.parquet", None)
    if not files:
        return 0
    con = lake.connect()
    try:
        return con.execute("SELECT count(*) FROM read_parquet(?)", [files]).fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def split_traffic(s3, tmp_path, fake_openai):
    """(single data dir, zone A's data dir, zone B's data dir, zone B's lake URL) once every span has landed
    and zone B has shipped everything."""
    fake_openai.handler = llm_answer
    lake_url = f"s3://{s3.new_bucket()}/lake"
    flags = ("--allow-claimed-tenant",)
    collectors = [Collector(tmp_path / "single", flags), Collector(tmp_path / "zone-a", flags),
                  Collector(tmp_path / "zone-b", (*flags, "--lake-url", lake_url, "--ship-seal-after-s", "0.3"))]
    try:
        single, zone_a, zone_b = (c.start() for c in collectors)
        app = subprocess.run([sys.executable, "-m", "tests.daemon.app", f"{single.url}+{zone_a.url},{zone_b.url}",
                              fake_openai.base_url, TENANT, str(PER_DAY), *INTENTS],
                             capture_output=True, text=True, env=env(), timeout=300)
        assert app.returncode == 0, app.stderr[-2000:]
        _wait(lambda: zone_b.stats()["outbox_segments"] == 0 and zone_b.stats()["segments_shipped"] > 0, 120,
              "zone B to ship its lake")
        for c in collectors:
            assert c.stop() == 0
    finally:
        for c in collectors:
            if c.proc and c.proc.poll() is None:
                c.kill9()
    return single.data_dir, zone_a.data_dir, zone_b.data_dir, lake_url


def _daemon_config(path: Path, state_dir: Path, lake: str) -> Path:
    path.write_text(f"""
data_dir = "{state_dir}"
state_lock_timeout_seconds = 30

[[tenants]]
id = "{TENANT}"

[schedules]
sample = {{ interval_seconds = 2 }}
judge = {{ interval_seconds = 1 }}
assign = {{ interval_seconds = 1 }}
drift = {{ interval_seconds = 3 }}
alert = {{ interval_seconds = 60, enabled = false }}
compact_retain = {{ cron = "0 3 * * *" }}

[sampling]
per_cluster_per_window = 40

[drift]
min_usable = {MIN_USABLE}

[[evaluators]]
name = "quality"
kind = "rubric"
model = "tests.daemon.lakes:scripted_judge_model"
{lake}""")
    return path


def _state(state_dir: Path, query: str) -> list[tuple]:
    """Read the daemon's state.duckdb between its short transactions."""
    for _ in range(200):
        try:
            con = duckdb.connect(str(state_dir / STATE_FILE), read_only=True)
        except duckdb.Error:
            time.sleep(0.05)
            continue
        try:
            return con.execute(query).fetchall()
        except duckdb.CatalogException:
            return []  # not migrated yet
        finally:
            con.close()
    raise AssertionError("state.duckdb stayed locked")


def test_tenant_split_across_two_collectors_gives_the_single_collector_drift_answer(split_traffic, tmp_path):
    single, zone_a, zone_b, lake_url = split_traffic
    # The split is real: each zone holds a share of the tenant, B's also in the bucket; together, all of it.
    whole, a, b_disk, b_bucket = (_spans(LakeUnion.open(dirs, urls)) for dirs, urls in (
        ([single], []), ([zone_a], []), ([zone_b], []), ([], [lake_url])))
    assert whole == TOTAL and 0 < a < TOTAL and a + b_bucket == TOTAL and b_disk == b_bucket
    assert _spans(LakeUnion.open([zone_a, zone_b], [lake_url])) == TOTAL  # B's shipped segments read once

    as_of = datetime.now(UTC).isoformat()
    drift = f"[drift]\nmin_usable = {MIN_USABLE}\n"
    code, alone, stderr = pipeline("--config", str(write_config(tmp_path / "single.toml", single, drift)),
                                   "--tenant", TENANT, "--as-of", as_of)
    assert code == 0, stderr
    assert [(s["cluster"], s["dimension"], s["kind"]) for s in alone["signals"]] == [(CORRUPTED, "completeness",
                                                                                      "regression")]

    # --- verdict pipeline over the union: the config's [lake] names zone A's dir, the flags zone B's ----------
    state = tmp_path / "pipeline-state"
    state.mkdir()
    lake = f'[lake]\ndirs = ["{zone_a}"]\n'
    code, split, stderr = pipeline("--config", str(write_config(tmp_path / "split.toml", state, drift + lake)),
                                   "--tenant", TENANT, "--as-of", as_of, "--lake-dir", str(zone_b),
                                   "--lake-url", lake_url)
    assert code == 0, stderr
    assert split["sampled"] == split["judged"] == alone["sampled"] == TOTAL
    assert [{k: s[k] for k in SIGNAL_FIELDS} for s in split["signals"]] == \
        [{k: s[k] for k in SIGNAL_FIELDS} for s in alone["signals"]]
    assert [s["adjusted_p"] for s in split["signals"]] == [s["adjusted_p"] for s in alone["signals"]]
    runs = ("as_of", "alpha", "judgments", "cells", "tested", "signals")
    assert [{k: r[k] for k in runs} for r in split["drift_runs"]] == [{k: r[k] for k in runs} for r in alone["drift_runs"]]

    # --- verdict daemon over the union ----------------------------------------------------------------------
    daemon_state = tmp_path / "daemon-state"
    daemon_state.mkdir()
    config = _daemon_config(tmp_path / "daemon.toml", daemon_state,
                            f'[lake]\ndirs = ["{zone_a}", "{zone_b}"]\nurls = ["{lake_url}"]\n')
    log = tmp_path / "daemon.log"
    command = [sys.executable, "-m", "verdict_daemon.cli.daemon", "--config", str(config)]
    daemon = subprocess.Popen(command, stderr=log.open("a"), env=env())
    try:
        _wait(lambda: (_state(daemon_state, "SELECT max(judgments) FROM drift_runs") or [(None,)])[0][0] == TOTAL * 4,
              240, "the daemon's drift run over every judgment")
        second = subprocess.run(command, capture_output=True, text=True, env=env(), timeout=60)
        assert second.returncode == 2 and '"already_running"' in second.stderr  # one daemon per state dir
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(90) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    logs = log.read_text()
    ready = next(line for line in logs.splitlines() if "verdict-daemon ready" in line)
    assert "Traceback" not in logs and all(str(x) in ready for x in (lake_url, zone_a, zone_b))
    assert _state(daemon_state, "SELECT count(*), count(DISTINCT trace_id) FROM judgment_attempts") == [(TOTAL, TOTAL)]
    answer = _state(daemon_state, f"""
        SELECT {', '.join(SIGNAL_FIELDS)} FROM drift_signals WHERE run_id = (
            SELECT run_id FROM drift_runs WHERE judgments = {TOTAL * 4} ORDER BY completed_at DESC LIMIT 1)""")
    assert [dict(zip(SIGNAL_FIELDS, row, strict=True)) for row in answer] == \
        [{k: s[k] for k in SIGNAL_FIELDS} for s in alone["signals"]]
