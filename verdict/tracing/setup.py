"""`init()` / `shutdown()`: join or create the global TracerProvider and attach Verdict's exporter."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from verdict import semconv as sc
from verdict.tracing.callspan import CallSpans
from verdict.tracing.config import PROTOCOL_GRPC, TracingConfig, resolve_config
from verdict.tracing.content import Redactor
from verdict.tracing.peers import ContextStampProcessor
from verdict.tracing.pipeline import ContentExporter, VerdictSpanProcessor
from verdict.tracing.runtime import STATE, Runtime, load_redactor, verdict_tracer
from verdict.tracing.semconv import emit_deprecated_system

_lock = threading.Lock()
# One processor for the process: the SDK cannot remove a processor from a provider, so it is
# added once per provider and its batch processor is swapped by init()/shutdown().
_processor = VerdictSpanProcessor()
_joined: list[TracerProvider] = []
_config: list[TracingConfig] = []
_created: list[TracerProvider] = []  # providers Verdict registered itself (no app processors on them)


def _check_arguments(redactor: Any, exporter: Any, export_peer_spans: Any) -> None:
    """init()'s plug-in arguments are what they claim to be (ValueError otherwise)."""
    if redactor is not None and not (callable(getattr(redactor, "text", None)) and callable(getattr(redactor, "value", None))):
        raise ValueError("redactor must have .text(str) and .value(obj) methods (see verdict.redact.Redactor)")
    if exporter is not None and not (callable(getattr(exporter, "export", None))
                                     and callable(getattr(exporter, "shutdown", None))):
        raise ValueError(f"exporter must be an opentelemetry SpanExporter, got {type(exporter).__name__}")
    if not isinstance(export_peer_spans, bool):
        raise ValueError(f"export_peer_spans must be True or False, got {export_peer_spans!r}")


def init(
    service_name: str | None = None,
    endpoint: str | None = None,
    *,
    tenant_id: str | None = None,
    headers: Mapping[str, str] | None = None,
    api_key: str | None = None,
    protocol: str | None = None,
    capture_content: bool | None = None,
    max_content_bytes: int | None = None,
    redactor: Redactor | None = None,
    exporter: SpanExporter | None = None,
    max_queue_size: int | None = None,
    max_export_batch_size: int | None = None,
    schedule_delay_millis: int | None = None,
    export_timeout_seconds: float | None = None,
    resource_attributes: Mapping[str, Any] | None = None,
    export_peer_spans: bool = False,
) -> TracingConfig:
    """Start exporting Verdict's LLM spans. Raises ValueError for any configuration error.

    Joins the app's global SDK TracerProvider when there is one (adding a processor, never replacing
    it); otherwise creates and registers one with `service.name` and `verdict.tenant_id`.
    `exporter` replaces the OTLP exporter (tests, custom backends).

    Next to other instrumentations on the same provider: spans started inside `intent_context` /
    `workload_context` get its keys whatever instrumentation starts them; `export_peer_spans=True`
    also exports their GenAI spans through this exporter, every string value redacted (with
    `redactor`, else the built-in one, whether or not `capture_content` is on).
    """
    config = resolve_config(
        service_name=service_name, endpoint=endpoint, tenant_id=tenant_id, headers=headers,
        api_key=api_key, protocol=protocol, capture_content=capture_content,
        max_content_bytes=max_content_bytes, max_queue_size=max_queue_size,
        max_export_batch_size=max_export_batch_size, schedule_delay_millis=schedule_delay_millis,
        export_timeout_seconds=export_timeout_seconds, resource_attributes=resource_attributes,
    )
    _check_arguments(redactor, exporter, export_peer_spans)
    builtin_redaction = config.capture_content and redactor is None
    if (config.capture_content or export_peer_spans) and redactor is None:
        try:
            redactor = load_redactor()
        except ImportError as exc:
            raise ValueError(f"content capture needs verdict.redact, which cannot be imported: {exc}") from None
    with _lock:
        if _config:
            raise ValueError("verdict.init() was already called; call verdict.shutdown() first")
        span_exporter = exporter if exporter is not None else _otlp_exporter(config)
        provider, owned = _provider(config)
        if provider not in _joined:
            provider.add_span_processor(ContextStampProcessor())
            provider.add_span_processor(_processor)
            _joined.append(provider)
        content_exporter = ContentExporter(
            span_exporter, redactor if config.capture_content else None, config.max_content_bytes,
            None if owned else provider.resource.merge(_resource(config)),
            peer_redactor=redactor if export_peer_spans else None)
        batch = BatchSpanProcessor(
            content_exporter,
            max_queue_size=config.max_queue_size,
            max_export_batch_size=config.max_export_batch_size,
            schedule_delay_millis=config.schedule_delay_millis,
        )
        _processor.attach(batch, config.max_queue_size, peer_spans=export_peer_spans)
        content_exporter.shed_content_above(_processor.backlog, max(config.max_queue_size // 2, 1))
        tracer = verdict_tracer(provider, builtin_redaction)
        STATE.current = Runtime(
            tracer=tracer,
            tenant_id=config.tenant_id,
            capture_content=config.capture_content,
            max_content_bytes=config.max_content_bytes,
            redactor=redactor if config.capture_content else None,
            deferred_content=True,
            deferred_response=owned,
            dup_system=emit_deprecated_system(),
            call_spans=CallSpans.of(provider, tracer, _processor) if owned else None,
        )
        _config.append(config)
    return config


def shutdown(timeout_seconds: float | None = None) -> None:
    """Flush and stop Verdict's exporter (bounded by the export timeout). Patched calls pass through."""
    with _lock:
        config = _config.pop() if _config else None
        STATE.current = None
        batch = _processor.detach()
    if batch is not None:
        timeout = timeout_seconds if timeout_seconds is not None else (config.export_timeout_seconds if config else 10)
        inner = getattr(batch, "_batch_processor", None)  # the SDK's BatchSpanProcessor takes no timeout
        if inner is not None:
            inner.shutdown(timeout_millis=int(timeout * 1000))
        else:
            batch.shutdown()


def flush(timeout_seconds: float = 10.0) -> bool:
    """Export every finished span now (blocking). True when there was nothing left or it succeeded."""
    return _processor.force_flush(int(timeout_seconds * 1000))


def _provider(config: TracingConfig) -> tuple[TracerProvider, bool]:
    """The SDK provider to add Verdict's processor to, and whether Verdict created it."""
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current, current in _created
    if not isinstance(current, trace.ProxyTracerProvider):
        raise ValueError(
            f"the global TracerProvider is a {type(current).__name__}, which cannot take span processors; "
            "configure an opentelemetry.sdk.trace.TracerProvider or call verdict.init() first"
        )
    created = TracerProvider(resource=Resource.create().merge(_resource(config)))
    trace.set_tracer_provider(created)
    current = trace.get_tracer_provider()  # another thread may have won the race
    if not isinstance(current, TracerProvider):
        raise ValueError(f"could not register a TracerProvider; the global one is {type(current).__name__}")
    if current is created:
        _created.append(created)
    return current, current is created


def _resource(config: TracingConfig) -> Resource:
    """The resource attributes given to `init()` (the SDK's defaults and OTEL_RESOURCE_ATTRIBUTES aside)."""
    attributes: dict[str, Any] = dict(config.resource_attributes)
    if config.service_name is not None:
        attributes["service.name"] = config.service_name
    if config.tenant_id is not None:
        attributes[sc.TENANT_ID] = config.tenant_id
    return Resource(attributes)


def _otlp_exporter(config: TracingConfig) -> SpanExporter:
    headers = dict(config.headers)
    if config.protocol == PROTOCOL_GRPC:
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcExporter,
            )
        except ImportError:
            raise ValueError(
                "protocol='grpc' needs opentelemetry-exporter-otlp-proto-grpc: pip install 'verdict-monitor[grpc]'"
            ) from None
        endpoint = config.endpoint
        insecure = endpoint.startswith("http://")
        return GrpcExporter(endpoint=endpoint, insecure=insecure, headers=headers,
                            timeout=config.export_timeout_seconds)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=config.endpoint, headers=headers, timeout=config.export_timeout_seconds)
