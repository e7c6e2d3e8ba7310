"""DuckDB views over the span lake, scoped to one tenant: `spans`, `logs` and `llm_calls`.

`llm_calls` is one row per model call, whichever instrumentation(s) described it:
  * messages: a span's own message columns, else those of the GenAI log events emitted in it
    (same trace_id and span_id, in any order and any request: joined when read);
  * one call, one row: among candidate calls, two rows are the same call when they share
    `response_id`, or are in the same trace with overlapping [start_time, end_time] and the
    same model (request model, else response model). Only the best of them is shown (ranked by:
    has both input and output messages, has an intent key, has token counts, written by the
    Verdict SDK, then earliest start and lowest span_id), so tokens are never counted twice.

Readers see each (trace_id, span_id) once (exporter retries and interrupted compactions can
leave copies on disk); see `view_statements` for how that stays cheap over millions of spans. The views name
the files of one listing of the lake (a snapshot: collector.lake_source), which compaction, retention and
shipping leave on disk for their grace period (collector.retire). `open_scoped()` gives an in-memory DuckDB where user SQL can read only
the tenant's own partition directory: external access is switched off except for that
directory, and the configuration is locked so the query cannot switch it back on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from collector import lake
from collector.compaction import COMPACTED_PREFIX
from collector.lake_source import LakeSource
from collector.lake_union import LakeUnion
from verdict.semconv import LOG_COLUMNS, SPAN_COLUMNS
from verdict.tenancy import TenantId

_DUCKDB_TYPES = {"string": "VARCHAR", "int64": "BIGINT", "timestamp_ns": "TIMESTAMP_NS", "string_list": "VARCHAR[]"}

COMPACTED_PATTERN = f"{COMPACTED_PREFIX}*{lake.SEGMENT_SUFFIX}"
FRESH_PATTERN = f"[0-9]*{lake.SEGMENT_SUFFIX}"  # written by the collector, not yet compacted
RETRY_HORIZON = "1 DAY"

# Operations that are not model inference calls (GenAI semantic conventions).
NOT_INFERENCE = ("embeddings", "execute_tool", "create_agent", "invoke_agent")

LLM_CALL_COLUMNS = (
    "tenant_id", "date", "trace_id", "span_id", "parent_span_id", "service_name", "name", "start_time",
    "end_time", "duration_ns", "duration_ns / 1e6 AS latency_ms", "status_code", "status_message", "operation",
    "provider", "request_model", "response_model", "response_id", "finish_reasons", "input_tokens",
    "output_tokens", "cached_input_tokens", "cache_creation_input_tokens", "reasoning_tokens", "intent_key",
    "intent_key_error", "workload", "error_type", "input_messages", "output_messages", "system_instructions", "attributes",
    "dialect", "received_at",
)
MESSAGE_COLUMNS = ("input_messages", "output_messages", "system_instructions")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def tenant_dir(data_dir: Path, tenant: TenantId) -> Path:
    return lake.spans_root(data_dir.resolve()) / f"tenant={tenant}"


def logs_tenant_dir(data_dir: Path, tenant: TenantId) -> Path:
    return lake.logs_root(data_dir.resolve()) / f"tenant={tenant}"


def _typed_empty(columns=SPAN_COLUMNS) -> str:
    typed = ", ".join(f"NULL::{_DUCKDB_TYPES[c.arrow_type]} AS {c.name}" for c in columns)
    return f"SELECT {typed}, NULL::VARCHAR AS tenant, NULL::DATE AS date WHERE false"


def _read(paths: list[str], columns=SPAN_COLUMNS) -> str:
    """The segments `paths`, always with every schema column (NULL where a file lacks one)."""
    files = "[" + ", ".join(_quote(p) for p in paths) + "]"
    return (f"({_typed_empty(columns)}\n  UNION ALL BY NAME\n  SELECT * FROM read_parquet({files}, "
            "hive_partitioning = true, union_by_name = true, hive_types = {'date': 'DATE'}))")


def _logs_view(source: LakeUnion, tenant: TenantId, days: Sequence[date] | None) -> str:
    """Log records, each once (exporter retries resend the same record: same record_id)."""
    files = source.files("logs", tenant, "*" + lake.SEGMENT_SUFFIX, days)
    if files:
        body = (f"SELECT * EXCLUDE (tenant) FROM {_read(files, LOG_COLUMNS)}\n"
                "QUALIFY row_number() OVER (PARTITION BY record_id ORDER BY received_at) = 1")
    else:
        body = f"SELECT * EXCLUDE (tenant) FROM ({_typed_empty(LOG_COLUMNS)})"
    return f"CREATE OR REPLACE VIEW logs AS\nSELECT {_quote(tenant)} AS tenant_id, * FROM (\n{body})"


def _event_messages() -> str:
    """Per (trace_id, span_id): the JSON arrays of its GenAI log events concatenated in event order."""
    def concat(column: str) -> str:
        return (f"'[' || string_agg(substr({column}, 2, length({column}) - 2), ',' "
                f"ORDER BY time, received_at, sequence) || ']' AS {column}")

    return (f"SELECT trace_id, span_id, {', '.join(concat(c) for c in MESSAGE_COLUMNS)}\nFROM logs\n"
            "WHERE span_id IS NOT NULL AND trace_id IS NOT NULL AND "
            f"({' OR '.join(f'{c} IS NOT NULL' for c in MESSAGE_COLUMNS)})\nGROUP BY trace_id, span_id")


def _instrumentations(source: LakeUnion, con, tenant: TenantId, days: Sequence[date] | None) -> int:
    """How many dialects the tenant's spans carry (NULL, for spans written before the column, counts as
    one), from the Parquet footers' statistics: no rows are read."""
    files = source.files("spans", tenant, "*" + lake.SEGMENT_SUFFIX, days)
    if not files:
        return 0
    stats = con.execute(
        "SELECT file_name, stats_min_value, stats_max_value, stats_null_count FROM parquet_metadata(?) "
        "WHERE path_in_schema = 'dialect'", [files]).fetchall()
    values = {v for _f, low, high, _n in stats for v in (low, high)}
    if any(n for *_x, n in stats) or len({f for f, *_x in stats}) < len(files):
        values.add(None)  # NULLs, or files from before the column
    return len(values)


def _llm_calls(with_events: bool, deduplicate: bool) -> str:
    not_inference = ", ".join(_quote(op) for op in NOT_INFERENCE)
    if with_events:
        replaced = ", ".join(f"coalesce(s.{c}, e.{c}) AS {c}" for c in MESSAGE_COLUMNS)
        source = (f"SELECT s.* REPLACE ({replaced}) FROM spans s\n"
                  f"  LEFT JOIN ({_event_messages()}) e USING (trace_id, span_id)")
    else:
        source = "SELECT * FROM spans"
    rank = ("8 * (input_messages IS NOT NULL AND output_messages IS NOT NULL)::INT + 4 * (intent_key IS NOT NULL)::INT"
            " + 2 * (input_tokens IS NOT NULL)::INT + (dialect IS NOT DISTINCT FROM 'verdict')::INT")
    columns = ", ".join(LLM_CALL_COLUMNS)
    if not deduplicate:
        return (f"CREATE OR REPLACE VIEW llm_calls AS\nSELECT {columns} FROM ({source})\n"
                f"WHERE operation IS NOT NULL AND operation NOT IN ({not_inference})")
    # Only traces holding two candidate calls, or a response id seen twice, can hold a duplicate:
    # the rules run on those few rows; every other call passes through (an anti join on a small set).
    return (
        "CREATE OR REPLACE VIEW llm_calls AS\n"
        f"WITH candidates AS NOT MATERIALIZED (\n  SELECT * FROM ({source})\n"
        f"  WHERE operation IS NOT NULL AND operation NOT IN ({not_inference})\n),\n"
        "shared AS (\n  SELECT trace_id FROM candidates GROUP BY trace_id HAVING count(*) > 1\n  UNION\n"
        "  SELECT trace_id FROM candidates WHERE response_id IN (\n"
        "    SELECT response_id FROM candidates WHERE response_id IS NOT NULL GROUP BY response_id HAVING count(*) > 1)\n),\n"
        f"contested AS (\n  SELECT *, coalesce(request_model, response_model) AS call_model, {rank} AS call_rank\n"
        "  FROM candidates SEMI JOIN shared USING (trace_id)\n"
        "  QUALIFY response_id IS NULL\n"
        "    OR row_number() OVER (PARTITION BY response_id ORDER BY call_rank DESC, start_time, span_id) = 1\n)\n"
        f"SELECT {columns} FROM candidates ANTI JOIN shared USING (trace_id)\nUNION ALL\n"
        f"SELECT {columns} FROM contested c\n"
        "WHERE NOT EXISTS (\n  SELECT 1 FROM contested b WHERE b.trace_id = c.trace_id AND b.span_id <> c.span_id\n"
        "    AND b.call_model = c.call_model AND b.start_time <= c.end_time AND c.start_time <= b.end_time\n"
        "    AND (b.call_rank > c.call_rank OR (b.call_rank = c.call_rank\n"
        "      AND (b.start_time < c.start_time OR (b.start_time = c.start_time AND b.span_id < c.span_id)))))"
    )


def _fresh_since(source: LakeUnion, con, tenant: TenantId, days: Sequence[date] | None) -> str | None:
    """Earliest receipt among fresh segments (cheap: one column of a few small files), or None."""
    files = source.files("spans", tenant, FRESH_PATTERN, days)
    if not files:
        return None
    earliest = con.execute(
        "SELECT min(received_at) FROM read_parquet(?, hive_partitioning = false, union_by_name = true)",
        [files],
    ).fetchone()[0]
    return None if earliest is None else str(earliest)


def view_statements(lake_source: LakeUnion | LakeSource | Path, tenant: TenantId, days: Sequence[date] | None = None) -> list[str]:
    """CREATE VIEW statements for `spans`, `logs` and `llm_calls`, for the lake as it is now; over the
    date partitions `days` only when given (the daemon's sampler reads its lookback, not the history).

    Compacted segments hold each span once (collector.compaction), so they are read as they are;
    only fresh segments are deduplicated, among themselves and against compacted rows received
    within RETRY_HORIZON before them (a constant here, so DuckDB prunes older files by their
    statistics). A copy arriving later than that shows until the next compaction removes it.
    """
    source = LakeUnion.of(lake_source)
    con = source.connect()  # reads footers and one column for the plan below
    try:
        compacted = source.files("spans", tenant, COMPACTED_PATTERN, days)
        fresh_since = _fresh_since(source, con, tenant, days)
        # One instrumentation cannot describe a call twice (Vercel's outer spans are no call): the
        # duplicate rules, which group every call by trace, run only when two or more dialects are present.
        deduplicate = _instrumentations(source, con, tenant, days) > 1
    finally:
        con.close()
    parts = []
    if compacted:
        parts.append(f"SELECT * EXCLUDE (tenant) FROM {_read(compacted)}")
    if fresh_since is not None:
        fresh = (
            f"SELECT * EXCLUDE (tenant) FROM {_read(source.files('spans', tenant, FRESH_PATTERN, days))}\n"
            "QUALIFY row_number() OVER (PARTITION BY trace_id, span_id ORDER BY received_at) = 1"
        )
        if compacted:
            fresh = (
                f"SELECT * FROM ({fresh})\nANTI JOIN (SELECT trace_id, span_id FROM {_read(compacted)}"
                f"\n  WHERE received_at >= TIMESTAMP_NS {_quote(fresh_since)} - INTERVAL {RETRY_HORIZON})\n"
                "USING (trace_id, span_id)"
            )
        parts.append(fresh)
    if not parts:
        parts.append(f"SELECT * EXCLUDE (tenant) FROM ({_typed_empty()})")  # no data yet: queries still bind
    body = "\nUNION ALL BY NAME\n".join(f"({p})" for p in parts)
    spans = f"CREATE OR REPLACE VIEW spans AS\nSELECT {_quote(tenant)} AS tenant_id, * FROM (\n{body})"
    with_events = bool(source.files("logs", tenant, "*" + lake.SEGMENT_SUFFIX, days))
    return [spans, _logs_view(source, tenant, days), _llm_calls(with_events, deduplicate)]


def open_scoped(lake_source: LakeUnion | LakeSource | Path, tenant: TenantId, extra_views: tuple[str, ...] = (),
                prepare: Callable[[Any], None] | None = None):
    """In-memory DuckDB with the views; user SQL can read only this tenant's partition directory (and its
    prefix in the object store). `prepare(con)` runs before access is locked down (e.g. to copy in the
    daemon's state tables)."""
    source = LakeUnion.of(lake_source)
    # No spill directory: DuckDB would add it (./.tmp by default) to the readable directories.
    con = source.connect(
        {"autoinstall_known_extensions": False, "autoload_known_extensions": False, "temp_directory": ""})
    for statement in (*view_statements(source, tenant), *extra_views):
        con.execute(statement)
    if prepare is not None:
        prepare(con)
    allowed = ", ".join(_quote(d) for table in lake.TABLES for d in source.allowed_directories(table, tenant))
    con.execute(f"SET allowed_directories = [{allowed}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con
