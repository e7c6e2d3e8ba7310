"""DuckDB views over the span lake, scoped to one tenant: `spans` and `llm_calls`.

Readers see each (trace_id, span_id) once (exporter retries and interrupted compactions can
leave copies on disk). `open_scoped()` gives an in-memory DuckDB where user SQL can read only
the tenant's own partition directory: external access is switched off except for that
directory, and the configuration is locked so the query cannot switch it back on.
"""

from __future__ import annotations

from pathlib import Path

from collector import lake
from collector.schema import SPAN_COLUMNS
from verdict.tenancy import validate_tenant_id

_DUCKDB_TYPES = {"string": "VARCHAR", "int64": "BIGINT", "timestamp_ns": "TIMESTAMP_NS", "string_list": "VARCHAR[]"}

# Operations that are not model inference calls (GenAI semantic conventions).
_NOT_INFERENCE = ("embeddings", "execute_tool", "create_agent", "invoke_agent")

LLM_CALL_COLUMNS = (
    "tenant_id", "date", "trace_id", "span_id", "parent_span_id", "service_name", "name", "start_time",
    "end_time", "duration_ns", "duration_ns / 1e6 AS latency_ms", "status_code", "status_message", "operation",
    "provider", "request_model", "response_model", "response_id", "finish_reasons", "input_tokens",
    "output_tokens", "cached_input_tokens", "cache_creation_input_tokens", "reasoning_tokens", "intent_key",
    "workload", "error_type", "input_messages", "output_messages", "system_instructions", "attributes",
    "received_at",
)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def tenant_dir(data_dir: Path, tenant: str) -> Path:
    return lake.spans_root(data_dir.resolve()) / f"tenant={validate_tenant_id(tenant)}"


def _source(data_dir: Path, tenant: str, for_print: bool) -> str:
    """The tenant's segments, always with every schema column (typed; NULL where a file lacks it)."""
    directory = tenant_dir(data_dir, tenant)
    columns = ", ".join(f"NULL::{_DUCKDB_TYPES[c.arrow_type]} AS {c.name}" for c in SPAN_COLUMNS)
    typed_empty = f"SELECT {columns}, NULL::VARCHAR AS tenant, NULL::DATE AS date WHERE false"
    if not for_print and not any(directory.glob(f"date=*/*{lake.SEGMENT_SUFFIX}")):
        return f"({typed_empty})"  # no data yet: queries still bind
    pattern = _quote(f"{directory}/date=*/*{lake.SEGMENT_SUFFIX}")
    return (f"({typed_empty}\n      UNION ALL BY NAME\n      SELECT * FROM read_parquet({pattern}, "
            "hive_partitioning = true, union_by_name = true, hive_types = {'date': DATE}))")


def view_statements(data_dir: Path, tenant: str, for_print: bool = False) -> list[str]:
    """CREATE VIEW statements for `spans` and `llm_calls`; `for_print`: always over the files,
    for pasting into plain DuckDB (otherwise an empty relation stands in while there is no data)."""
    tenant = validate_tenant_id(tenant)
    spans = (
        "CREATE OR REPLACE VIEW spans AS\n"
        f"SELECT {_quote(tenant)} AS tenant_id, * EXCLUDE (copy_rank)\n"
        "FROM (SELECT * EXCLUDE (tenant),\n"
        "             row_number() OVER (PARTITION BY trace_id, span_id ORDER BY received_at) AS copy_rank\n"
        f"      FROM {_source(data_dir, tenant, for_print)})\n"
        "WHERE copy_rank = 1"
    )
    not_inference = ", ".join(_quote(op) for op in _NOT_INFERENCE)
    llm_calls = (
        "CREATE OR REPLACE VIEW llm_calls AS\n"
        f"SELECT {', '.join(LLM_CALL_COLUMNS)}\nFROM spans\n"
        f"WHERE operation IS NOT NULL AND operation NOT IN ({not_inference})"
    )
    return [spans, llm_calls]


def open_scoped(data_dir: Path, tenant: str, extra_views: tuple[str, ...] = ()):
    """In-memory DuckDB with the views; user SQL can read only this tenant's partition directory."""
    import duckdb

    con = duckdb.connect(
        ":memory:",
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
    )
    for statement in (*view_statements(data_dir, tenant), *extra_views):
        con.execute(statement)
    allowed = str(tenant_dir(data_dir, tenant)) + "/"
    con.execute(f"SET allowed_directories = [{_quote(allowed)}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con
