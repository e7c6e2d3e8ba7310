"""`verdict-pipeline --registry-mode active` and the daemon's `[clustering] registry_mode = "active"`:
the tenant's active version drives the clusters drift reads, one version at a time; no active
version is the closed error `no_active_registry` before anything is sampled or judged."""

from __future__ import annotations

import logging

import duckdb
import pytest

from tests.clustering.cli import lifecycle, ok
from tests.daemon.cli import pipeline, write_config
from tests.daemon.conftest import INTENTS, NOW, make_config
from tests.daemon.lakes import synthetic_days, write_rows
from verdict_daemon.service.daemon import Daemon

AS_OF = NOW.isoformat()


@pytest.fixture
def lake(tmp_path):
    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=INTENTS, per_day=40, corrupt="search.v1"))
    return data


def _rows(data_dir, sql: str):
    con = duckdb.connect(str(data_dir / "state.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.slow  # four real pipeline processes (~25 s here); CI runs it
def test_pipeline_uses_the_active_version_and_switches_back_cleanly(lake, tmp_path):
    config = write_config(tmp_path / "verdict.toml", lake)
    code, out, stderr = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF,
                                 "--registry-mode", "active")
    assert code == 2 and out["error"]["code"] == "no_active_registry" and "Traceback" not in stderr
    assert _rows(lake, "SELECT count(*) FROM sampled_traces") == [(0,)]  # failed before sampling or judging

    version = lifecycle(lake, cutoff=AS_OF, through=AS_OF)
    code, summary, stderr = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF,
                                     "--registry-mode", "active")
    assert code == 0, stderr
    assert summary["registry_mode"] == "active" and summary["registry_version"] == version
    assert [(s["cluster"], s["dimension"], s["kind"]) for s in summary["signals"]] == \
        [("search.v1", "completeness", "regression")]
    assert _rows(lake, "SELECT DISTINCT method FROM cluster_assignments") == [(f"registry:{version}",)]
    assert _rows(lake, "SELECT count(*) FROM cluster_assignments") == [(summary["sampled"],)]

    code, summary, _ = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF,
                                "--registry-mode", "off")
    assert code == 0 and summary["registry_version"] is None
    assert _rows(lake, "SELECT DISTINCT method FROM cluster_assignments") == [("intent_key",)]  # never a mix

    # another version becomes active: its rows replace the intent-key rows in one step
    second = lifecycle(lake, cutoff="2026-11-19T00:00:00+00:00", through=AS_OF, generation=1)
    code, summary, _ = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF,
                                "--registry-mode", "active")
    assert code == 0 and summary["registry_version"] == second != version
    assert _rows(lake, "SELECT DISTINCT method FROM cluster_assignments") == [(f"registry:{second}",)]
    assert _rows(lake, "SELECT count(*) FROM cluster_assignments") == _rows(lake, "SELECT count(*) FROM sampled_traces")
    assert [(s["cluster"], s["dimension"]) for s in summary["signals"]] == [("search.v1", "completeness")]


def test_daemon_in_active_mode_needs_an_active_version_and_then_drifts_on_it(lake, caplog):
    config = make_config(lake, tenants=[{"id": "acme"}], clustering={"registry_mode": "active"})
    daemon = Daemon(config, clock=lambda: NOW)
    daemon.sample()
    daemon.judge()
    with caplog.at_level(logging.ERROR, logger="verdict.daemon"):
        daemon.assign()
        daemon.drift()
    assert "job=assign tenant=acme error=no_active_registry" in caplog.text
    assert "job=drift tenant=acme error=no_active_registry" in caplog.text
    assert _rows(lake, "SELECT count(*) FROM drift_runs") == [(0,)]

    version = lifecycle(lake, cutoff=AS_OF, through=AS_OF)
    daemon.drift()
    assert _rows(lake, "SELECT DISTINCT method FROM cluster_assignments") == [(f"registry:{version}",)]
    signals = _rows(lake, "SELECT cluster, dimension, kind FROM drift_signals")
    assert signals == [("search.v1", "completeness", "regression")]
    assert ok(lake, "inspect")["active_version"] == version
