"""docs/scaling.md's engine recipes, executed: Spark (pyspark, local mode) and ClickHouse (chDB) read a
lake of two collector dirs that share some spans and must give DuckDB's answer row for row; the
Trino DDL (no Trino server runs offline) is checked against the span schema."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pytest

from tests import readme_blocks as rb
from tests.daemon.lakes import synthetic_days, write_rows
from verdict.semconv import SPAN_COLUMNS

pytestmark = pytest.mark.engines

SCALING = rb.ROOT / "docs/scaling.md"
DOC_LAKE = "/lake"  # the docs' lake root; the tests substitute their own


def _block(lang: str, marker: str) -> str:
    (block,) = [b.code for b in rb.parse(SCALING.read_text()) if b.lang == lang and marker in b.code]
    return block


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    """Two collectors' dirs: acme's traffic split with 20 spans in both (an exporter retried against
    another collector), globex in one; some token counts set, so sums must skip the copies."""
    root = tmp_path_factory.mktemp("lake")
    rows = synthetic_days(datetime(2026, 11, 20, tzinfo=UTC), intents=("billing.v1", "coding.v2"), per_day=30,
                          days=3)
    for i, row in enumerate(rows):
        row["input_tokens"] = 10 + i % 7 if i % 3 else None
    rows[5]["intent_key"] = None  # not a call of any intent: filtered out by every engine
    write_rows(root / "a", "acme", rows[:120])
    write_rows(root / "b", "acme", rows[100:])
    write_rows(root / "b", "globex", synthetic_days(datetime(2026, 11, 20, tzinfo=UTC), intents=("x.v1",),
                                                    per_day=5, days=2, seed=3))
    return root


def _duckdb_answer(lake: Path) -> list[tuple]:
    return duckdb.execute(f"""
        SELECT tenant, intent_key, date, count(*), sum(coalesce(input_tokens, 0)), epoch_ns(min(start_time))
        FROM (SELECT DISTINCT ON (trace_id, span_id) *
              FROM read_parquet('{lake}/*/spans/*/*/*.parquet', hive_partitioning = true))
        WHERE intent_key IS NOT NULL
        GROUP BY ALL ORDER BY ALL""").fetchall()


def test_the_reference_answer_sees_the_copies_once(lake):
    answer = _duckdb_answer(lake)
    assert sum(row[3] for row in answer) == 3 * 2 * 30 - 1 + 2 * 5  # each span once, the intent-less one out
    assert {row[0] for row in answer} == {"acme", "globex"}


def test_clickhouse_recipe_gives_duckdbs_answer(lake):
    import chdb

    sql = _block("sql", "use_hive_partitioning").replace(DOC_LAKE, str(lake))
    result = chdb.query(sql, "JSONCompact")
    rows = [(t, i, date.fromisoformat(d), int(c), int(s), int(f)) for t, i, d, c, s, f in json.loads(str(result))["data"]]
    assert rows == _duckdb_answer(lake)


def test_spark_recipe_gives_duckdbs_answer(lake):
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    try:
        namespace: dict = {}
        exec(_block("python", "SparkSession").replace(DOC_LAKE, str(lake)), namespace)  # the docs' code as written
        rows = [tuple(r) for r in namespace["calls_per_intent_per_day"].collect()]
    finally:
        spark.stop()
    assert rows == _duckdb_answer(lake)


_TRINO_TYPES = {"string": "varchar", "int64": "bigint", "timestamp_ns": "timestamp(9)", "string_list": "array(varchar)"}


def test_trino_ddl_matches_the_span_schema():
    ddl = _block("text", "CREATE TABLE hive.verdict.spans")
    body = ddl[ddl.index("(") + 1 : ddl.index(")\nWITH")]
    columns = dict(re.findall(r'"?(\w+)"? ([a-z]+(?:\(\d+\))?)', re.sub(r"--[^\n]*", "", body)))
    schema = {c.name: _TRINO_TYPES[c.arrow_type] for c in SPAN_COLUMNS}
    partition_keys = {"tenant": "varchar", "date": "varchar"}
    assert set(partition_keys.items()) <= set(columns.items())
    stored = {name: kind for name, kind in columns.items() if name not in partition_keys}
    assert stored and all(schema.get(name) == kind for name, kind in stored.items()), (stored, schema)
