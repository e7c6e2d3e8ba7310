"""The OTLP logs signal: the real OpenTelemetry log exporters (HTTP and gRPC) against the real collector;
GenAI log events attached to their span in either arrival order; kill -9 under load; metrics refused."""

from __future__ import annotations

import gzip
import http.client
import json
import random
import time

import grpc
import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.collector import dialect_payloads as payloads
from tests.collector.lake_search import find_secrets
from tests.collector.test_dialect_replay import llm_calls, post
from tests.collector.test_durability import LoadGenerator


def _exporters(transport: str, port: int):
    if transport == "http":
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        base = f"http://127.0.0.1:{port}"
        return (OTLPSpanExporter(endpoint=f"{base}/v1/traces"),
                OTLPLogExporter(endpoint=f"{base}/v1/logs", compression=Compression.Gzip))
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
        OTLPLogExporter as GrpcLogExporter,
    )
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
        OTLPSpanExporter as GrpcSpanExporter,
    )

    return (GrpcSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True),
            GrpcLogExporter(endpoint=f"127.0.0.1:{port}", insecure=True))


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_real_log_exporter_events_attach_to_their_span(collector_factory, transport):
    collector = collector_factory()
    span_exporter, log_exporter = _exporters(transport, collector.http_port if transport == "http"
                                             else collector.grpc_port)
    resource = Resource.create({"service.name": "support-bot"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    scope = "opentelemetry.instrumentation.openai_v2"
    tracer, logger = tracer_provider.get_tracer(scope), logger_provider.get_logger(scope)

    with tracer.start_as_current_span("chat gpt-4o-mini") as span:  # events are exported before their span
        logger.emit(event_name="gen_ai.system.message", body={"content": payloads.SYSTEM},
                    attributes={"gen_ai.system": "openai"})
        logger.emit(event_name="gen_ai.user.message", body={"content": payloads.QUESTION},
                    attributes={"gen_ai.system": "openai"})
        logger.emit(event_name="gen_ai.choice", attributes={"gen_ai.system": "openai"}, body={
            "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": payloads.ANSWER}})
        span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                             "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 12,
                             "gen_ai.usage.output_tokens": 5})
    tracer_provider.shutdown()
    logger_provider.shutdown()

    stats = collector.stats()
    assert stats["logs_written"] == 3 and stats["spans_written"] == 1
    [row] = llm_calls(collector.data_dir)
    assert row["trace_id"] == f"{span.get_span_context().trace_id:032x}"
    assert (row["operation"], row["provider"], row["input_tokens"], row["dialect"]) == ("chat", "openai", 12,
                                                                                         "otel_genai")
    assert json.loads(row["input_messages"]) == [{"role": "user", "parts": [
        {"type": "text", "content": "My e-mail is <EMAIL> and my card <CARD>; refund order 42"}]}]
    assert json.loads(row["output_messages"]) == [{"role": "assistant", "parts": [
        {"type": "text", "content": "Refund issued for order 42; receipt sent to <EMAIL>"}], "finish_reason": "stop"}]
    assert json.loads(row["system_instructions"]) == [{"type": "text", "content": payloads.SYSTEM}]
    assert collector.stop() == 0
    assert find_secrets(collector.data_dir, payloads.SECRETS, "".join(collector.log)) == []


def test_events_in_another_request_hours_later_still_attach(collector_factory):
    collector = collector_factory()
    case = payloads.OPENAI_V2_EVENTS
    later = case.logs[0]
    for record in later.resource_logs[0].scope_logs[0].log_records:
        record.time_unix_nano += 3 * 3600 * 10**9  # a delayed log pipeline
    assert post(collector.http_port, "/v1/traces", case.traces[0])[0] == 200
    assert llm_calls(collector.data_dir)[0]["input_messages"] is None  # no content yet: nothing invented
    assert post(collector.http_port, "/v1/logs", later)[0] == 200
    assert post(collector.http_port, "/v1/logs", later)[0] == 200  # an exporter retry: the same records again
    [row] = llm_calls(collector.data_dir)
    assert len(json.loads(row["input_messages"])) == 1 and len(json.loads(row["output_messages"])) == 1


def test_logs_json_and_gzip_with_partial_rejection(collector_factory):
    collector = collector_factory()
    doc = {"resourceLogs": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "x"}}]},
                             "scopeLogs": [{"scope": {"name": "app"}, "logRecords": [
        {"timeUnixNano": str(payloads.T0), "traceId": "11" * 16, "spanId": "22" * 8, "eventName": "gen_ai.user.message",
         "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": payloads.QUESTION}}]}}},
        {"timeUnixNano": str(payloads.T0), "traceId": "11" * 16, "spanId": "2222", "body": {"stringValue": "x"}},
        {"body": {"stringValue": f"free text from {payloads.EMAIL}"}, "severityNumber": 9, "severityText": "INFO"},
    ]}]}]}
    conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
    conn.request("POST", "/v1/logs", body=gzip.compress(json.dumps(doc).encode()),
                 headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    response = conn.getresponse()
    body = json.loads(response.read())
    assert response.status == 200
    assert body["partialSuccess"]["rejectedLogRecords"] == "1"
    assert "logRecords[1]: span_id must be empty or 8 bytes" in body["partialSuccess"]["errorMessage"]
    from collector.views import open_scoped
    from verdict.tenancy import LOCAL_TENANT

    rows = open_scoped(collector.data_dir, LOCAL_TENANT).execute(
        "SELECT event_name, span_id, severity_text, body, input_messages FROM logs ORDER BY sequence").fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [("gen_ai.user.message", "22" * 8, None), (None, None, "INFO")]
    assert "<EMAIL>" in rows[0][4] and rows[1][3] == '"free text from <EMAIL>"'
    conn.request("POST", "/v1/logs", body=b"{", headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 400 and b"malformed JSON" in response.read()


def test_logs_need_the_token_like_traces(collector_factory, tmp_path):
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text('"acme-token-0123456789abcdef": acme\n')
    collector = collector_factory("--tokens", str(tokens))
    assert post(collector.http_port, "/v1/logs", payloads.OPENAI_V2_EVENTS.logs[0])[0] == 401
    conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
    conn.request("POST", "/v1/logs", body=payloads.OPENAI_V2_EVENTS.logs[0].SerializeToString(),
                 headers={"Content-Type": "application/x-protobuf", "Authorization": "Bearer acme-token-0123456789abcdef"})
    assert conn.getresponse().status == 200
    assert [p.name for p in (collector.data_dir / "logs").iterdir()] == ["tenant=acme"]


def test_metrics_are_refused_counted_and_logged_once_per_sender(collector_factory):
    collector = collector_factory()
    for _ in range(2):
        conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
        conn.request("POST", "/v1/metrics", body=b"", headers={"Content-Type": "application/x-protobuf"})
        response = conn.getresponse()
        assert response.status == 404 and b"metrics are not accepted" in response.read()
    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        export: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary("/opentelemetry.proto.collector.metrics.v1.MetricsService/Export")
        with pytest.raises(grpc.RpcError) as refused:
            export(b"")
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert collector.stats()["metrics_refused"] == 3
    assert collector.stop() == 0
    assert sum("refusing OTLP metrics" in line for line in collector.log) == 2  # one HTTP sender, one gRPC sender


class LogLoad(LoadGenerator):
    """Threads posting log requests with unique bodies; records the bodies of every acknowledged request."""

    def _client(self, seed: int) -> None:
        rng = random.Random(seed)
        n = 0
        while not self._stop.is_set():
            bodies = [f"record {seed}.{n + i}" for i in range(self.batch)]
            n += self.batch
            request = payloads.log_request([("gen_ai.user.message", {}, {"content": b}) for b in bodies],
                                           trace=rng.getrandbits(64) | 1, span=rng.getrandbits(63) | 1,
                                           scope="load", time_ns=time.time_ns())
            try:
                status, _ = post(self.port, "/v1/logs", request)
            except OSError:
                return  # the server died mid-request: not acknowledged
            if status == 200:
                with self._lock:
                    self.acked.update(bodies)


def test_kill9_under_load_loses_no_acknowledged_log_record(collector_factory):
    import duckdb

    collector = collector_factory("--batch-delay-ms", "50")
    with LogLoad(collector.http_port) as load:
        deadline = time.monotonic() + 20
        while len(load.acked) < 3000 and time.monotonic() < deadline:
            time.sleep(0.05)
        collector.kill9()
    assert len(load.acked) >= 3000, "too few acknowledgements to test anything"
    restarted = collector_factory(data_dir=collector.data_dir)
    stored = {json.loads(m)[0]["parts"][0]["content"] for (m,) in duckdb.execute(
        f"SELECT input_messages FROM read_parquet('{restarted.data_dir}/logs/*/*/*.parquet')").fetchall()}
    assert load.acked <= stored
