"""ExportTraceServiceRequest -> validated, normalised, redacted span rows grouped by (tenant, date).

`flatten` orchestrates; `span_row` is the per-span step (validate, decode, map the dialect to
the first-class GenAI columns with collector.dialects, redact) producing one tuple per span
(transposed to Arrow columns once per partition). This is the collector's hot path: it reads the
request as collector.spandata decoded it (each protobuf field once, attributes already decoded),
and the mappers see decoded values before anything is redacted so they can rebuild messages,
which are then redacted once as JSON.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import NamedTuple

import orjson

from collector.dialects import SpanEvent, normalise
from collector.redaction import ServerRedaction
from collector.spandata import Event, Link, ResourceData, ScopeData, SpanData, from_message
from verdict import semconv as sc
from verdict.conversation import MAX_CONVERSATION_ID_LENGTH, validate_conversation_id
from verdict.intent import MAX_INTENT_KEY_LENGTH, validate_intent_key
from verdict.redact import redact_text
from verdict.tenancy import InvalidTenantError, validate_tenant_id

_NS_PER_DAY = 86_400 * 1_000_000_000
_MAX_NS = 2**63 - 1
_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS = ("UNSET", "OK", "ERROR")
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)

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
    retention_days: int = 0  # > 0: spans older than this are refused, retention would delete them

    def first_kept_day(self, received_ns: int) -> int:
        """The first day (since the epoch, UTC) retention keeps, as `collector.retention.expire` counts."""
        return received_ns // _NS_PER_DAY - self.retention_days if self.retention_days > 0 else 0


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
    dialects: dict[str, int] = field(default_factory=dict)  # spans per recognised dialect
    unrecognised: dict[str, int] = field(default_factory=dict)  # spans no dialect recognised, per scope name
    outside_retention: int = 0  # of the rejected: older than the retention window
    ignored_claims: dict[str, int] = field(default_factory=dict)  # items per tenant claimed in vain (ignored_claim)

    def message(self) -> str:
        if not self.rejected:
            return ""
        shown = "; ".join(self.reasons[:5])
        more = f" (and {len(self.reasons) - 5} more)" if len(self.reasons) > 5 else ""
        return f"rejected {self.rejected} span(s): {shown}{more}"


class SpanRejected(Exception):
    pass


def outside_retention(day: int, retention_days: int) -> SpanRejected:
    """The refusal of an item that retention would delete at its next run: never acknowledged, then deleted."""
    date = time.strftime("%Y-%m-%d", time.gmtime(day * 86_400))
    return SpanRejected(f"dated {date}, older than the collector's retention of {retention_days} days "
                        "(--retention-days): it would be deleted at the next retention run")


def _claims(resource_attrs: dict, span_attrs: dict) -> set[str]:
    return {str(c) for c in (resource_attrs.get(sc.TENANT_ID), span_attrs.get(sc.TENANT_ID)) if c is not None}


def ignored_claim(policy: IngestPolicy, claims: set[str]) -> str | None:
    """The tenant claimed in vain: tokenless without --allow-claimed-tenant, a claim of another tenant lands in
    the local scope (counted and logged once per sender, so `init(tenant_id=...)` is not lost in silence)."""
    if policy.authenticated or policy.allow_claimed_tenant or not claims or claims == {policy.tenant}:
        return None
    return sorted(claims - {policy.tenant})[0]


def _tenant_for(policy: IngestPolicy, claims: set[str]) -> str:
    if not claims or claims == {policy.tenant}:
        return policy.tenant
    if policy.authenticated:
        other = sorted(claims - {policy.tenant})[0]
        raise SpanRejected(f"claims tenant {other[:64]!r} but the token belongs to another tenant")
    if not policy.allow_claimed_tenant:
        return policy.tenant  # tokenless: everything lands in the local scope (ignored_claim counts it)
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


def _str(value) -> str | None:
    return value if value is None or type(value) is str else str(value)


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
    if len(value) > MAX_INTENT_KEY_LENGTH:  # refused for its length: never keep a huge key in the cache
        return _intent_key.__wrapped__(value)
    return _intent_key(value)


@functools.lru_cache(maxsize=4096)
def _valid_conversation_id(value: str) -> bool:
    try:
        validate_conversation_id(value)
    except ValueError:
        return False
    return True


_CONVERSATION_NAMES = frozenset(sc.CONVERSATION_ID_ATTRIBUTES)


def _conversation_id(attrs: dict) -> str | None:
    """The first valid conversation id among the spellings (docs/conversations.md); an invalid one is skipped
    and stays (redacted) in `attributes`."""
    if _CONVERSATION_NAMES.isdisjoint(attrs):  # most spans: one pass over their keys in C
        return None
    for name in sc.CONVERSATION_ID_ATTRIBUTES:
        value = attrs.get(name)
        if type(value) is int:
            value = str(value)
        if type(value) is str and len(value) <= MAX_CONVERSATION_ID_LENGTH and _valid_conversation_id(value):
            return value
    return None


def _content(value) -> str:
    return value if isinstance(value, str) else _json(value).decode()


@dataclass(frozen=True)
class ScopeContext:
    """What every span of one ScopeSpans shares."""

    policy: IngestPolicy
    service: str | None
    resource_json: bytes
    resource_claim: object
    resource_attrs: dict
    scope_name: str | None
    scope_version: str | None
    trusted_content: bool  # the Verdict SDK's own message attributes are not redacted again


def scope_context(policy: IngestPolicy, resource_attrs: dict, resource_json: bytes, scope: ScopeData) -> ScopeContext:
    service = resource_attrs.get(sc.SERVICE_NAME)
    redaction = policy.redaction
    return ScopeContext(
        policy, None if service is None else str(service), resource_json, resource_attrs.get(sc.TENANT_ID),
        resource_attrs, scope.name or None, scope.version or None,
        redaction.content_for_scope(scope.attributes, policy.authenticated) is not redaction.content,
    )


class SpanRow(NamedTuple):
    tenant: str
    day: int  # days since the epoch of the span's start
    dialect: str | None
    row: tuple
    ignored_claim: str | None  # the tenant the span claimed in vain (ignored_claim)


def span_row(span: SpanData, ctx: ScopeContext, received_ns: int) -> SpanRow:
    """One span -> its row (schema.SPAN_COLUMNS order). Raises SpanRejected for an invalid span."""
    policy = ctx.policy
    redaction = policy.redaction
    trace_id, span_id, parent = _ids(span)
    start, end = _times(span)
    attrs, content = span.attributes, span.content
    if ctx.resource_claim is None and sc.TENANT_ID not in attrs:
        tenant, ignored = policy.tenant, None  # no claim at all: the common case, no sets built
    else:
        claims = _claims(ctx.resource_attrs, attrs)
        tenant, ignored = _tenant_for(policy, claims), ignored_claim(policy, claims)
    events = span.events
    raw_events = [SpanEvent(e.name, dict(e.attributes)) for e in events] if events else []
    dialect, call = normalise(ctx.scope_name or "", span.name, attrs, content, raw_events)
    get = attrs.get
    intent_key, intent_key_error = _intent(get(sc.INTENT_KEY))
    structural = redaction.structural
    workload, error_type = structural(_str(get(sc.WORKLOAD))), structural(_str(get(sc.ERROR_TYPE)))
    conversation_id = _conversation_id(attrs)
    omitted = get(sc.CONTENT_OMITTED)  # its own column: the sampler reads it, not `attributes`
    if omitted is not None:  # rare (the SDK shed content): the common span pays one lookup
        omitted = structural(_str(omitted))
    reasons = call.finish_reasons
    redaction.attributes(attrs)
    if intent_key_error is not None and redaction.mode != "off":  # a refused key may be personal data
        attrs[sc.INTENT_KEY] = redaction.value(attrs[sc.INTENT_KEY])
    kind = span.kind
    code = span.status_code
    links = span.links
    dropped = (span.dropped_attributes_count, span.dropped_events_count, span.dropped_links_count)
    return SpanRow(tenant, start // _NS_PER_DAY, dialect, (
        trace_id,
        span_id,
        parent,
        span.trace_state or None,
        redaction.content(span.name),  # names can hold content: OpenLLMetry names CrewAI task spans by their text
        _KINDS[kind] if 0 <= kind < 6 else str(kind),
        start,
        end,
        end - start,
        _STATUS[code] if 0 <= code < 3 else str(code),
        redaction.value(span.status_message) if span.status_message else None,
        ctx.service,
        ctx.scope_name,
        ctx.scope_version,
        ctx.resource_json,
        _json(attrs),
        _events(raw_events, events, redaction) if events else "[]",
        _links(links, redaction) if links else "[]",
        _json(dict(zip(("attributes", "events", "links"), dropped, strict=True))) if any(dropped) else None,
        structural(call.operation),
        structural(call.provider),
        structural(call.request_model),
        structural(call.response_model),
        structural(call.response_id),
        None if reasons is None else [structural(r) for r in reasons],
        call.input_tokens,
        call.output_tokens,
        call.cached_input_tokens,
        call.cache_creation_input_tokens,
        call.reasoning_tokens,
        intent_key,
        intent_key_error,
        workload,
        conversation_id,
        error_type,
        _message_column(call.input_messages, content.get("input_messages"), ctx, redaction),
        _message_column(call.output_messages, content.get("output_messages"), ctx, redaction),
        _message_column(call.system_instructions, content.get("system_instructions"), ctx, redaction),
        omitted,
        dialect,
        received_ns,
    ), ignored)


def _message_column(value, sent, ctx: ScopeContext, redaction: ServerRedaction) -> str | None:
    if value is None:
        return None
    if value is sent and ctx.trusted_content:
        return _content(value)
    return redaction.content(_content(value)) if redaction.mode != "off" else _content(value)


def flatten(request, policy: IngestPolicy, received_ns: int | None = None) -> FlattenResult:
    """request: collector.spandata's tuples (decoded), or an upb ExportTraceServiceRequest."""
    received_ns = time.time_ns() if received_ns is None else received_ns
    resources: list[ResourceData] = (
        request if isinstance(request, list) else from_message(request, policy.max_attribute_chars))
    partitions: dict[tuple[str, str], Partition] = {}
    day_names: dict[int, str] = {}
    dialects: dict[str, int] = {}
    unrecognised: dict[str, int] = {}
    ignored_claims: dict[str, int] = {}
    accepted = rejected = outside = 0
    reasons: list[str] = []
    first_day = policy.first_kept_day(received_ns)

    for r, resource in enumerate(resources):
        resource_attrs = dict(resource.attributes)
        resource_json = _json(policy.redaction.attributes(dict(resource_attrs)))
        for s, scope in enumerate(resource.scopes):
            ctx = scope_context(policy, resource_attrs, resource_json, scope)
            for i, span in enumerate(scope.spans):
                try:
                    tenant, day, dialect, row, ignored = span_row(span, ctx, received_ns)
                    if day < first_day:
                        outside += 1
                        raise outside_retention(day, policy.retention_days)
                except SpanRejected as exc:
                    rejected += 1
                    if len(reasons) < 20:
                        reasons.append(f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]: {exc}")
                    continue
                date = day_names.get(day)
                if date is None:
                    date = day_names[day] = time.strftime("%Y-%m-%d", time.gmtime(day * 86_400))
                part = partitions.get((tenant, date))
                if part is None:
                    part = partitions[(tenant, date)] = Partition(tenant, date)
                part.rows.append(row)
                if dialect is None:
                    name = ctx.scope_name or "(no scope)"
                    unrecognised[name] = unrecognised.get(name, 0) + 1
                else:
                    dialects[dialect] = dialects.get(dialect, 0) + 1
                if ignored is not None:
                    ignored_claims[ignored] = ignored_claims.get(ignored, 0) + 1
                accepted += 1
    return FlattenResult(partitions, accepted, rejected, reasons, dialects, unrecognised, outside, ignored_claims)


def _events(raw: list[SpanEvent], events: list[Event], redaction: ServerRedaction) -> bytes:
    out = []
    for decoded, e in zip(raw, events, strict=True):
        item = {"name": e.name, "time_unix_nano": e.time_unix_nano,
                "attributes": redaction.attributes(dict(decoded.attributes))}
        if e.dropped_attributes_count:
            item["dropped_attributes_count"] = e.dropped_attributes_count
        out.append(item)
    return _json(out)


def _links(links: list[Link], redaction: ServerRedaction) -> bytes:
    return _json(
        [
            {
                "trace_id": link.trace_id.hex(),
                "span_id": link.span_id.hex(),
                "trace_state": link.trace_state or None,
                "attributes": redaction.attributes(dict(link.attributes)),
            }
            for link in links
        ]
    )
