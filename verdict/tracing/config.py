"""`init()` options, resolved against the standard OTEL_* environment variables and validated once.

Every configuration error is a ValueError raised by `init()`, never at the first LLM call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from verdict import environment
from verdict.tenancy import validate_tenant_id

PROTOCOL_HTTP = "http/protobuf"
PROTOCOL_GRPC = "grpc"
_PROTOCOLS = (PROTOCOL_HTTP, PROTOCOL_GRPC)
_DEFAULT_ENDPOINTS = {PROTOCOL_HTTP: "http://localhost:4318", PROTOCOL_GRPC: "http://localhost:4317"}
_TRACES_PATH = "/v1/traces"

DEFAULT_MAX_CONTENT_BYTES = 64 * 1024
_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CONTENT_OFF = {"no_content", "false", "0", "none", "event_only"}
_CONTENT_ON = {"span_only", "span_and_event", "true", "1"}


@dataclass(frozen=True)
class TracingConfig:
    """Resolved, validated SDK configuration."""

    service_name: str | None
    tenant_id: str | None
    endpoint: str
    protocol: str
    headers: Mapping[str, str] = field(repr=False)  # may hold credentials: never printed
    capture_content: bool
    max_content_bytes: int
    max_queue_size: int
    max_export_batch_size: int
    schedule_delay_millis: int
    export_timeout_seconds: float
    resource_attributes: Mapping[str, Any]


def capture_content_from_env(default: bool = True) -> bool:
    raw = os.environ.get(_CONTENT_ENV)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in _CONTENT_OFF:
        return False
    if value in _CONTENT_ON:
        return True
    raise ValueError(
        f"{_CONTENT_ENV}={raw!r} is not understood; use NO_CONTENT to turn content capture off "
        "or SPAN_ONLY to keep it on"
    )


def parse_headers(raw: str, source: str) -> dict[str, str]:
    """Parse the OTLP header list format `k1=v1,k2=v2` (values URL-encoded)."""
    headers: dict[str, str] = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{source}: entry {name.strip()[:40]!r} is not of the form name=value")
        headers[unquote(name.strip()).lower()] = unquote(value.strip())
    return headers


def _check_headers(headers: Mapping[str, str], source: str) -> dict[str, str]:
    if not isinstance(headers, Mapping):
        raise ValueError(f"{source} must be a mapping of header name to value")
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"{source}: header names and values must be strings")
        if not name or any(c in name for c in " :\r\n\t") or any(c in value for c in "\r\n"):
            raise ValueError(f"{source}: header {name[:40]!r} has an invalid name or a line break")
        checked[name.lower()] = value
    return checked


def _check_endpoint(endpoint: str, source: str) -> None:
    if not isinstance(endpoint, str):
        raise ValueError(f"{source} must be a string URL")
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{source}={endpoint[:100]!r} must be an http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ValueError(f"{source}={endpoint[:100]!r} has an invalid port") from None


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return _positive_int(int(raw), name)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={raw!r} must be a positive integer") from None


def resolve_config(
    *,
    service_name: str | None,
    endpoint: str | None,
    tenant_id: str | None,
    headers: Mapping[str, str] | None,
    api_key: str | None,
    protocol: str | None,
    capture_content: bool | None,
    max_content_bytes: int | None,
    max_queue_size: int | None,
    max_export_batch_size: int | None,
    schedule_delay_millis: int | None,
    export_timeout_seconds: float | None,
    resource_attributes: Mapping[str, Any] | None,
) -> TracingConfig:
    """Each option, else its environment variable, else the default; checked in this order."""
    if service_name is not None and (not isinstance(service_name, str) or not service_name.strip()):
        raise ValueError("service_name must be a non-empty string")
    tenant = _tenant(tenant_id)
    resolved_protocol = _protocol(protocol)
    resolved_endpoint = _endpoint(endpoint, resolved_protocol)
    merged_headers = _headers(headers, api_key)
    if capture_content is None:
        capture_content = capture_content_from_env()
    elif not isinstance(capture_content, bool):
        raise ValueError(f"capture_content must be True or False, got {capture_content!r}")
    content_bytes = _max_content_bytes(max_content_bytes)
    queue, batch, delay = _batching(max_queue_size, max_export_batch_size, schedule_delay_millis)
    timeout = _export_timeout(export_timeout_seconds)
    attrs = dict(resource_attributes or {})
    for key, value in attrs.items():
        if not isinstance(key, str) or not isinstance(value, (str, bool, int, float)):
            raise ValueError(f"resource attribute {key!r} must map a string to a str/bool/int/float")

    return TracingConfig(
        service_name=service_name,
        tenant_id=tenant,
        endpoint=resolved_endpoint,
        protocol=resolved_protocol,
        headers=merged_headers,
        capture_content=capture_content,
        max_content_bytes=content_bytes,
        max_queue_size=queue,
        max_export_batch_size=batch,
        schedule_delay_millis=delay,
        export_timeout_seconds=timeout,
        resource_attributes=attrs,
    )


def _tenant(tenant_id: str | None) -> str | None:
    if tenant_id is None:
        tenant_id = environment.get("VERDICT_TENANT")  # or the deprecated VERDICT_TENANT_ID
    if tenant_id is not None:
        validate_tenant_id(tenant_id)
    return tenant_id


def _protocol(protocol: str | None) -> str:
    env = os.environ
    source = "protocol"
    if protocol is None:
        for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
            if env.get(name):
                protocol, source = env[name].strip(), name
                break
        else:
            protocol = PROTOCOL_HTTP
    if protocol == "http":
        protocol = PROTOCOL_HTTP
    if protocol not in _PROTOCOLS:
        raise ValueError(f"{source}={protocol!r} is not supported; use 'http/protobuf' or 'grpc'")
    return protocol


def _endpoint(endpoint: str | None, protocol: str) -> str:
    """The traces URL. Explicit endpoint and OTEL_EXPORTER_OTLP_ENDPOINT are base URLs; the
    traces-specific variable is used as is."""
    env = os.environ
    if endpoint is not None:
        _check_endpoint(endpoint, "endpoint")
        return _traces_url(endpoint, protocol)
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        resolved = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].strip()
        _check_endpoint(resolved, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        return resolved
    if env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        base = env["OTEL_EXPORTER_OTLP_ENDPOINT"].strip()
        _check_endpoint(base, "OTEL_EXPORTER_OTLP_ENDPOINT")
        return _traces_url(base, protocol)
    return _traces_url(_DEFAULT_ENDPOINTS[protocol], protocol)


def _headers(headers: Mapping[str, str] | None, api_key: str | None) -> dict[str, str]:
    """The OTLP headers of the environment, then `headers`, then the API key as a bearer token."""
    env = os.environ
    merged: dict[str, str] = {}
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        if env.get(name):
            merged.update(parse_headers(env[name], name))
    if headers is not None:
        merged.update(_check_headers(headers, "headers"))
    if api_key is None:
        api_key = env.get("VERDICT_API_KEY") or None
    if api_key is not None:
        if not isinstance(api_key, str) or not api_key.strip() or any(c in api_key for c in "\r\n "):
            raise ValueError("api_key must be a non-empty string without whitespace")
        merged["authorization"] = f"Bearer {api_key}"
    return merged


def _max_content_bytes(value: int | None) -> int:
    if value is None:
        value = _env_int("VERDICT_MAX_CONTENT_BYTES", DEFAULT_MAX_CONTENT_BYTES)
    _positive_int(value, "max_content_bytes")
    if value < 256:
        raise ValueError("max_content_bytes must be at least 256")
    return value


def _batching(
    max_queue_size: int | None, max_export_batch_size: int | None, schedule_delay_millis: int | None
) -> tuple[int, int, int]:
    """The batch span processor's queue size, batch size and delay."""
    queue = _positive_int(max_queue_size, "max_queue_size") if max_queue_size is not None else _env_int(
        "OTEL_BSP_MAX_QUEUE_SIZE", 2048
    )
    batch = (
        _positive_int(max_export_batch_size, "max_export_batch_size")
        if max_export_batch_size is not None
        else _env_int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", min(512, queue))
    )
    if batch > queue:
        raise ValueError(f"max_export_batch_size ({batch}) must not exceed max_queue_size ({queue})")
    delay = (
        _positive_int(schedule_delay_millis, "schedule_delay_millis")
        if schedule_delay_millis is not None
        else _env_int("OTEL_BSP_SCHEDULE_DELAY", 1000)
    )
    return queue, batch, delay


def _export_timeout(seconds: float | None) -> float:
    if seconds is None:
        seconds = _env_int("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000) / 1000
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError(f"export_timeout_seconds must be a positive number, got {seconds!r}")
    return float(seconds)


def _traces_url(base: str, protocol: str) -> str:
    if protocol == PROTOCOL_GRPC:
        return base
    stripped = base.rstrip("/")
    return stripped if stripped.endswith(_TRACES_PATH) else stripped + _TRACES_PATH
