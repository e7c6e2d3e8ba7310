"""User signals: the JSONL side file (every malformed line named) and the SDK helper that records a
signal as a span event with the real OpenTelemetry SDK."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from verdict.correlate import (
    SIGNAL_EVENT,
    SIGNAL_KIND_ATTRIBUTE,
    CorrelationError,
    UserSignal,
    load_signal_file,
    record_user_signal,
)


def test_a_side_file_loads(tmp_path):
    path = tmp_path / "signals.jsonl"
    path.write_text('{"trace_id": "t1", "signal": "thumbs_up"}\n\n'
                    '{"trace_id": "t2", "signal": "view", "timestamp": "2026-11-30T10:00:00Z"}\n')
    assert load_signal_file(path) == [UserSignal("t1", "thumbs_up"), UserSignal("t2", "view", "2026-11-30T10:00:00Z")]


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "line.jsonl:2: not valid JSON"),
    ('["t1", "thumbs_up"]', "line.jsonl:2: expected a JSON object, got list"),
    ('{"trace_id": "t1", "signal": "thumbs_up", "user": "bob"}', "unknown key(s) ['user']"),
    ('{"signal": "thumbs_up"}', "'trace_id' must be a non-empty string"),
    ('{"trace_id": " ", "signal": "thumbs_up"}', "'trace_id' must be a non-empty string"),
    ('{"trace_id": "t1", "signal": 1}', "'signal' must be a string"),
    ('{"trace_id": "t1", "signal": "Thumbs_Up"}', "line.jsonl:2: unknown signal 'Thumbs_Up'"),
    ('{"trace_id": "t1", "signal": "copy", "timestamp": 5}', "'timestamp' must be a string or absent"),
])
def test_every_malformed_line_is_named(tmp_path, line, message):
    path = tmp_path / "line.jsonl"
    path.write_text('{"trace_id": "t0", "signal": "copy"}\n' + line + "\n")
    with pytest.raises(CorrelationError) as caught:
        load_signal_file(path)
    assert message in str(caught.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(CorrelationError, match="cannot read the file"):
        load_signal_file(tmp_path / "absent.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(CorrelationError, match="no signals"):
        load_signal_file(tmp_path / "empty.jsonl")


@pytest.fixture
def provider():
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield provider, memory
    provider.shutdown()


def test_a_signal_for_an_earlier_trace_becomes_a_span_in_that_trace(provider):
    provider, memory = provider
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    record_user_signal("thumbs_down", trace_id=trace_id, tracer_provider=provider)
    (span,) = memory.get_finished_spans()
    assert format(span.context.trace_id, "032x") == trace_id and span.name == SIGNAL_EVENT
    assert [(e.name, dict(e.attributes)) for e in span.events] == [(SIGNAL_EVENT, {SIGNAL_KIND_ATTRIBUTE: "thumbs_down"})]


def test_a_signal_during_the_request_is_an_event_on_the_current_span(provider):
    provider, memory = provider
    with provider.get_tracer("app").start_as_current_span("chat"):
        record_user_signal("copy")
    (span,) = memory.get_finished_spans()
    assert [(e.name, dict(e.attributes)) for e in span.events] == [(SIGNAL_EVENT, {SIGNAL_KIND_ATTRIBUTE: "copy"})]


@pytest.mark.parametrize(("kind", "trace_id", "message"), [
    ("like", "0af7651916cd43dd8448eb211c80319c", "unknown signal 'like'"),
    ("copy", "xyz", "trace_id must be 32 hex digits"),
    ("copy", "0" * 32, "trace_id must be 32 hex digits"),
    ("copy", "abc", "trace_id must be 32 hex digits"),
    ("copy", "0x" + "a" * 30, "trace_id must be 32 hex digits"),  # int(x, 16) alone would take these
    ("copy", "0af76519_6cd43dd8448eb211c80319c", "trace_id must be 32 hex digits"),
    ("copy", " " + "a" * 31, "trace_id must be 32 hex digits"),
    ("copy", None, "no recording span is active"),
])
def test_bad_calls_raise_and_record_nothing(provider, kind, trace_id, message):
    provider, memory = provider
    assert not trace.get_current_span().is_recording()
    with pytest.raises(CorrelationError, match=message):
        record_user_signal(kind, trace_id=trace_id, tracer_provider=provider)
    assert memory.get_finished_spans() == ()


def test_the_sdk_helper_keeps_apps_light():
    from tests.imports import loaded_after

    heavy = ("numpy", "scipy", "duckdb", "pyarrow", "verdict.stats")
    assert loaded_after("import verdict.correlate", heavy) == []
