"""init(): precise ValueErrors, OTEL_* environment variables, joining the app's TracerProvider."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import verdict.tracing as vt
from verdict.tracing.config import parse_headers
from verdict.tracing.config import resolve_config as _resolve

_DEFAULTS = dict(
    service_name=None, endpoint=None, tenant_id=None, headers=None, api_key=None, protocol=None,
    capture_content=None, max_content_bytes=None, max_queue_size=None, max_export_batch_size=None,
    schedule_delay_millis=None, export_timeout_seconds=None, resource_attributes=None,
)


def resolve(**kwargs):
    return _resolve(**{**_DEFAULTS, **kwargs})


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
                 "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_PROTOCOL",
                 "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "VERDICT_API_KEY", "VERDICT_TENANT_ID",
                 "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "OTEL_BSP_MAX_QUEUE_SIZE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"endpoint": "127.0.0.1:4318"}, "must be an http:// or https:// URL"),
        ({"endpoint": "http://127.0.0.1:99999"}, "invalid port"),
        ({"protocol": "http/json"}, "not supported"),
        ({"tenant_id": "Acme Corp"}, "invalid tenant id"),
        ({"headers": {"bad name": "x"}}, "invalid name"),
        ({"headers": {"x-a": "line\nbreak"}}, "line break"),
        ({"api_key": "has space"}, "api_key"),
        ({"max_queue_size": 0}, "max_queue_size must be a positive integer"),
        ({"max_queue_size": 10, "max_export_batch_size": 20}, "must not exceed"),
        ({"max_content_bytes": 10}, "at least 256"),
        ({"capture_content": "yes"}, "capture_content must be True or False"),
        ({"service_name": ""}, "service_name"),
        ({"resource_attributes": {"k": object()}}, "resource attribute"),
    ],
)
def test_bad_options_are_precise_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        vt.init(**kwargs)
    assert vt.stats().spans_started == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"exporter": "http://127.0.0.1:4318"}, "exporter must be an opentelemetry SpanExporter"),
     ({"redactor": str.upper}, "redactor must have")],
)
def test_bad_objects_are_value_errors_at_init(kwargs, message):
    with pytest.raises(ValueError, match=message):
        vt.init(**kwargs)
    vt.init(exporter=InMemorySpanExporter())  # nothing was left half-initialised
    vt.shutdown()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://x"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "name=value"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "maybe"}, "NO_CONTENT"),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "lots"}, "OTEL_BSP_MAX_QUEUE_SIZE"),
        ({"VERDICT_TENANT_ID": "UPPER"}, "invalid tenant id"),
    ],
)
def test_bad_environment_is_reported_at_init(monkeypatch, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        vt.init()


def test_environment_endpoint_headers_and_protocol(monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=ml%20ops,authorization=Bearer%20abc")
    config = resolve()
    assert config.endpoint == "http://collector:4318/v1/traces"
    assert config.headers == {"x-team": "ml ops", "authorization": "Bearer abc"}
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://other:9999/custom")
    assert resolve().endpoint == "http://other:9999/custom"
    assert resolve(endpoint="http://x:1").endpoint == "http://x:1/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    assert (resolve().protocol, resolve().endpoint) == ("grpc", "http://collector:4318/")


def test_api_key_becomes_bearer_header_and_is_never_printed():
    config = resolve(api_key="vk_live_123", headers={"X-Extra": "1"})
    assert config.headers == {"x-extra": "1", "authorization": "Bearer vk_live_123"}
    assert "vk_live_123" not in repr(config)


def test_parse_headers_rejects_empty_name():
    with pytest.raises(ValueError, match="name=value"):
        parse_headers("=x", "OTEL_EXPORTER_OTLP_HEADERS")


def test_init_joins_the_apps_provider_without_clobbering(fake_openai):
    from tests.tracing.conftest import _global_provider, stop

    provider = _global_provider()
    app_exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(app_exporter))
    verdict_exporter = InMemorySpanExporter()
    try:
        vt.init(service_name="svc", tenant_id="acme", exporter=verdict_exporter)
        vt.instrument()
        assert trace.get_tracer_provider() is provider
        with trace.get_tracer("app").start_as_current_span("app.handler"):
            fake_openai.client().chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        vt.flush()
        assert {s.name for s in app_exporter.get_finished_spans()} == {"app.handler", "chat m"}
        # Only Verdict's own spans go to Verdict's exporter, stamped with the tenant.
        (span,) = verdict_exporter.get_finished_spans()
        assert span.attributes is not None
        assert span.attributes["verdict.tenant_id"] == "acme"
        with pytest.raises(ValueError, match="already called"):
            vt.init(exporter=InMemorySpanExporter())
    finally:
        app_exporter.shutdown()
        stop()


def test_grpc_exporter_is_built_lazily():
    from verdict.tracing.setup import _otlp_exporter

    exporter = _otlp_exporter(resolve(protocol="grpc", endpoint="http://127.0.0.1:4317"))
    assert type(exporter).__module__.startswith("opentelemetry.exporter.otlp.proto.grpc")
    exporter.shutdown()
