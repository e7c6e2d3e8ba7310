"""OTLP/HTTP request bodies -> Export{Trace,Logs}ServiceRequest (protobuf or OTLP JSON, optionally gzip).

Parsing is done once, with the upb-backed generated messages (protobuf traces go to the compiled
decoder first: collector.spandata, collector.decoding); every failure becomes a `RequestError`
carrying the HTTP status and a message saying what is wrong.
"""

from __future__ import annotations

import base64
import functools
import json
import zlib
from dataclasses import dataclass
from typing import cast

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_COMPRESSED_MEMBERS = 64  # concatenated gzip members / zlib streams in one body


@dataclass(frozen=True)
class Signal:
    """One accepted OTLP signal: its messages and the JSON field names of its nesting."""

    name: str  # "traces" or "logs": the URL path /v1/<name>
    request: type
    response: type
    rejected_field: str  # partial_success field counting refused items
    resources: str  # OTLP JSON keys (camelCase) of the three nesting levels
    scopes: str
    items: str


TRACES = Signal("traces", ExportTraceServiceRequest, ExportTraceServiceResponse, "rejected_spans",
                "resourceSpans", "scopeSpans", "spans")
LOGS = Signal("logs", ExportLogsServiceRequest, ExportLogsServiceResponse, "rejected_log_records",
              "resourceLogs", "scopeLogs", "logRecords")
SIGNALS = {s.name: s for s in (TRACES, LOGS)}


class RequestError(Exception):
    """A request refused as a whole: HTTP status plus a precise reason (picklable across workers)."""

    def __init__(self, status: int, message: str):
        super().__init__(status, message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return self.message


def media_type(content_type: str | None) -> str:
    """The bare media type of a Content-Type header; 415 for anything but protobuf or JSON."""
    value = (content_type or "").split(";", 1)[0].strip().lower()
    if value not in (PROTOBUF, JSON):
        raise RequestError(
            415, f"unsupported content type {value or '(none)'!r}: use {PROTOBUF} or {JSON}"
        )
    return value


def decompress(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    """Undo Content-Encoding; the decompressed size is capped so a gzip bomb costs nothing.

    A body may hold several gzip members (or zlib streams), as concatenating compressed bodies
    produces: every one is decoded, the cap applying to their sum. Anything after the last one
    but zero padding is refused, so nothing of a body is acknowledged without being stored. Each
    further member costs a copy of the rest of the body (zlib's `unused_data`): their number is
    capped.
    """
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding not in ("gzip", "deflate"):
        raise RequestError(415, f"unsupported content encoding {encoding!r}: use gzip or none")
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    parts: list[bytes] = []
    size = 0
    rest = body
    while True:
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(rest, max_bytes - size + 1)
        except zlib.error as exc:
            where = f" (after {len(parts)} complete stream(s): trailing data?)" if parts else ""
            raise RequestError(400, f"malformed {encoding} body{where}: {exc}") from None
        size += len(out)
        if size > max_bytes:
            raise RequestError(413, f"decompressed body exceeds the limit of {max_bytes} bytes")
        if not inflater.eof:
            raise RequestError(400, f"truncated {encoding} body")
        parts.append(out)
        rest = inflater.unused_data.lstrip(b"\0")  # gzip(1) also tolerates zero padding
        if not rest:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        if len(parts) == MAX_COMPRESSED_MEMBERS:
            raise RequestError(400, f"{encoding} body has more than {MAX_COMPRESSED_MEMBERS} members")


def parse_protobuf(data: bytes, signal: Signal = TRACES):
    request = signal.request()
    try:
        request.ParseFromString(data)
    except DecodeError as exc:
        raise RequestError(400, f"malformed protobuf {signal.request.__name__}: {exc}") from None
    return request


# OTLP/JSON (opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding) names a field in lowerCamelCase (its
# proto JSON name) or as in the .proto, and encodes trace and span ids as hex where protobuf's JSON mapping
# expects base64. json_format keeps whichever spelling of a field comes last, so a body holding both would
# be acknowledged with half of it gone: every object is checked here first, against its message type.
_HEX_FIELDS = frozenset({"trace_id", "span_id", "parent_span_id"})


@functools.cache
def _fields(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    """Both spellings of every field of a message type -> the field."""
    return {**{f.name: f for f in descriptor.fields}, **{f.json_name: f for f in descriptor.fields}}


def _json_object(pairs: list[tuple[str, object]]) -> dict:
    """json.loads keeps the last of a repeated key in silence: a body holding one twice is refused."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RequestError(400, f"malformed JSON: key {key[:80]!r} appears twice in one object")
            seen.add(key)
    return obj


def _path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _message(obj: object, descriptor: Descriptor, where: str) -> dict:
    """One JSON object -> the same with proto JSON names and base64 ids; unknown fields dropped (OTLP
    receivers ignore them)."""
    if not isinstance(obj, dict):
        raise RequestError(400, f"{where or 'request body'} must be an object")
    fields = _fields(descriptor)
    out: dict = {}
    spelled: dict[str, str] = {}  # field name -> the key that set it
    for key, value in obj.items():
        field = fields.get(key)
        if field is None:
            continue
        first = spelled.setdefault(field.name, key)
        if first != key:
            raise RequestError(400, f"{where or 'request body'} has both {first!r} and {key!r}: one field, "
                               "two spellings; send each field once (either spelling)")
        out[field.json_name] = _value(field, value, _path(where, key))
    return out


def _value(field: FieldDescriptor, value: object, where: str) -> object:
    if value is None:
        return None
    if field.message_type is not None:
        if not field.is_repeated:
            return _message(value, field.message_type, where)
        if not isinstance(value, list):
            raise RequestError(400, f"{where} must be a list")
        return [_message(item, field.message_type, f"{where}[{i}]") for i, item in enumerate(value)]
    if field.name in _HEX_FIELDS and field.type == FieldDescriptor.TYPE_BYTES and value != "":
        if not isinstance(value, str):
            raise RequestError(400, f"{where} must be a hex string")
        try:
            return base64.b64encode(bytes.fromhex(value)).decode("ascii")
        except ValueError:
            raise RequestError(400, f"{where} is not valid hex: {value[:40]!r}") from None
    return value


def parse_json(data: bytes, signal: Signal = TRACES):
    try:
        doc = json.loads(data, object_pairs_hook=_json_object)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RequestError(400, f"malformed JSON: {exc}") from None
    request = signal.request()
    doc = _message(doc, request.DESCRIPTOR, "")
    try:
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)  # e.g. enum values added later
    except (json_format.ParseError, ValueError, TypeError, AttributeError) as exc:
        raise RequestError(400, f"invalid OTLP JSON: {str(exc)[:300]}") from None
    return request


def encode_response(kind: str, rejected: int, message: str, signal: Signal = TRACES) -> bytes:
    """Export*ServiceResponse in the request's encoding; partial_success only when set."""
    response = signal.response()
    if rejected or message:
        setattr(response.partial_success, signal.rejected_field, rejected)
        response.partial_success.error_message = message
    if kind == PROTOBUF:
        return cast(bytes, response.SerializeToString())  # (the signal's message class is looked up: Any)
    return json.dumps(json_format.MessageToDict(response)).encode()


def error_body(kind: str, status: int, message: str) -> bytes:
    """A google.rpc.Status body as OTLP/HTTP prescribes for failures."""
    from google.rpc.status_pb2 import Status

    grpc_code = {400: 3, 401: 16, 413: 8, 415: 3, 408: 4, 429: 8, 503: 14}.get(status, 2)
    if kind == PROTOBUF:
        return cast(bytes, Status(code=grpc_code, message=message).SerializeToString())  # google.rpc has no stubs
    return json.dumps({"code": grpc_code, "message": message}).encode()

