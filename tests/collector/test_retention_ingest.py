"""A span or log record already older than --retention-days is refused through partial_success (counted in
/stats, logged once per sender) on every transport, never acknowledged and then deleted by the next
retention run. The real collector process, then a real `--maintenance-once` retention run."""

from __future__ import annotations

import base64
import http.client
import json
import random
import subprocess
import sys
import time
from typing import Any

import duckdb
import grpc
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from collector.loadgen import export_request
from tests.collector.conftest import Collector, read_spans

DAY_NS = 86_400 * 10**9
RETENTION_DAYS = 2
AGES = (0, RETENTION_DAYS, RETENTION_DAYS + 3)  # today, the oldest day kept, a day retention deletes
TRANSPORTS = ("http-protobuf", "http-json", "grpc")


def _traces(seed: int, now_ns: int) -> trace_service_pb2.ExportTraceServiceRequest:
    request = export_request(random.Random(seed), len(AGES), now_ns)
    for span, age in zip(request.resource_spans[0].scope_spans[0].spans, AGES, strict=True):
        span.start_time_unix_nano -= age * DAY_NS
        span.end_time_unix_nano -= age * DAY_NS
    return request


def _logs(seed: int, now_ns: int) -> logs_service_pb2.ExportLogsServiceRequest:
    request = logs_service_pb2.ExportLogsServiceRequest()
    records = request.resource_logs.add().scope_logs.add().log_records
    for age in AGES:
        record = LogRecord(time_unix_nano=now_ns - age * DAY_NS, trace_id=random.Random(seed).randbytes(16),
                           span_id=bytes([age + 1] * 8))
        record.body.string_value = f"record {seed} aged {age} days"
        records.append(record)
    return request


def _hex_ids(doc: object) -> object:
    """protobuf's JSON mapping -> OTLP/JSON: ids in hex, not base64."""
    if isinstance(doc, list):
        return [_hex_ids(v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    return {k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v)
            for k, v in doc.items()}


def _export(collector: Collector, transport: str, signal: str, request: Any) -> tuple[int, str]:
    """(rejected count, message) of partial_success."""
    response_type: Any = {"traces": trace_service_pb2.ExportTraceServiceResponse,  # either message class
                          "logs": logs_service_pb2.ExportLogsServiceResponse}[signal]
    if transport == "grpc":
        with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
            stub = (trace_service_pb2_grpc.TraceServiceStub if signal == "traces"
                    else logs_service_pb2_grpc.LogsServiceStub)(channel)
            response = stub.Export(request, timeout=30)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
        if transport == "http-json":
            body = json.dumps(_hex_ids(json_format.MessageToDict(request))).encode()
            conn.request("POST", f"/v1/{signal}", body=body, headers={"Content-Type": "application/json"})
        else:
            conn.request("POST", f"/v1/{signal}", body=request.SerializeToString(),
                         headers={"Content-Type": "application/x-protobuf"})
        answer = conn.getresponse()
        body = answer.read()
        assert answer.status == 200, body
        response = (json_format.Parse(body, response_type()) if transport == "http-json"
                    else response_type.FromString(body))
    partial = response.partial_success
    rejected = partial.rejected_spans if signal == "traces" else partial.rejected_log_records
    return rejected, partial.error_message


def _stored(data_dir) -> tuple[set[str], set[str]]:
    """(span ids of the stored spans, bodies of the stored log records)."""
    spans = {row["span_id"] for row in read_spans(data_dir)}
    logs = duckdb.connect().execute(
        f"SELECT body FROM read_parquet('{data_dir}/logs/*/*/*.parquet')").fetchall()
    return spans, {json.loads(body) for (body,) in logs}


def test_items_outside_retention_are_refused_on_every_transport_and_never_acknowledged_then_deleted(
        collector_factory):
    collector = collector_factory("--retention-days", str(RETENTION_DAYS))
    now_ns = time.time_ns()
    kept: dict[str, set[str]] = {"traces": set(), "logs": set()}  # span ids, log record bodies
    for seed, transport in enumerate(TRANSPORTS):
        traces, logs = _traces(seed, now_ns + seed), _logs(seed, now_ns + seed)
        kept["traces"].update(s.span_id.hex() for s in traces.resource_spans[0].scope_spans[0].spans[:-1])
        kept["logs"].update(r.body.string_value for r in logs.resource_logs[0].scope_logs[0].log_records[:-1])
        for signal, request in (("traces", traces), ("logs", logs)):
            rejected, message = _export(collector, transport, signal, request)
            assert rejected == 1, (transport, signal, message)
            assert "older than the collector's retention of 2 days" in message, message
            assert f"[{len(AGES) - 1}]: dated" in message  # the oldest one
    stats = collector.stats()
    assert stats["spans_outside_retention"] == stats["spans_rejected"] == len(TRANSPORTS)
    assert stats["logs_outside_retention"] == stats["logs_rejected"] == len(TRANSPORTS)
    assert stats["spans_received"] == stats["logs_received"] == 2 * len(TRANSPORTS)
    assert collector.stop() == 0
    # One HTTP sender and one gRPC sender, each logged once (the HTTP one sent four requests).
    assert sum("older than --retention-days" in line for line in collector.log) == 2, collector.log
    assert _stored(collector.data_dir) == (kept["traces"], kept["logs"])

    # What was acknowledged survives the retention run that follows.
    done = subprocess.run([sys.executable, "-m", "collector", "--data-dir", str(collector.data_dir),
                           "--retention-days", str(RETENTION_DAYS), "--maintenance-once"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _stored(collector.data_dir) == (kept["traces"], kept["logs"])
