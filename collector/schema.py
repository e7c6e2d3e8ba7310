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
    # The GenAI columns below are filled by collector.dialects from whichever instrumentation sent
    # the span (docs/tracing.md, *Dialects*); the attribute named is the OTel GenAI semconv one.
    Column("operation", "string", "gen_ai.operation.name (chat, text_completion, embeddings, ...)"),
    Column("provider", "string", "gen_ai.provider.name (else gen_ai.system), normalised to the semconv values"),
    Column("request_model", "string", "gen_ai.request.model"),
    Column("response_model", "string", "gen_ai.response.model"),
    Column("response_id", "string", "gen_ai.response.id"),
    Column("finish_reasons", "string_list", "gen_ai.response.finish_reasons"),
    Column("input_tokens", "int64", "gen_ai.usage.input_tokens (or gen_ai.usage.prompt_tokens)"),
    Column("output_tokens", "int64", "gen_ai.usage.output_tokens (or gen_ai.usage.completion_tokens)"),
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
    Column("input_messages", "string", "gen_ai.input.messages (semconv message JSON, redacted)"),
    Column("output_messages", "string", "gen_ai.output.messages (semconv message JSON, redacted)"),
    Column("system_instructions", "string", "gen_ai.system_instructions (semconv parts JSON, redacted)"),
    Column(
        "dialect",
        "string",
        "the instrumentation dialect recognised (verdict, vercel_ai, openinference, openllmetry, pydantic_ai, "
        "anthropic, otel_genai); NULL when none",
    ),
    Column("received_at", "timestamp_ns", "when the collector accepted the request, UTC"),
)

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in SPAN_COLUMNS)

# OTLP log records (`logs/tenant=<t>/date=<d>/`): GenAI events among them (openai-v2's default
# mode) carry the messages of the span they belong to; `llm_calls` joins them on (trace_id, span_id).
LOG_COLUMNS: tuple[Column, ...] = (
    Column("record_id", "string", "SHA-256 (first 32 hex digits) of the record as sent: retried copies share it"),
    Column("trace_id", "string", "32 hex digits of the span the record was emitted in; NULL without one"),
    Column("span_id", "string", "16 hex digits; NULL without one"),
    Column("time", "timestamp_ns", "event time (time_unix_nano, else observed time, else received), UTC"),
    Column("observed_time", "timestamp_ns", "observed_time_unix_nano; NULL when unset"),
    Column("sequence", "int64", "position of the record in its export request (orders events of one instant)"),
    Column("severity_number", "int64", "1-24; NULL when unset"),
    Column("severity_text", "string", "severity text; NULL when empty"),
    Column("event_name", "string", "the record's event_name, else its event.name attribute"),
    Column("body", "string", "JSON of the body AnyValue (redacted)"),
    Column("attributes", "string", "JSON object of the record's attributes (redacted)"),
    Column("service_name", "string", "resource attribute service.name"),
    Column("scope_name", "string", "instrumentation scope name"),
    Column("scope_version", "string", "instrumentation scope version"),
    Column("resource_attributes", "string", "JSON object of all resource attributes (redacted)"),
    Column("input_messages", "string", "GenAI events: the input messages this record carries (semconv JSON, redacted)"),
    Column("output_messages", "string", "GenAI events: the output messages this record carries"),
    Column("system_instructions", "string", "GenAI events: the system instruction parts this record carries"),
    Column("received_at", "timestamp_ns", "when the collector accepted the request, UTC"),
)
SCHEMAS = {"spans": SPAN_COLUMNS, "logs": LOG_COLUMNS}

# Columns whose values are (nearly) unique per span or long JSON: Parquet dictionary encoding
# and min/max statistics cost write CPU on them and help neither size nor query pruning.
UNIQUE_OR_LONG = frozenset({
    "trace_id", "span_id", "parent_span_id", "response_id", "resource_attributes", "attributes", "events",
    "links", "dropped_counts", "input_messages", "output_messages", "system_instructions",
    "record_id", "body",
})


@functools.cache
def arrow_schema(table: str = "spans"):  # -> pyarrow.Schema (pyarrow imported lazily: collector-only dependency)
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "timestamp_ns": pa.timestamp("ns"),
        "string_list": pa.list_(pa.string()),
    }
    return pa.schema([pa.field(c.name, types[c.arrow_type]) for c in SCHEMAS[table]])
