"""The 413 bound on attribute values counts every value a request holds: span attributes, and each
event and link (one value each) with their attributes; log-record attributes."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from collector import otlp
from collector.decoding import VALUES_PER_SPAN, _check_request_size


def _kvs(n: int) -> list[KeyValue]:
    return [KeyValue(key=f"k{i}", value=AnyValue(int_value=i)) for i in range(n)]


def _span_request(events: int, links: int) -> ExportTraceServiceRequest:
    """One span: 2 attributes, `events` events and `links` links with 3 attributes each."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.attributes.extend(_kvs(2))
    for _ in range(events):
        span.events.add().attributes.extend(_kvs(3))
    for _ in range(links):
        span.links.add().attributes.extend(_kvs(3))
    return request


def test_events_and_links_count_towards_the_value_limit() -> None:
    assert VALUES_PER_SPAN == 32  # the counts below: 2 + 4 per event or link
    _check_request_size(_span_request(events=5, links=2), otlp.TRACES, max_items=1)  # 30 values
    for events, links in ((6, 2), (5, 3), (0, 8)):  # 34 values
        with pytest.raises(otlp.RequestError, match="34 attribute values; the limit is 32"):
            _check_request_size(_span_request(events, links), otlp.TRACES, max_items=1)


def test_log_record_attributes_count_towards_the_value_limit() -> None:
    request = ExportLogsServiceRequest()
    record = request.resource_logs.add().scope_logs.add().log_records.add()
    record.attributes.extend(_kvs(32))
    _check_request_size(request, otlp.LOGS, max_items=1)
    record.attributes.extend(_kvs(1))
    with pytest.raises(otlp.RequestError, match="33 attribute values"):
        _check_request_size(request, otlp.LOGS, max_items=1)
