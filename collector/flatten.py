"""ExportTraceServiceRequest -> validated, redacted span rows grouped by (tenant, date) partition.

One pass over the decoded protobuf producing one tuple per span (transposed to Arrow columns
once per partition): this loop is the collector's hot path, so it touches each protobuf field
once and calls into the redactor only where configured.
"""

from __future__ import annotations

import base64
import functools
import time
from dataclasses import dataclass, field

import orjson

from collector.redaction import ServerRedaction
from verdict.intent import validate_intent_key
from verdict.redact import redact_text
from verdict.tenancy import InvalidTenantError, validate_tenant_id

TENANT_ATTRIBUTE = "verdict.tenant_id"
_NS_PER_DAY = 86_400 * 1_000_000_000
_MAX_NS = 2**63 - 1
_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS = ("UNSET", "OK", "ERROR")
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)

# Message contents: moved out of `attributes` into their own columns, re-redacted.
CONTENT_COLUMNS = {
    "gen_ai.input.messages": "input_messages",
    "gen_ai.output.messages": "output_messages",
    "gen_ai.system_instructions": "system_instructions",
}
_LEGACY_REASONING = "gen_ai.usage.reasoning_tokens"
# JSON columns stay UTF-8 bytes: Arrow takes them for `string` columns as they are (and checks
# the UTF-8), and orjson encodes several times faster than the json module: this is the hot path.
_json = orjson.dumps


@dataclass(frozen=True)
class IngestPolicy:
    """Who the spans belong to and how values are bounded."""

    tenant: str  # the token's tenant, or LOCAL_TENANT without auth
    authenticated: bool
    allow_claimed_tenant: bool  # tokenless mode only: honour verdict.tenant_id claims
    max_attribute_chars: int
    redaction: ServerRedaction


@dataclass
class Partition:
    """Span rows (tuples in schema order) for one (tenant, date) partition."""

    tenant: str
    date: str
    rows: list[tuple] = field(default_factory=list)


@dataclass
class FlattenResult:
    partitions: dict[tuple[str, str], Partition]
    accepted: int
    rejected: int
    reasons: list[str]

    def message(self) -> str:
        if not self.rejected:
            return ""
        shown = "; ".join(self.reasons[:5])
        more = f" (and {len(self.reasons) - 5} more)" if len(self.reasons) > 5 else ""
        return f"rejected {self.rejected} span(s): {shown}{more}"


class SpanRejected(Exception):
    pass


def _any(value, cap: int):
    """AnyValue -> plain JSON-able Python value (bytes as base64, long strings capped)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        s = value.string_value
        return s if len(s) <= cap else _truncate(s, cap)
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        d = value.double_value
        return d if d == d and d not in (float("inf"), float("-inf")) else str(d)
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [_any(v, cap) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any(kv.value, cap) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def _truncate(s: str, cap: int) -> str:
    return f"{s[:cap]}…[truncated by verdict collector: {len(s)} chars]"


def _attributes(kvs, cap: int, redact) -> dict:
    return {kv.key: redact(_any(kv.value, cap)) for kv in kvs}


def _claims(resource_attrs: dict, span_attrs: dict) -> set[str]:
    return {str(c) for c in (resource_attrs.get(TENANT_ATTRIBUTE), span_attrs.get(TENANT_ATTRIBUTE)) if c is not None}


def _tenant_for(policy: IngestPolicy, claims: set[str]) -> str:
    if not claims or claims == {policy.tenant}:
        return policy.tenant
    if policy.authenticated:
        other = sorted(claims - {policy.tenant})[0]
        raise SpanRejected(f"claims tenant {other[:64]!r} but the token belongs to another tenant")
    if not policy.allow_claimed_tenant:
        return policy.tenant  # tokenless: everything lands in the local scope
    if len(claims) > 1:
        raise SpanRejected("resource and span claim different tenants")
    try:
        return validate_tenant_id(claims.pop(), allow_local=True)
    except InvalidTenantError as exc:
        raise SpanRejected(str(exc)) from None


def _ids(span) -> tuple[str, str, str | None]:
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    if len(trace_id) != 16 or trace_id == _ZERO_TRACE:
        raise SpanRejected(f"trace_id must be 16 non-zero bytes (got {len(trace_id)} bytes)")
    if len(span_id) != 8 or span_id == _ZERO_SPAN:
        raise SpanRejected(f"span_id must be 8 non-zero bytes (got {len(span_id)} bytes)")
    if parent and len(parent) != 8:
        raise SpanRejected(f"parent_span_id must be empty or 8 bytes (got {len(parent)} bytes)")
    return trace_id.hex(), span_id.hex(), (parent.hex() if parent and parent != _ZERO_SPAN else None)


def _times(span) -> tuple[int, int]:
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    if not 0 < start <= _MAX_NS or not 0 < end <= _MAX_NS:
        raise SpanRejected("start and end times must be set and before year 2262")
    if end < start:
        raise SpanRejected("end_time is before start_time")
    return start, end


def _same(value):
    return value


def _str(value) -> str | None:
    return value if value is None or type(value) is str else str(value)


_INT64 = range(-(2**63), 2**63)


def _int(value) -> int | None:
    """Token counts: an int or a decimal string that fits BIGINT; anything else stays only in `attributes`."""
    if type(value) is int:  # the common case first
        return value if value in _INT64 else None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
        return value if value in _INT64 else None
    return None


@functools.lru_cache(maxsize=4096)
def _intent_key(value: str) -> tuple[str | None, str | None]:
    """(intent_key, why it was refused): an invalid key is kept in `attributes`, never in the column."""
    try:
        return validate_intent_key(value), None
    except ValueError as exc:
        # The reason quotes the key, which may be the very personal data it was refused for.
        return None, redact_text(str(exc))


def _intent(value) -> tuple[str | None, str | None]:
    if value is None:
        return None, None
    if type(value) is not str:
        return None, f"intent key must be a string, got {type(value).__name__}"
    return _intent_key(value)


def _string_list(value) -> list[str] | None:
    if value is None:
        return None
    return [str(x) for x in value] if isinstance(value, list) else [str(value)]


def _content(value) -> str:
    return value if isinstance(value, str) else _json(value).decode()


def _span_attributes(kvs, cap: int, redact_content, redact_other) -> tuple[dict, dict]:
    """Span attributes -> (attributes, message-content columns); strings inline: the hot case."""
    attrs: dict = {}
    content: dict[str, str] = {}
    for kv in kvs:
        key = kv.key
        value = kv.value
        v = value.string_value  # most attributes are strings: one access instead of WhichOneof first
        if not v:
            v = _any(value, cap)
        elif len(v) > cap:
            v = _truncate(v, cap)
        column = CONTENT_COLUMNS.get(key)
        if column is not None:
            content[column] = redact_content(_content(v))
        elif redact_other is None:
            attrs[key] = v
        else:
            attrs[key] = redact_other(v)
    return attrs, content


def flatten(request, policy: IngestPolicy, received_ns: int | None = None) -> FlattenResult:
    received_ns = time.time_ns() if received_ns is None else received_ns
    cap = policy.max_attribute_chars
    redaction = policy.redaction
    redact_other = None if policy.redaction.mode != "all" else policy.redaction.other
    dumps = _json
    partitions: dict[tuple[str, str], Partition] = {}
    day_names: dict[int, str] = {}
    accepted = rejected = 0
    reasons: list[str] = []

    for r, resource_spans in enumerate(request.resource_spans):
        resource_attrs = _attributes(resource_spans.resource.attributes, cap, redact_other or _same)
        resource_json = dumps(resource_attrs)
        resource_claim = resource_attrs.get(TENANT_ATTRIBUTE)
        service = resource_attrs.get("service.name")
        service = None if service is None else str(service)
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            scope = scope_spans.scope
            scope_name, scope_version = scope.name or None, scope.version or None
            redact_content = redaction.content_for_scope(scope.attributes, policy.authenticated)
            for i, span in enumerate(scope_spans.spans):
                try:
                    trace_id, span_id, parent = _ids(span)
                    start, end = _times(span)
                    attrs, content = _span_attributes(span.attributes, cap, redact_content, redact_other)
                    if resource_claim is None and TENANT_ATTRIBUTE not in attrs:
                        tenant = policy.tenant  # no claim at all: the common case, no sets built
                    else:
                        tenant = _tenant_for(policy, _claims(resource_attrs, attrs))
                except SpanRejected as exc:
                    rejected += 1
                    if len(reasons) < 20:
                        reasons.append(f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]: {exc}")
                    continue
                day = start // _NS_PER_DAY
                date = day_names.get(day)
                if date is None:
                    date = day_names[day] = time.strftime("%Y-%m-%d", time.gmtime(day * 86_400))
                part = partitions.get((tenant, date))
                if part is None:
                    part = partitions[(tenant, date)] = Partition(tenant, date)
                kind = span.kind
                status = span.status
                code = status.code
                events = span.events
                links = span.links
                dropped = (span.dropped_attributes_count, span.dropped_events_count, span.dropped_links_count)
                get = attrs.get
                provider = get("gen_ai.provider.name", get("gen_ai.system"))
                reasoning = get("gen_ai.usage.reasoning.output_tokens", get(_LEGACY_REASONING))
                intent_key, intent_key_error = _intent(get("verdict.intent_key"))
                # Tuple in schema.SPAN_COLUMNS order; transposed to columns once per partition.
                part.rows.append((
                    trace_id,
                    span_id,
                    parent,
                    span.trace_state or None,
                    span.name,
                    _KINDS[kind] if 0 <= kind < 6 else str(kind),
                    start,
                    end,
                    end - start,
                    _STATUS[code] if 0 <= code < 3 else str(code),
                    status.message or None,
                    service,
                    scope_name,
                    scope_version,
                    resource_json,
                    dumps(attrs),
                    _events(events, cap, redact_other or _same) if events else "[]",
                    _links(links, cap, redact_other or _same) if links else "[]",
                    dumps(dict(zip(("attributes", "events", "links"), dropped, strict=True))) if any(dropped) else None,
                    _str(get("gen_ai.operation.name")),
                    _str(provider),
                    _str(get("gen_ai.request.model")),
                    _str(get("gen_ai.response.model")),
                    _str(get("gen_ai.response.id")),
                    _string_list(get("gen_ai.response.finish_reasons")),
                    _int(get("gen_ai.usage.input_tokens")),
                    _int(get("gen_ai.usage.output_tokens")),
                    _int(get("gen_ai.usage.cache_read.input_tokens")),
                    _int(get("gen_ai.usage.cache_creation.input_tokens")),
                    _int(reasoning),
                    intent_key,
                    intent_key_error,
                    _str(get("verdict.workload")),
                    _str(get("error.type")),
                    content.get("input_messages"),
                    content.get("output_messages"),
                    content.get("system_instructions"),
                    received_ns,
                ))
                accepted += 1
    return FlattenResult(partitions, accepted, rejected, reasons)


def _events(events, cap: int, redact) -> str:
    out = []
    for e in events:
        item = {"name": e.name, "time_unix_nano": e.time_unix_nano, "attributes": _attributes(e.attributes, cap, redact)}
        if e.dropped_attributes_count:
            item["dropped_attributes_count"] = e.dropped_attributes_count
        out.append(item)
    return _json(out)


def _links(links, cap: int, redact) -> str:
    return _json(
        [
            {
                "trace_id": link.trace_id.hex(),
                "span_id": link.span_id.hex(),
                "trace_state": link.trace_state or None,
                "attributes": _attributes(link.attributes, cap, redact),
            }
            for link in links
        ]
    )

