"""bench/lake_read.py --twinned measures the identity rule where it merges every call: its lake must be that.

Every call of bench/collector_ingest.py's twinned lake is two spans of two instrumentations (one response id, the
same messages), plus the fresh segments' retried copies; through the real views `llm_calls` holds each call once.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from bench.collector_ingest import build_sql_lake
from collector.views import open_scoped
from verdict.tenancy import TenantId


def test_the_twinned_bench_lake_is_every_call_twice_and_llm_calls_once(tmp_path: Path):
    stored = build_sql_lake(tmp_path, 160_000, twinned=True)
    spans = f"read_parquet('{tmp_path}/spans/*/*/*.parquet', union_by_name = true)"
    with duckdb.connect() as con:
        (unique, calls, instrumentations), = con.execute(
            f"SELECT count(DISTINCT (trace_id, span_id)), count(DISTINCT response_id), "
            f"count(DISTINCT (dialect, scope_name)) FROM {spans}").fetchall()
        twins = con.execute(f"SELECT count(*) FROM (SELECT response_id FROM (SELECT DISTINCT trace_id, span_id, response_id, dialect FROM {spans}) "
                            "GROUP BY ALL HAVING count(*) = 2 AND count(DISTINCT dialect) = 2)").fetchone()
    assert stored == 160_000 and instrumentations == 2
    assert unique == 2 * calls and twins == (calls,)
    con = open_scoped(tmp_path, TenantId("bench"))
    try:
        assert con.execute("SELECT count(*), count(DISTINCT response_id), count(output_messages) FROM llm_calls"
                           ).fetchone() == (calls, calls, calls)
        assert con.execute("SELECT rule, count(*) FROM llm_call_duplicates GROUP BY ALL").fetchall() == [
            ("response_id", calls)]
    finally:
        con.close()
