"""No silent empty (issue 30 item 1), on real processes over loopback: a tenant that matches nothing is said so.

The instrumented app (tests/daemon/app.py: the real SDK, openai client and OTLP exporter) calls
`verdict.init(tenant_id="acme")` against a tokenless collector process, which lands the spans in
`__verdict_local__`. The collector counts and logs (once per sender) the claim it ignored; `verdict sql`,
`report` and the UI's overview refuse `--tenant acme` with `unknown_tenant` listing `__verdict_local__`, and
`verdict pipeline` warns in its summary.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.collector.conftest import Collector
from tests.daemon.app import DAYS
from tests.daemon.cli import closed_error, env, pipeline, write_config
from tests.ui.conftest import start_server

LOCAL = "__verdict_local__"


def verdict(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verdict_daemon.cli", *args], capture_output=True, text=True,
                          env=env(), timeout=180)


@pytest.fixture(scope="module")
def claimed(tmp_path_factory, _fake_openai_server) -> tuple[Path, dict, list[str]]:
    """The data dir after the app claimed tenant acme against a tokenless collector; its /stats and log."""
    _fake_openai_server.reset()  # no script or key left by an earlier test (module scope: `fake_openai` is per test)
    data = tmp_path_factory.mktemp("claimed") / "data"
    collector = Collector(data).start()
    try:
        app = subprocess.run([sys.executable, "-m", "tests.daemon.app", collector.url, _fake_openai_server.base_url,
                              "acme", "1", "billing.v1"], capture_output=True, text=True, env=env(), timeout=300)
        assert app.returncode == 0, app.stderr[-2000:]
        stats = collector.stats()
    finally:
        assert collector.stop() == 0
    return data, stats, collector.log


def test_an_ignored_tenant_claim_is_counted_and_logged_once_per_sender(claimed):
    data, stats, log = claimed
    assert stats["spans_written"] >= DAYS and stats["spans_claim_ignored"] == stats["spans_received"]
    warnings = [line for line in log if "claim tenant 'acme'" in line]
    assert len(warnings) == 1, log  # DAYS exports from one sender, one line
    assert f"they land in {LOCAL}" in warnings[0] and "--allow-claimed-tenant" in warnings[0]
    assert [p.name for p in (data / "spans").iterdir()] == [f"tenant={LOCAL}"]


def test_report_refuses_a_tenant_without_data_naming_those_with_data(claimed, tmp_path):
    done = verdict("report", "--out", str(tmp_path / "r.html"), "--data-dir", str(claimed[0]), "--tenant", "acme")
    error = closed_error(done.stderr)
    assert (done.returncode, done.stdout, error["code"]) == (2, "", "unknown_tenant"), done.stderr
    assert error["tenants"] == [LOCAL] and f"tenants with data: {LOCAL}" in error["message"]


def test_sql_warns_about_a_tenant_without_data_naming_those_with_data(claimed):
    data = claimed[0]
    done = verdict("sql", "SELECT count(*) AS n FROM llm_calls", "--data-dir", str(data), "--tenant", "acme",
                   "--format", "json")
    assert (done.returncode, json.loads(done.stdout)) == (0, [{"n": 0}])  # the answer stands: it may be right
    assert done.stderr == (f"verdict sql: warning: tenant 'acme' has no spans and no state in {data.resolve()}; "
                           f"tenants with data: {LOCAL}\n")
    done = verdict("sql", "SELECT count(*) AS n FROM llm_calls", "--data-dir", str(data), "--tenant", LOCAL,
                   "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)[0]["n"] >= DAYS and done.stderr == ""


def test_pipeline_warns_in_its_summary_about_a_tenant_without_data(claimed, tmp_path):
    data = claimed[0]
    code, summary, _ = pipeline("--data-dir", str(data), "--tenant", "acme",
                                "--judge-model", "tests.daemon.lakes:scripted_judge_model")
    assert code == 0 and summary["sampled"] == 0
    assert summary["warnings"] == [f"tenant 'acme' has no spans and no state in {data.resolve()}; "
                                   f"tenants with data: {LOCAL}"]


def test_the_ui_overview_of_a_tenant_without_data_names_those_with_data(claimed):
    process, url = start_server(claimed[0], "--tenant", "acme")
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{url}/", timeout=60)
        assert refused.value.code == 404
        assert f"tenants with data: {LOCAL}" in refused.value.read().decode()
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_pipeline_config_defaults_to_its_only_tenant_and_refuses_another(claimed, tmp_path):
    config = write_config(tmp_path / "verdict.toml", claimed[0], tenant=LOCAL)
    code, summary, stderr = pipeline("--config", str(config), "--as-of", "2026-01-01T00:00:00")
    assert code == 0 and summary["tenant_id"] == LOCAL, stderr
    code, document, _ = pipeline("--config", str(config), "--tenant", "acme")
    assert code == 2 and document["error"]["code"] == "invalid_config"
    assert document["error"]["message"] == f"--tenant 'acme' is not a [[tenants]] entry of {config} (configured: {LOCAL})"


def test_a_judge_answering_prose_fails_the_run_with_low_coverage(tmp_path, fake_openai):
    from tests.daemon.conftest import NOW
    from tests.daemon.lakes import synthetic_days, write_rows
    from tests.fakes import Reply

    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=("billing.v1",), per_day=2))
    config = write_config(tmp_path / "verdict.toml", data)
    config.write_text(config.read_text().replace('"tests.daemon.lakes:scripted_judge_model"', '"openai/gpt-4o-mini"'))
    fake_openai.default = Reply("The answer looks helpful and complete to me.")  # prose, never the rubric's JSON
    done = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "pipeline", "--config", str(config),
                           "--tenant", "acme", "--as-of", NOW.isoformat(), "--fail-on-signal"], capture_output=True, text=True,
                          env={**env(), "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_openai.base_url},
                          timeout=180)
    error = closed_error(done.stderr)
    assert (done.returncode, error["code"]) == (2, "low_coverage"), done.stderr
    assert error["message"].startswith("evaluator 'quality': 0 usable judgment(s) of 18 trace(s) to judge, at most "
                                       "0% of at least 10"), error
    assert "  warning: evaluator 'quality': 0 usable" in done.stdout  # the summary comes first, saying it too


def test_the_summary_says_why_cells_were_not_tested(tmp_path):
    from tests.daemon.conftest import NOW
    from tests.daemon.lakes import synthetic_days, write_rows

    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=("billing.v1",), per_day=2))
    code, summary, stderr = pipeline("--config", str(write_config(tmp_path / "verdict.toml", data)),
                                     "--tenant", "acme", "--as-of", NOW.isoformat())
    assert code == 0, stderr
    (run,) = summary["drift_runs"]
    assert run["tested"] == 0 < run["cells"] and run["min_usable"] == 30
    assert run["not_tested"] == (f"{run['cells']} of {run['cells']} cells not tested: fewer than min_usable 30 usable "
                                 "judgments in the current window or in the windows compared against ([drift] min_usable)")
