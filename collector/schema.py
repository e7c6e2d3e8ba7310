"""The span row: one Parquet column per field, documented once (docs and `verdict sql` use this).

`tenant` and `date` are not stored in the files: they are hive partition keys
(`spans/tenant=<t>/date=<YYYY-MM-DD>/`), the standard layout Spark, Trino and DuckDB read.
Times are UTC, stored as naive nanosecond timestamps so DuckDB keeps nanosecond precision
(`TIMESTAMP_NS`; a tz-aware type would round to microseconds).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    arrow_type: str  # one of: string, int64, timestamp_ns, string_list
    doc: str


SPAN_COLUMNS: tuple[Column, ...] = (
    Column("trace_id", "string", "32 lower-case hex digits"),
    Column("span_id", "string", "16 lower-case hex digits"),
    Column("parent_span_id", "string", "16 hex digits; NULL for a root span"),
    Column("trace_state", "string", "W3C trace state; NULL when empty"),
    Column("name", "string", "span name"),
    Column("kind", "string", "UNSPECIFIED, INTERNAL, SERVER, CLIENT, PRODUCER or CONSUMER"),
    Column("start_time", "timestamp_ns", "span start, UTC, nanoseconds"),
    Column("end_time", "timestamp_ns", "span end, UTC, nanoseconds"),
    Column("duration_ns", "int64", "end_time - start_time in nanoseconds"),
    Column("status_code", "string", "UNSET, OK or ERROR"),
    Column("status_message", "string", "status description; NULL when empty"),
    Column("service_name", "string", "resource attribute service.name"),
    Column("scope_name", "string", "instrumentation scope name"),
    Column("scope_version", "string", "instrumentation scope version"),
    Column("resource_attributes", "string", "JSON object of all resource attributes"),
    Column(
        "attributes",
        "string",
        "JSON object of span attributes, typed (string/int/float/bool/list/object; bytes as "
        "base64); message contents live in their own columns below, not here",
    ),
    Column("events", "string", "JSON list of {name, time_unix_nano, attributes}"),
    Column("links", "string", "JSON list of {trace_id, span_id, trace_state, attributes}"),
    Column("dropped_counts", "string", "JSON {attributes, events, links} counts dropped by the SDK; NULL when all zero"),
    Column("operation", "string", "gen_ai.operation.name (chat, text_completion, embeddings, ...)"),
    Column("provider", "string", "gen_ai.provider.name, else legacy gen_ai.system"),
    Column("request_model", "string", "gen_ai.request.model"),
    Column("response_model", "string", "gen_ai.response.model"),
    Column("response_id", "string", "gen_ai.response.id"),
    Column("finish_reasons", "string_list", "gen_ai.response.finish_reasons"),
    Column("input_tokens", "int64", "gen_ai.usage.input_tokens"),
    Column("output_tokens", "int64", "gen_ai.usage.output_tokens"),
    Column("cached_input_tokens", "int64", "gen_ai.usage.cache_read.input_tokens"),
    Column("cache_creation_input_tokens", "int64", "gen_ai.usage.cache_creation.input_tokens"),
    Column(
        "reasoning_tokens",
        "int64",
        "gen_ai.usage.reasoning.output_tokens (or the older gen_ai.usage.reasoning_tokens)",
    ),
    Column("intent_key", "string", "verdict.intent_key if valid (verdict.intent.validate_intent_key), else NULL"),
    Column(
        "intent_key_error",
        "string",
        "why verdict.intent_key was not accepted (redacted); NULL when valid or absent. The sent value stays "
        "in `attributes`",
    ),
    Column("workload", "string", "verdict.workload"),
    Column("error_type", "string", "error.type"),
    Column("input_messages", "string", "gen_ai.input.messages (JSON, redacted)"),
    Column("output_messages", "string", "gen_ai.output.messages (JSON, redacted)"),
    Column("system_instructions", "string", "gen_ai.system_instructions (JSON, redacted)"),
    Column("received_at", "timestamp_ns", "when the collector accepted the request, UTC"),
)

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in SPAN_COLUMNS)

# Columns whose values are (nearly) unique per span or long JSON: Parquet dictionary encoding
# and min/max statistics cost write CPU on them and help neither size nor query pruning.
UNIQUE_OR_LONG = frozenset({
    "trace_id", "span_id", "parent_span_id", "response_id", "resource_attributes", "attributes", "events",
    "links", "dropped_counts", "input_messages", "output_messages", "system_instructions",
})


@functools.cache
def arrow_schema():  # -> pyarrow.Schema (pyarrow imported lazily: collector-only dependency)
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "timestamp_ns": pa.timestamp("ns"),
        "string_list": pa.list_(pa.string()),
    }
    return pa.schema([pa.field(c.name, types[c.arrow_type]) for c in SPAN_COLUMNS])
