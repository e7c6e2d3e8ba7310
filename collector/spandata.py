"""OTLP trace requests as plain NamedTuples: what flatten reads of a span, decoded once.

Two producers give the same tuples: the compiled decoder (`collector._otlpdecode`, C, reading the
protobuf wire format directly) and `from_message` over the upb-parsed request (OTLP JSON, and
protobuf when the extension is not built or abstains on a request it does not reproduce exactly).
Reading a span's attributes through upb costs a wrapper object per KeyValue and AnyValue
(docs/collector.md, "Instructions per span, issue 31"); the compiled decoder builds the values alone.
"""

from __future__ import annotations

import base64
import sys
from typing import Any, NamedTuple

from collector import otlp
from collector.dialects import CONTENT_ATTRIBUTES

try:
    from collector import _otlpdecode  # type: ignore[attr-defined]  # built in place by setup.py
except ImportError:  # installed without a compiler: the upb path
    _otlpdecode = None

Pairs = list[tuple[str, Any]]  # KeyValues in order, duplicates kept, values as _any decodes them
_WHOLE = sys.maxsize  # scope attributes are not capped: the SDK's claim is compared as sent


class Event(NamedTuple):
    time_unix_nano: int
    name: str
    attributes: Pairs
    dropped_attributes_count: int


class Link(NamedTuple):
    trace_id: bytes
    span_id: bytes
    trace_state: str
    attributes: Pairs


class SpanData(NamedTuple):
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    trace_state: str
    name: str
    kind: int
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: dict[str, Any]  # decoded, the message-content keys moved to `content`
    content: dict[str, Any]  # content column -> decoded value (CONTENT_ATTRIBUTES)
    attribute_count: int  # KeyValues sent, duplicates included (the request size limit counts them)
    dropped_attributes_count: int
    events: list[Event]
    dropped_events_count: int
    links: list[Link]
    dropped_links_count: int
    status_code: int
    status_message: str


class ScopeData(NamedTuple):
    name: str
    version: str
    attributes: Pairs
    spans: list[SpanData]


class ResourceData(NamedTuple):
    attributes: Pairs
    scopes: list[ScopeData]


def truncate(s: str, cap: int) -> str:
    return f"{s[:cap]}…[truncated by verdict collector: {len(s)} chars]"


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def any_value(value, cap: int):
    """AnyValue -> plain JSON-able Python value (bytes as base64, long strings capped)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        s = value.string_value
        return s if len(s) <= cap else truncate(s, cap)
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        d = value.double_value
        return d if d == d and d not in (float("inf"), float("-inf")) else str(d)
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [any_value(v, cap) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value, cap) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return _b64(value.bytes_value)
    return None


def _pairs(kvs, cap: int) -> Pairs:
    return [(kv.key, any_value(kv.value, cap)) for kv in kvs]


def _span_attributes(kvs, cap: int) -> tuple[dict, dict]:
    """Span attributes -> (attributes, semconv message-content attributes), decoded, not yet redacted."""
    attrs: dict = {}
    content: dict = {}
    for kv in kvs:
        key = kv.key
        value = kv.value
        v = value.string_value  # most attributes are strings: one access instead of WhichOneof first
        if not v:
            v = any_value(value, cap)
        elif len(v) > cap:
            v = truncate(v, cap)
        column = CONTENT_ATTRIBUTES.get(key)
        if column is None:
            attrs[key] = v
        else:
            content[column] = v
    return attrs, content


def _span(span, cap: int) -> SpanData:
    attrs, content = _span_attributes(span.attributes, cap)
    status = span.status
    return SpanData(
        span.trace_id, span.span_id, span.parent_span_id, span.trace_state, span.name, span.kind,
        span.start_time_unix_nano, span.end_time_unix_nano, attrs, content, len(span.attributes),
        span.dropped_attributes_count,
        [Event(e.time_unix_nano, e.name, _pairs(e.attributes, cap), e.dropped_attributes_count) for e in span.events],
        span.dropped_events_count,
        [Link(k.trace_id, k.span_id, k.trace_state, _pairs(k.attributes, cap)) for k in span.links],
        span.dropped_links_count, status.code, status.message,
    )


def from_message(request, cap: int) -> list[ResourceData]:
    """An upb ExportTraceServiceRequest -> the tuples (the fallback, and OTLP JSON's path)."""
    return [
        ResourceData(_pairs(rs.resource.attributes, cap), [
            ScopeData(ss.scope.name, ss.scope.version, _pairs(ss.scope.attributes, _WHOLE),
                      [_span(span, cap) for span in ss.spans])
            for ss in rs.scope_spans
        ])
        for rs in request.resource_spans
    ]


if _otlpdecode is not None:
    _otlpdecode.configure(ResourceData, ScopeData, SpanData, Event, Link)


def compiled(data: bytes, cap: int, max_items: int = _WHOLE, max_values: int = _WHOLE) -> list[ResourceData] | None:
    """ExportTraceServiceRequest bytes -> the tuples, by the compiled decoder; None when it is not built, or
    abstains (a request it does not reproduce exactly, malformed bytes, more than max_items spans or
    max_values attribute values as collector.decoding counts them): then parse with upb."""
    if _otlpdecode is None:
        return None
    return _otlpdecode.decode(data, cap, truncate, _b64, CONTENT_ATTRIBUTES, max_items, max_values)  # type: ignore[no-any-return]


def parse(data: bytes, cap: int) -> list[ResourceData]:
    """The tuples through upb alone (the fallback; tests and benches compare the two)."""
    return from_message(otlp.parse_protobuf(data, otlp.TRACES), cap)
