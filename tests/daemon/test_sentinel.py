"""The judge sentinel health check in `verdict-pipeline` (a real process) and in the daemon's jobs.

Judges are ScriptedModels (no network): `scripted_judge_model` fails truncated answers on completeness
(agreeing with the human labels below), `lenient_judge_model` passes everything (a bad judge)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import duckdb

from tests.daemon.cli import pipeline, write_config
from tests.daemon.conftest import NOW, make_config
from tests.daemon.lakes import synthetic_days, write_rows
from verdict_daemon.errors import ERROR_CODES
from verdict_daemon.service.daemon import Daemon

AS_OF = NOW.isoformat()
GATE = "[sentinel]\nminimum_examples = 6\nthreshold = 0.5\n"
GRAPH = '[[evaluators]]\nname = "graphy"\nkind = "graph"\ngraph = "tests.daemon.graphs:completeness_graph"\n'


def sentinel_file(path: Path, n: int = 10) -> Path:
    """n labelled examples: even ones complete (completeness PASS), odd ones cut off mid-sentence (FAIL)."""
    lines = []
    for i in range(n):
        complete = i % 2 == 0
        response = "Open the settings page, then choose the option you need." if complete else "Open the settings page, then"
        lines.append(json.dumps({"id": f"s{i}", "query": f"How do I change setting {i}?", "response": response,
                                 "labels": {"completeness": "PASS" if complete else "FAIL", "relevance": "PASS"}}))
    path.write_text("\n".join(lines) + "\n")
    return path


def small_lake(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=("billing.v1",), per_day=3))
    return data


def rows(data: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(data / "state.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def lenient(config: Path) -> Path:
    config.write_text(config.read_text().replace("lakes:scripted_judge_model", "lakes:lenient_judge_model"))
    return config


def test_a_healthy_judge_is_recorded_and_the_pipeline_proceeds(tmp_path):
    data = small_lake(tmp_path)
    config = write_config(tmp_path / "verdict.toml", data, GRAPH + GATE)
    code, summary, stderr = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF,
                                     "--judge-sentinel-file", str(sentinel_file(tmp_path / "sentinel.jsonl")))
    assert code == 0, stderr
    [health] = summary["sentinel_health"]  # the graph evaluator is not checked: the sentinel does not apply
    assert (health["evaluator"], health["status"], health["usable"], health["passed"]) == ("quality", "healthy", 10, 10)
    assert 0.5 <= health["pass_rate_low"] < 1.0 == health["pass_rate"]
    assert summary["judged"] > 0 and len(summary["drift_runs"]) == 2
    [row] = rows(data, "SELECT tenant_id, evaluator, fingerprint, status, examples, passed, threshold, minimum_examples, "
                       "results FROM sentinel_health")
    assert row[:4] == ("acme", "quality", summary["evaluators"][0]["fingerprint"], "healthy")
    assert row[4:8] == (10, 10, 0.5, 6)
    assert sorted(r["id"] for r in json.loads(row[8])) == [f"s{i}" for i in range(10)]


def test_a_bad_judge_exits_2_before_any_judging_or_drift(tmp_path):
    data = small_lake(tmp_path)
    config = lenient(write_config(tmp_path / "verdict.toml", data, GATE + f'file = "{tmp_path / "s.jsonl"}"\n'))
    sentinel_file(tmp_path / "s.jsonl")
    code, out, _ = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF)
    assert code == 2 and out["error"]["code"] == "judge_unhealthy" and "judge_unhealthy" in ERROR_CODES
    assert out["error"]["unhealthy"][0]["evaluator"] == "quality" and out["error"]["unhealthy"][0]["status"] == "degraded"
    assert "'quality' is degraded" in out["error"]["message"]
    assert rows(data, "SELECT status, usable, passed FROM sentinel_health") == [("degraded", 10, 5)]
    for table in ("judgment_attempts", "drift_runs", "sampled_traces"):
        assert rows(data, f"SELECT count(*) FROM {table}") == [(0,)], table


def test_too_few_examples_is_insufficient_data(tmp_path):
    data = small_lake(tmp_path)
    config = write_config(tmp_path / "verdict.toml", data, "[sentinel]\nminimum_examples = 11\nthreshold = 0.5\n")
    code, out, _ = pipeline("--config", str(config), "--tenant", "acme", "--as-of", AS_OF,
                            "--judge-sentinel-file", str(sentinel_file(tmp_path / "s.jsonl")))
    assert code == 2 and out["error"]["code"] == "judge_unhealthy"
    assert out["error"]["unhealthy"][0]["status"] == "insufficient_data"
    assert rows(data, "SELECT status, usable FROM sentinel_health") == [("insufficient_data", 10)]
    assert rows(data, "SELECT count(*) FROM judgment_attempts") == [(0,)]


def test_a_malformed_sentinel_file_is_invalid_config_naming_the_line_and_writes_nothing(tmp_path):
    data = small_lake(tmp_path)
    bad = sentinel_file(tmp_path / "s.jsonl", n=4)
    lines = bad.read_text().splitlines()
    lines[2] = lines[2].replace('"relevance": "PASS"', '"relevance": "MAYBE"')
    bad.write_text("\n".join(lines) + "\n")
    config = write_config(tmp_path / "verdict.toml", data)
    code, out, _ = pipeline("--config", str(config), "--tenant", "acme", "--judge-sentinel-file", str(bad))
    assert code == 2 and out["error"]["code"] == "invalid_config"
    assert f"{bad}:3:" in out["error"]["message"] and "MAYBE" in out["error"]["message"]
    assert not (data / "state.duckdb").exists()


def test_the_daemon_skips_judge_and_drift_of_an_unhealthy_judge_and_retries_next_tick(tmp_path, caplog):
    data = small_lake(tmp_path)
    sentinel = {"file": str(sentinel_file(tmp_path / "s.jsonl")), "minimum_examples": 6, "threshold": 0.5}
    bad = make_config(data, sentinel=sentinel).model_dump()
    bad["evaluators"][0]["model"] = "tests.daemon.lakes:lenient_judge_model"
    daemon = Daemon(type(make_config(data)).model_validate(bad), clock=lambda: NOW)
    daemon.sample()
    with caplog.at_level(logging.ERROR, logger="verdict.daemon"):
        daemon.judge()
        daemon.drift()
    skipped = [r.getMessage() for r in caplog.records if "error=judge_unhealthy" in r.getMessage()]
    assert len(skipped) == 4  # judge and drift, for each of the two tenants
    assert rows(data, "SELECT count(*) FROM sentinel_health WHERE status = 'degraded'") == [(4,)]
    assert rows(data, "SELECT count(*) FROM judgment_attempts") == rows(data, "SELECT count(*) FROM drift_runs") == [(0,)]

    healthy = Daemon(make_config(data, sentinel=sentinel), clock=lambda: NOW)
    healthy.judge()
    healthy.drift()  # reuses the judge job's healthy result (recheck_seconds), no second check
    assert rows(data, "SELECT count(*) FROM sentinel_health WHERE status = 'healthy'") == [(2,)]
    assert rows(data, "SELECT count(*) FROM judgment_attempts")[0][0] == 9 * 3
    assert rows(data, "SELECT count(*) FROM drift_runs")[0][0] == 2


def test_a_relative_sentinel_file_resolves_against_the_config_file(tmp_path):
    from verdict_daemon.config import load_config

    config = write_config(tmp_path / "verdict.toml", tmp_path, '[sentinel]\nfile = "sets/s.jsonl"\n')
    assert load_config(config).sentinel.file == tmp_path.resolve() / "sets" / "s.jsonl"
