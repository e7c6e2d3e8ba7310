"""docs/scaling.md's engine recipes as code the tests (tests/engines) and the benches (bench/engines.py,
bench/lake_read.py) run: each block is taken from the page and only its placeholders are substituted (the
lake root, the s3a jars' folder, the S3 endpoint, bucket and keys), so what runs is what the page says."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from tests import readme_blocks as rb

SCALING = rb.ROOT / "docs/scaling.md"
DOC_LAKE = "/lake"  # the docs' lake root
DOC_S3A_JARS = "/opt/spark-s3a"  # the docs' folder of hadoop-aws and the AWS SDK bundle
# Where `make spark-s3a` puts those two jars (taken from a PyPI package: Maven is not reachable here).
S3A_JARS = Path(sys.prefix) / "spark-s3a"
_CH_LOCAL_SOURCE = "file('/lake/*/spans/*/*/*.parquet', Parquet)"


def block(lang: str, marker: str) -> str:
    (found,) = [b.code for b in rb.parse(SCALING.read_text()) if b.lang == lang and marker in b.code]
    return found


def duckdb_sql(source: str) -> str:
    """The reference answer of "calls per intent per day" in DuckDB over `source` (a read_parquet(...))."""
    return f"""
        SELECT tenant, intent_key, date, count(*), sum(coalesce(input_tokens, 0)), epoch_ns(min(start_time))
        FROM (SELECT DISTINCT ON (trace_id, span_id) * FROM {source})
        WHERE intent_key IS NOT NULL
        GROUP BY ALL ORDER BY ALL"""


@dataclass(frozen=True)
class S3Lake:
    """A lake of collector dirs under `s3://bucket/prefix/<dir>/spans/...` on an S3-compatible endpoint."""

    endpoint: str
    bucket: str
    prefix: str
    access_key: str
    secret_key: str


def clickhouse_sql(lake: str | S3Lake) -> str:
    """The docs' ClickHouse query over a local lake root, or with the docs' `s3()` source on a bucket."""
    sql = block("sql", "use_hive_partitioning")
    if isinstance(lake, str):
        return sql.replace(DOC_LAKE, lake)
    source = block("text", "s3('").strip()
    for doc, value in (("http://127.0.0.1:9000", lake.endpoint), ("/bucket/lake/", f"/{lake.bucket}/{lake.prefix}/"),
                       ("'AWS_ACCESS_KEY_ID'", f"'{lake.access_key}'"),
                       ("'AWS_SECRET_ACCESS_KEY'", f"'{lake.secret_key}'")):
        assert doc in source, (doc, source)
        source = source.replace(doc, value)
    assert _CH_LOCAL_SOURCE in sql, sql
    return sql.replace(_CH_LOCAL_SOURCE, source)


def clickhouse_rows(lake: str | S3Lake) -> list[tuple]:
    import chdb

    result = chdb.query(clickhouse_sql(lake), "JSONCompact")
    rows = json.loads(str(result))["data"]
    return [(t, i, date.fromisoformat(d), int(c), int(s), int(f)) for t, i, d, c, s, f in rows]


def s3a_jars() -> Path:
    jars = sorted(S3A_JARS.glob("*.jar"))
    if len(jars) != 2:
        raise RuntimeError(f"Spark on S3 needs hadoop-aws and the AWS SDK bundle in {S3A_JARS}: run `make spark-s3a`")
    return S3A_JARS


def spark_session_code(lake: S3Lake) -> str:
    """The docs' s3a session block, its jars where `make spark-s3a` put them."""
    return block("python", "fs.s3a.endpoint").replace(DOC_S3A_JARS, str(s3a_jars()))


def spark_query_code(lake: str | S3Lake, dirs: Sequence[str] = ("a", "b")) -> str:
    """The docs' query block over the lake's collector `dirs` (the docs name two, a and b)."""
    root = lake if isinstance(lake, str) else f"s3a://{lake.bucket}/{lake.prefix}"
    code, n = re.subn(r"(?m)^dirs = \[.*\]$", f"dirs = {[f'{root}/{d}/spans' for d in dirs]!r}",
                      block("python", "calls_per_intent_per_day ="))
    assert n == 1, code
    return code


def spark_program(lake: str | S3Lake, dirs: Sequence[str] = ("a", "b")) -> str:
    """The docs' Spark code as one program: the s3a session first when the lake is on a bucket."""
    query = spark_query_code(lake, dirs)
    return query if isinstance(lake, str) else spark_session_code(lake) + query


def spark_rows_in_new_process(lake: str | S3Lake, env: dict[str, str]) -> list[tuple]:
    """Run the program in a fresh Python (its own Spark session, as a reader's script would), one local
    core; the rows come back as JSON (dates as ISO strings)."""
    program = spark_program(lake) + (
        "\nimport json, sys\n"
        "json.dump([[str(v) if k == 'date' else v for k, v in r.asDict().items()]"
        " for r in calls_per_intent_per_day.collect()], sys.stdout)\n")
    env = {**os.environ, **env, "PYSPARK_SUBMIT_ARGS": "--master local[1] --conf spark.ui.enabled=false "
           "--conf spark.sql.shuffle.partitions=2 pyspark-shell"}
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        stderr = re.sub(r"(?m)^\s+at .*\n", "", out.stderr)  # Java stack frames
        raise AssertionError(f"the Spark recipe failed:\n{stderr[-4000:]}")
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    return [(t, i, date.fromisoformat(d), c, s, f) for t, i, d, c, s, f in rows]
