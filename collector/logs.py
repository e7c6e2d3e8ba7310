"""ExportLogsServiceRequest -> validated, redacted log-record rows grouped by (tenant, date).

Log records are stored whole (body and attributes redacted like span attributes); GenAI events
among them (`gen_ai.user.message`, `gen_ai.choice`, `gen_ai.client.inference.operation.details`,
…) also get their messages in the semconv shape in their own columns, so `llm_calls` can attach
them to the span they were emitted in by (trace_id, span_id) when it is read, whichever arrived
first (collector.views).
"""

from __future__ import annotations

import hashlib
import time

from collector.dialects.events import collect, event_messages
from collector.flatten import (
    _NS_PER_DAY,
    FlattenResult,
    IngestPolicy,
    Partition,
    SpanRejected,
    _claims,
    _json,
    _tenant_for,
    ignored_claim,
    outside_retention,
)
from collector.spandata import any_value
from verdict.semconv import SERVICE_NAME

_MAX_NS = 2**63 - 1


def _attributes(kvs, cap: int) -> dict:
    return {kv.key: any_value(kv.value, cap) for kv in kvs}


def _ids(record) -> tuple[str | None, str | None]:
    trace_id, span_id = record.trace_id, record.span_id
    if trace_id and len(trace_id) != 16:
        raise SpanRejected(f"trace_id must be empty or 16 bytes (got {len(trace_id)} bytes)")
    if span_id and len(span_id) != 8:
        raise SpanRejected(f"span_id must be empty or 8 bytes (got {len(span_id)} bytes)")
    return (trace_id.hex() if trace_id.strip(b"\0") else None), (span_id.hex() if span_id.strip(b"\0") else None)


def _time(record, received_ns: int) -> int:
    for t in (record.time_unix_nano, record.observed_time_unix_nano):
        if 0 < t <= _MAX_NS:
            return int(t)
    return received_ns


def flatten_logs(request, policy: IngestPolicy, received_ns: int | None = None) -> FlattenResult:
    received_ns = time.time_ns() if received_ns is None else received_ns
    cap = policy.max_attribute_chars
    redaction = policy.redaction
    partitions: dict[tuple[str, str], Partition] = {}
    ignored_claims: dict[str, int] = {}
    accepted = rejected = sequence = outside = 0
    reasons: list[str] = []
    first_day = policy.first_kept_day(received_ns)
    for r, resource_logs in enumerate(request.resource_logs):
        resource_attrs = _attributes(resource_logs.resource.attributes, cap)
        resource_json = _json(redaction.attributes(dict(resource_attrs)))
        service = resource_attrs.get(SERVICE_NAME)
        service = None if service is None else str(service)
        for s, scope_logs in enumerate(resource_logs.scope_logs):
            scope = scope_logs.scope
            for i, record in enumerate(scope_logs.log_records):
                sequence += 1
                try:
                    trace_id, span_id = _ids(record)
                    attrs = _attributes(record.attributes, cap)
                    claims = _claims(resource_attrs, attrs)
                    tenant = _tenant_for(policy, claims) if claims else policy.tenant
                    ignored = ignored_claim(policy, claims)
                    at = _time(record, received_ns)
                    if at // _NS_PER_DAY < first_day:
                        outside += 1
                        raise outside_retention(at // _NS_PER_DAY, policy.retention_days)
                except SpanRejected as exc:
                    rejected += 1
                    if len(reasons) < 20:
                        reasons.append(f"resourceLogs[{r}].scopeLogs[{s}].logRecords[{i}]: {exc}")
                    continue
                date = time.strftime("%Y-%m-%d", time.gmtime(at // _NS_PER_DAY * 86_400))
                body = any_value(record.body, cap) if record.HasField("body") else None
                event_name = getattr(record, "event_name", "") or attrs.get("event.name")
                event_name = None if event_name is None else str(event_name)
                messages = collect(event_messages(event_name, attrs, body))
                part = partitions.get((tenant, date))
                if part is None:
                    part = partitions[(tenant, date)] = Partition(tenant, date)
                observed = record.observed_time_unix_nano
                part.rows.append((
                    hashlib.sha256(record.SerializeToString(deterministic=True)).hexdigest()[:32],
                    trace_id,
                    span_id,
                    at,
                    observed if 0 < observed <= _MAX_NS else None,
                    sequence,
                    record.severity_number or None,
                    record.severity_text or None,
                    event_name,
                    None if body is None else _json(redaction.value(body)),
                    _json(redaction.attributes(attrs)),
                    service,
                    scope.name or None,
                    scope.version or None,
                    resource_json,
                    *(_message_json(messages.get(c), redaction) for c in
                      ("input_messages", "output_messages", "system_instructions")),
                    received_ns,
                ))
                if ignored is not None:
                    ignored_claims[ignored] = ignored_claims.get(ignored, 0) + 1
                accepted += 1
    return FlattenResult(partitions, accepted, rejected, reasons, outside_retention=outside, ignored_claims=ignored_claims)


def _message_json(messages: list | None, redaction) -> str | None:
    if not messages:
        return None
    text = _json(messages).decode()
    return redaction.content(text) if redaction.mode != "off" else text
