"""`verdict sql`: tenant scoping, dedupe, refused external access, formats, --print-views, error codes."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import subprocess
import sys
import time

import duckdb
import pytest

from collector.loadgen import export_request, span_ids
from tests.collector.conftest import land_request
from verdict.tenancy import validate_tenant_id


def verdict(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess; `env`: variables set over this process's."""
    return subprocess.run([sys.executable, "-m", "verdict_daemon.cli", *args], capture_output=True, text=True,
                          timeout=60, env=None if env is None else {**os.environ, **env})


@pytest.fixture(scope="module")
def two_tenants(tmp_path_factory):
    from collector import lake

    data_dir = tmp_path_factory.mktemp("sql") / "data"
    lake.prepare(data_dir)
    requests = {"acme": export_request(random.Random(1), 30, time.time_ns()),
                "globex": export_request(random.Random(2), 12, time.time_ns())}
    for tenant, request in requests.items():
        for _ in range(2):  # every span twice (an exporter retry)
            land_request(data_dir, request, tenant)
    return data_dir, {t: set(span_ids(r)) for t, r in requests.items()}


def test_queries_see_only_their_tenant_once(two_tenants):
    data_dir, ids = two_tenants
    for tenant in ("acme", "globex"):
        out = verdict("sql", "SELECT tenant_id, span_id FROM spans", "--data-dir", str(data_dir), "--tenant", tenant,
                      "--format", "json")
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout)
        assert {r["tenant_id"] for r in rows} == {tenant}
        assert sorted(r["span_id"] for r in rows) == sorted(ids[tenant])  # each once despite the duplicate
    out = verdict("sql", "SELECT count(*) AS n FROM llm_calls", "--data-dir", str(data_dir), "--tenant", "nobody",
                  "--format", "csv")
    assert out.returncode == 0 and out.stdout.splitlines() == ["n", "0"]


@pytest.mark.parametrize("query", [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_parquet('{data}/spans/tenant=globex/*/*.parquet')",
    "SELECT * FROM read_parquet('{data}/spans/tenant=acme/../tenant=globex/*/*.parquet')",
    "COPY (SELECT 1) TO '{data}/../leak.csv'",
    "COPY (SELECT 1) TO '{data}/spans/tenant=acme/leak.csv'",  # readable, yet never writable
    "SELECT 1; CREATE TABLE t AS SELECT 1",
    "ATTACH '{data}/../other.duckdb'",
    "SET enable_external_access = true",
    "INSTALL httpfs",
])
def test_external_access_is_refused(two_tenants, query):
    data_dir, _ = two_tenants
    out = verdict("sql", query.format(data=data_dir), "--data-dir", str(data_dir), "--tenant", "acme")
    assert out.returncode in (5, 6), out.stdout
    assert json.loads(out.stderr)["error"]["code"] in ("query_error", "access_denied")
    assert "Traceback" not in out.stderr
    assert not (data_dir.parent / "leak.csv").exists()
    assert not (data_dir / "spans" / "tenant=acme" / "leak.csv").exists()


def test_only_the_tenant_directory_is_readable(two_tenants):
    from collector.views import logs_tenant_dir, open_scoped, tenant_dir

    data_dir, _ = two_tenants
    acme = validate_tenant_id("acme")
    con = open_scoped(data_dir, acme)
    (allowed,) = con.execute("SELECT value FROM duckdb_settings() WHERE name = 'allowed_directories'").fetchone()
    # the tenant's spans and logs, no spill directory or anything else
    assert allowed.replace("'", "") == f"[{logs_tenant_dir(data_dir, acme)}/, {tenant_dir(data_dir, acme)}/]"


def test_five_documented_queries_run(two_tenants):
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "collector.md").read_text()
    queries = [block.strip() for block in doc.split("```sql")[1:]]
    queries = [q.split("```")[0].strip() for q in queries]
    assert len(queries) >= 5
    data_dir, _ = two_tenants
    for query in queries[:5]:
        out = verdict("sql", query, "--data-dir", str(data_dir), "--tenant", "acme", "--format", "csv")
        assert out.returncode == 0, (query, out.stderr)
        assert len(list(csv.reader(io.StringIO(out.stdout)))) >= 2


def test_calls_per_intent_match_an_independent_count(two_tenants):
    data_dir, _ = two_tenants
    out = verdict("sql", "SELECT intent_key, count(*) AS calls FROM llm_calls GROUP BY 1 ORDER BY 1",
                  "--data-dir", str(data_dir), "--tenant", "acme", "--format", "json")
    got = {r["intent_key"]: r["calls"] for r in json.loads(out.stdout)}
    request = export_request(random.Random(1), 30, 0)
    expected: dict[str, int] = {}
    for span in request.resource_spans[0].scope_spans[0].spans:
        intent = next(kv.value.string_value for kv in span.attributes if kv.key == "verdict.intent_key")
        expected[intent] = expected.get(intent, 0) + 1
    assert got == expected


def test_table_output_and_print_views_in_plain_duckdb(two_tenants):
    data_dir, ids = two_tenants
    out = verdict("sql", "SELECT span_id, input_tokens FROM llm_calls ORDER BY span_id LIMIT 3",
                  "--data-dir", str(data_dir), "--tenant", "globex")
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["span_id", "input_tokens"] and lines[-1] == "(3 rows)"
    views = verdict("sql", "--print-views", "--data-dir", str(data_dir), "--tenant", "globex")
    con = duckdb.connect()
    con.execute(views.stdout)
    assert {r[0] for r in con.execute("SELECT span_id FROM spans").fetchall()} == ids["globex"]


def test_error_codes(two_tenants, tmp_path):
    data_dir, _ = two_tenants
    for argv in (["SELECT 1"], ["--print-views"]):  # the tenant is validated once, before any lake path is built
        out = verdict("sql", *argv, "--data-dir", str(data_dir), "--tenant", "../acme", "--format", "json")
        assert out.returncode == 3 and json.loads(out.stderr)["error"] == {
            "code": "invalid_tenant", "message": "--tenant: invalid tenant id '../acme': use 1-63 characters of a-z, 0-9, '_' "
                                                 "or '-', starting with a letter or digit"}
    out = verdict("sql", "SELECT 1", "--data-dir", str(tmp_path / "missing"))
    assert out.returncode == 4 and json.loads(out.stderr)["error"]["code"] == "no_data_dir"
    out = verdict("sql", "SELEC nonsense", "--data-dir", str(data_dir))
    assert out.returncode == 5 and json.loads(out.stderr)["error"]["code"] == "query_error"


def test_segments_lacking_columns_still_query(tmp_path):
    """Older or foreign writers may omit columns: the views fill them with typed NULLs."""
    part = tmp_path / "data" / "spans" / "tenant=acme" / "date=2026-01-02"
    part.mkdir(parents=True)
    duckdb.execute(f"COPY (SELECT 'ab' AS trace_id, 'cd' AS span_id, 'chat' AS operation, "
                   f"TIMESTAMP_NS '2026-01-02 03:04:05' AS received_at) TO '{part}/0-x.parquet' (FORMAT parquet)")
    out = verdict("sql", "SELECT span_id, operation, input_tokens, intent_key FROM llm_calls",
                  "--data-dir", str(tmp_path / "data"), "--tenant", "acme", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [{"span_id": "cd", "operation": "chat", "input_tokens": None, "intent_key": None}]


def test_verdict_dispatcher_lists_sql():
    out = verdict()
    assert out.returncode == 2 and "sql" in out.stdout
    out = verdict("sql", "--help")
    assert out.returncode == 0 and "--print-views" in out.stdout and "--tenant" in out.stdout
    assert "VERDICT_DATA_DIR" in out.stdout and "access_denied" in out.stdout and "llm_calls" in out.stdout
