"""`verdict-pipeline` end to end with the real judge on ~20 traces, the sentinel gate's verdict on it, and
the early stop against a server that refuses a parameter. Asserted: the states and the errors the run
reports, never how well SmolLM2 judges."""

from __future__ import annotations

import json

import duckdb
import pytest

from tests.daemon.cli import closed_error, pipeline, write_config
from tests.daemon.conftest import NOW
from tests.daemon.lakes import synthetic_days, write_rows

AS_OF = NOW.isoformat()
RUBRIC = """name: realmodel
version: 1
dimensions:
  - name: relevance
    description: The answer addresses the user's question.
"""


def _sentinel_file(tmp_path, n: int):
    """n labelled examples for the rubric above: even ones answer the question (relevance PASS), odd ones do not."""
    lines = []
    for i in range(n):
        relevant = i % 2 == 0
        response = "Open the settings page, then choose the option you need." if relevant else "Bananas are yellow."
        lines.append(json.dumps({"id": f"s{i}", "query": f"How do I change setting {i}?", "response": response,
                                 "labels": {"relevance": "PASS" if relevant else "FAIL"}}))
    path = tmp_path / "sentinel.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _lake(tmp_path):
    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=("billing.v1", "search.v1"), per_day=1))  # 18 traces
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    return data


def _config(tmp_path, data, model: str, extra: str = ""):
    config = write_config(tmp_path / "verdict.toml", data, f"rubric_file = \"{tmp_path / 'rubric.yaml'}\"\n"
                          f"per_dimension = true\n[judging]\nconcurrency = 2\n{extra}")
    config.write_text(config.read_text().replace("tests.daemon.lakes:scripted_judge_model", model))
    return config


@pytest.fixture
def run(llama_server, monkeypatch):
    """`run(*args)`: verdict-pipeline as a process, its judge pointed at the tier's server."""
    monkeypatch.setenv("OPENAI_BASE_URL", llama_server.base_url)  # the process inherits it (tests.daemon.cli.env)
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    return lambda *args: pipeline(*args, "--tenant", "acme", "--as-of", AS_OF, timeout=480)


def _attempt_errors(data) -> list[tuple]:
    con = duckdb.connect(str(data / "state.duckdb"), read_only=True)
    try:
        return con.execute("SELECT status, error_code, count(*) FROM judgment_attempts GROUP BY ALL ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_the_pipeline_judges_every_sampled_trace_with_the_real_judge(run, tmp_path):
    data = _lake(tmp_path)
    code, summary, stderr = run("--config", str(_config(tmp_path, data, "tests.realmodel.models:judge_model")))
    (evaluator,) = summary["evaluators"]
    # No usable judgment of 18 traces (a 135M model often gives none) fails the run as low coverage (issue 30).
    low = evaluator["judged"] == 0
    assert (code, summary.get("error", {}).get("code")) == ((2, "low_coverage") if low else (0, None)), stderr
    assert "Traceback" not in stderr, stderr
    assert summary["sampled"] == 18 and evaluator["pending"] == 18
    assert evaluator["input_tokens"] > 0 and evaluator["output_tokens"] > 0
    states = _attempt_errors(data)
    # Every attempt is OK or an unusable reply; none is a refused request or an outage.
    assert {error for _, error, _ in states} <= {None, "invalid_reply"}, states
    if evaluator["early_stop"] is None:
        assert evaluator["judged"] + evaluator["errors"] == 18
    else:  # every first result was unusable: the run stopped instead of spending the rest
        assert evaluator["judged"] == 0 and "invalid_reply" in evaluator["early_stop"]
        assert evaluator["errors"] < 18


def test_the_sentinel_gate_gives_its_verdict_on_the_real_judge_before_any_judging(run, tmp_path):
    data = _lake(tmp_path)
    config = _config(tmp_path, data, "tests.realmodel.models:judge_model",
                     "[sentinel]\nminimum_examples = 4\nthreshold = 0.5\n")
    code, summary, stderr = run("--config", str(config),
                                 "--judge-sentinel-file", str(_sentinel_file(tmp_path, n=4)))
    if code == 0:
        (health,) = summary["sentinel_health"]
        assert health["status"] == "healthy"
    else:
        assert code == 2 and closed_error(stderr)["code"] == "judge_unhealthy", stderr
        assert not (data / "state.duckdb").exists() or _attempt_errors(data) == []  # nothing judged


def test_a_refused_parameter_stops_the_run_early_with_the_servers_reason(run, tmp_path):
    data = _lake(tmp_path)
    config = _config(tmp_path, data, "tests.realmodel.models:refused_parameter_model", "early_stop_after = 3\n")
    code, summary, stderr = run("--config", str(config))
    assert (code, summary["error"]["code"]) == (2, "low_coverage") and "Traceback" not in stderr, stderr
    (evaluator,) = summary["evaluators"]
    assert evaluator["judged"] == 0 and 3 <= evaluator["errors"] <= 3 + 2  # the probe, plus what was in flight
    assert evaluator["early_stop"].startswith("stopped early: the first 3 result(s) all failed with ")
    assert "frequency_penalty" in evaluator["early_stop"]  # the server's reason reaches the operator
