"""docs/scaling.md's engine recipes, executed: Spark (pyspark, local mode) and ClickHouse (chDB) read a
lake of two collector dirs that share some spans, on local disk and on an S3-compatible server on loopback
(moto, as tests/collector starts it), and must give DuckDB's answer row for row; the Trino DDL (no Trino
server runs offline) is checked against the span schema."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from tests.collector.s3_server import start_s3_server
from tests.daemon.lakes import synthetic_days, write_rows
from tests.engines import recipes
from verdict.semconv import SPAN_COLUMNS

pytestmark = pytest.mark.engines


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


@pytest.fixture(scope="module")
def s3_lake(lake):
    """The same two dirs uploaded to a bucket on the loopback S3 server (as the collectors ship them)."""
    from collector.objectstore import ObjectLake

    server = start_s3_server()
    try:
        bucket = server.new_bucket()
        with pytest.MonkeyPatch.context() as mp:
            for name, value in server.env.items():
                mp.setenv(name, value)
            for name in ("a", "b"):
                remote = ObjectLake(f"s3://{bucket}/lake/{name}")
                for f in sorted((lake / name).rglob("*.parquet")):
                    remote.upload(f, f.relative_to(lake / name).as_posix())
            yield recipes.S3Lake(server.endpoint, bucket, "lake", server.env["AWS_ACCESS_KEY_ID"],
                                 server.env["AWS_SECRET_ACCESS_KEY"]), server.env
    finally:
        server.stop()


def _duckdb_answer(lake: Path) -> list[tuple]:
    return duckdb.execute(recipes.duckdb_sql(f"read_parquet('{lake}/*/spans/*/*/*.parquet', hive_partitioning = true)"
                                             )).fetchall()


def test_the_reference_answer_sees_the_copies_once(lake):
    answer = _duckdb_answer(lake)
    assert sum(row[3] for row in answer) == 3 * 2 * 30 - 1 + 2 * 5  # each span once, the intent-less one out
    assert {row[0] for row in answer} == {"acme", "globex"}


def test_clickhouse_recipe_gives_duckdbs_answer(lake):
    assert recipes.clickhouse_rows(str(lake)) == _duckdb_answer(lake)


@pytest.mark.objectstore
def test_clickhouse_recipe_on_object_storage_gives_duckdbs_answer(lake, s3_lake):
    s3, _ = s3_lake
    assert "s3('http://127.0.0.1:" in recipes.clickhouse_sql(s3)  # the docs' s3() source, not file()
    assert recipes.clickhouse_rows(s3) == _duckdb_answer(lake)


def test_spark_recipe_gives_duckdbs_answer(lake):
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    try:
        namespace: dict = {}
        exec(recipes.spark_program(str(lake)), namespace)  # the docs' code as written
        rows = [tuple(r) for r in namespace["calls_per_intent_per_day"].collect()]
    finally:
        spark.stop()
    assert rows == _duckdb_answer(lake)


@pytest.mark.objectstore
def test_spark_recipe_on_object_storage_gives_duckdbs_answer(lake, s3_lake):
    """The docs' s3a session and query in a fresh Python (Spark's jars are fixed when its JVM starts)."""
    s3, env = s3_lake
    assert "s3a://" in recipes.spark_program(s3)
    assert recipes.spark_rows_in_new_process(s3, env) == _duckdb_answer(lake)


_TRINO_TYPES = {"string": "varchar", "int64": "bigint", "timestamp_ns": "timestamp(9)", "string_list": "array(varchar)"}


def test_trino_ddl_matches_the_span_schema():
    ddl = recipes.block("text", "CREATE TABLE hive.verdict.spans")
    body = ddl[ddl.index("(") + 1 : ddl.index(")\nWITH")]
    columns = dict(re.findall(r'"?(\w+)"? ([a-z]+(?:\(\d+\))?)', re.sub(r"--[^\n]*", "", body)))
    schema = {c.name: _TRINO_TYPES[c.arrow_type] for c in SPAN_COLUMNS}
    partition_keys = {"tenant": "varchar", "date": "varchar"}
    assert set(partition_keys.items()) <= set(columns.items())
    stored = {name: kind for name, kind in columns.items() if name not in partition_keys}
    assert stored and all(schema.get(name) == kind for name, kind in stored.items()), (stored, schema)
