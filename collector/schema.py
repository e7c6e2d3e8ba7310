"""The span lake's tables as Arrow schemas, and Parquet write hints.

The columns (names, types, docs) are defined once in `verdict.semconv`, next to the span attribute
names they are read from.
"""

from __future__ import annotations

import functools

from verdict.semconv import SCHEMAS

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
