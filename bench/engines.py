"""Benchmark: docs/scaling.md's "calls per intent per day" in DuckDB, ClickHouse (chDB) and Spark.

    .venv/bin/python bench/engines.py [--spans 1000000] [--runs 3]

The lake: two collector dirs of one tenant over 9 days, 20 intents, 5 % of the spans in both dirs
(exporter retries across collectors), written as compacted-size segments. Each engine runs the docs'
own recipe (the same code tests/engines checks against DuckDB) `--runs` times; printed: median
seconds and the ratio to DuckDB's. Spark's figure excludes starting its JVM session (printed apart).
The machine is shared: read the ratios, and rerun when a figure is close.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402

from tests.daemon.lakes import synthetic_days, write_rows  # noqa: E402
from tests.engines import recipes  # noqa: E402

INTENTS = tuple(f"intent{i:02d}.v1" for i in range(20))


def build(root: Path, spans: int) -> None:
    """Seed rows from the test helpers, multiplied in DuckDB with fresh span ids into each dir's partitions."""
    seed = root / "seed"
    write_rows(seed, "acme", synthetic_days(datetime(2026, 11, 30, tzinfo=UTC), intents=INTENTS, per_day=10))
    source = f"read_parquet('{seed}/spans/*/*/*.parquet', hive_partitioning = true)"
    copies = max(1, spans // duckdb.execute(f"SELECT count(*) FROM {source}").fetchall()[0][0])
    con = duckdb.connect()
    con.execute(f"""CREATE TABLE rows AS SELECT * REPLACE (substr(md5(span_id || n::VARCHAR), 1, 16) AS span_id),
                    hash(span_id, n) % 100 AS bucket FROM {source}, range({copies}) AS r(n)""")
    for name, where in (("a", "bucket < 55"), ("b", "bucket >= 50")):  # buckets 50-54: in both dirs
        target = root / name / "spans"
        target.mkdir(parents=True)
        con.execute(f"""COPY (SELECT * EXCLUDE (bucket) FROM rows WHERE {where} ORDER BY start_time)
                        TO '{target}' (FORMAT parquet, PARTITION_BY (tenant, date), COMPRESSION zstd)""")
    shutil.rmtree(seed)


def timed(run, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="verdict-engines-"))
    try:
        build(root, args.spans)
        lake = str(root)
        duck = duckdb.connect()
        duck_sql = recipes.duckdb_sql(f"read_parquet('{lake}/*/spans/*/*/*.parquet', hive_partitioning = true)")
        figures = {"DuckDB": timed(lambda: duck.sql(duck_sql).fetchall(), args.runs)}

        import chdb

        ch_sql = recipes.clickhouse_sql(lake)
        figures["ClickHouse (chDB)"] = timed(lambda: chdb.query(ch_sql, "JSONCompact"), args.runs)

        from pyspark.sql import SparkSession

        start = time.perf_counter()
        spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        session_s = time.perf_counter() - start
        recipe = recipes.spark_program(lake)

        def spark_run() -> None:
            namespace: dict = {}
            exec(recipe, namespace)
            namespace["calls_per_intent_per_day"].collect()

        figures["Spark (local[2])"] = timed(spark_run, args.runs)
        spark.stop()
        print(f"calls per intent per day over {args.spans:,} spans in 2 dirs (median of {args.runs}):")
        for engine, seconds in figures.items():
            print(f"  {engine:<20} {seconds:7.2f} s   {seconds / figures['DuckDB']:5.1f}x DuckDB")
        print(f"  (Spark session start, once: {session_s:.1f} s)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
