"""`verdict sql` tables over state.duckdb: latest attempt per trace × dimension, tenant-scoped, joinable."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb

from collector.views import view_statements
from tests.daemon.conftest import NOW, make_config
from tests.daemon.lakes import synthetic_days, write_rows
from verdict.tenancy import TenantId
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.store.views import add_state_views


def _scoped(data_dir, tenant):
    con = duckdb.connect()
    for statement in view_statements(data_dir, tenant):
        con.execute(statement)
    add_state_views(con, data_dir, tenant)
    return con


def test_views_join_llm_calls_and_stay_in_their_tenant(lake):
    write_rows(lake, "globex", synthetic_days(NOW, intents=("other.v1",), per_day=5, seed=9))
    config = make_config(lake)
    evaluators = build_evaluators(config)
    for tenant in ("acme", "globex"):
        run_cycle(config, TenantId(tenant), NOW, evaluators)
    con = _scoped(lake, "acme")
    assert con.execute("SELECT DISTINCT tenant_id FROM judgments").fetchall() == [("acme",)]
    per_dimension = con.execute(
        "SELECT count(*), count(DISTINCT trace_id), count(DISTINCT dimension) FROM judgments").fetchone()
    assert per_dimension == (1440 * 4, 1440, 4)
    joined = con.execute("""
        SELECT c.intent_key, round(avg((j.value = 'PASS')::INT), 3) AS pass_rate
        FROM judgments j JOIN llm_calls c USING (trace_id)
        WHERE j.dimension = 'completeness' AND j.started_at >= TIMESTAMP '2026-11-19'
        GROUP BY 1 ORDER BY 1""").fetchall()
    assert joined == [("account.v1", 1.0), ("billing.v1", 1.0), ("returns.v1", 1.0), ("search.v1", 0.0)]
    signals = con.execute("SELECT cluster, dimension, kind, evaluator FROM drift_signals").fetchall()
    assert signals == [("search.v1", "completeness", "regression", "quality")]
    assert con.execute("SELECT count(*) FROM drift_runs").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name LIKE 'verdict%'").fetchone()[0] == 0
    other = _scoped(lake, "globex")
    assert other.execute("SELECT DISTINCT intent_key FROM judgments").fetchall() == [("other.v1",)]
    assert other.execute("SELECT count(*) FROM drift_signals").fetchone()[0] == 0


def test_views_exist_before_anything_was_judged(tmp_path):
    con = _scoped(tmp_path, "acme")
    assert con.execute("SELECT count(*) FROM judgments").fetchone()[0] == 0
    assert "fingerprint" in [d[0] for d in con.execute("SELECT * FROM drift_signals").description]


def test_the_documented_queries_run(lake):
    config = make_config(lake)
    run_cycle(config, TenantId("acme"), NOW, build_evaluators(config))
    doc = (Path(__file__).resolve().parents[2] / "docs" / "daemon.md").read_text()
    block = doc.split("```sql\n", 1)[1].split("```", 1)[0]
    queries = [q for q in block.split(";") if q.strip()]
    assert len(queries) == 3
    con = _scoped(lake, "acme")
    per_day, worst, one_trace = (con.execute(q).fetchall() for q in queries)
    assert {row[0] for row in per_day} == {"billing.v1", "search.v1", "returns.v1", "account.v1"}
    assert one_trace == []  # the documented trace id is not in this lake
    trace = con.execute("SELECT trace_id FROM judgments LIMIT 1").fetchone()[0]
    rows = con.execute(queries[2].replace("4bf92f3577b34da6a3ce929d0e0e4736", trace)).fetchall()
    assert len(rows) == 4 and worst == []  # the fixture's days are older than "this week"


def test_verdict_sql_command_shows_judgments_and_stays_locked_down(lake):
    """The real `verdict sql` CLI (a subprocess) sees the daemon's tables next to the span views, only
    for its tenant, and user SQL still cannot read other files or write."""
    import json
    import subprocess
    import sys

    config = make_config(lake)
    run_cycle(config, TenantId("acme"), NOW, build_evaluators(config))

    def verdict_sql(query, tenant="acme"):
        return subprocess.run(
            [sys.executable, "-m", "verdict_daemon.cli", "sql", query, "--data-dir", str(lake), "--tenant", tenant,
             "--format", "json"], capture_output=True, text=True, timeout=120)

    done = verdict_sql("SELECT cluster, dimension, kind FROM drift_signals")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"cluster": "search.v1", "dimension": "completeness", "kind": "regression"}]
    joined = verdict_sql("SELECT count(*) AS n FROM judgments j JOIN llm_calls c USING (trace_id)")
    assert joined.returncode == 0 and json.loads(joined.stdout)[0]["n"] > 0
    other = verdict_sql("SELECT count(*) AS n FROM judgments", tenant="globex")
    assert other.returncode == 0 and json.loads(other.stdout) == [{"n": 0}]
    escaped = verdict_sql("SELECT * FROM read_parquet('/etc/passwd')")
    assert escaped.returncode == 6 and "Traceback" not in escaped.stderr
    written = verdict_sql("CREATE TABLE x AS SELECT 1")
    assert written.returncode == 6


def test_views_over_chosen_date_partitions_read_only_those(lake):
    """The sampler's `llm_calls` covers its lookback's partitions only (and a day with no segment binds)."""
    days = sorted({d for (d,) in _scoped(lake, "acme").execute("SELECT DISTINCT date FROM spans").fetchall()})
    con = duckdb.connect()
    for statement in view_statements(lake, TenantId("acme"), [days[-2], days[-1], days[-1] + timedelta(days=1)]):
        con.execute(statement)
    every = _scoped(lake, "acme").execute("SELECT date, count(*) FROM llm_calls GROUP BY 1").fetchall()
    assert sorted(con.execute("SELECT date, count(*) FROM llm_calls GROUP BY 1").fetchall()) == \
        sorted(r for r in every if r[0] in days[-2:])
    assert len(days) > 2
