"""Each dialect's payload through the real collector process: one `llm_calls` row per call with every
first-class column, the messages redacted, and no planted secret anywhere under the data dir."""

from __future__ import annotations

import http.client
import json

import pytest

from collector.views import open_scoped
from tests.collector import dialect_payloads as payloads
from tests.collector.lake_search import find_secrets
from verdict.tenancy import LOCAL_TENANT


def post(port: int, path: str, request) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, body=request.SerializeToString(), headers={"Content-Type": "application/x-protobuf"})
    response = conn.getresponse()
    return response.status, response.read()


def llm_calls(data_dir, where: str = "true") -> list[dict]:
    con = open_scoped(data_dir, LOCAL_TENANT)
    cur = con.execute(f"SELECT * FROM llm_calls WHERE {where} ORDER BY trace_id")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _texts(messages_json: str | None) -> str:
    return json.dumps(json.loads(messages_json)) if messages_json else ""


@pytest.mark.parametrize("logs_first", [False, True], ids=["spans-then-logs", "logs-then-spans"])
def test_every_dialect_gives_one_redacted_row_per_call(collector_factory, logs_first):
    collector = collector_factory()
    for case in payloads.CASES:
        sends = [("/v1/traces", r) for r in case.traces] + [("/v1/logs", r) for r in case.logs]
        for path, request in reversed(sends) if logs_first else sends:
            status, body = post(collector.http_port, path, request)
            assert status == 200, (case.name, body)

    rows = llm_calls(collector.data_dir)
    assert len(rows) == len(payloads.CASES), [(r["name"], r["dialect"]) for r in rows]
    by_trace = {r["trace_id"]: r for r in rows}
    for case in payloads.CASES:
        trace = case.traces[0].resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
        row = by_trace[trace]
        assert row["dialect"] == case.dialect, case.name
        for column, value in case.expect.items():
            assert row[column] == value, (case.name, column, row[column])
        inputs, outputs = _texts(row["input_messages"]), _texts(row["output_messages"])
        assert "refund order 42" in inputs and "<EMAIL>" in inputs and "<CARD>" in inputs, (case.name, inputs)
        assert "Refund issued for order 42" in outputs and "<EMAIL>" in outputs, (case.name, outputs)
        # Every message is in the semconv shape: role + parts.
        for message in json.loads(row["input_messages"]) + json.loads(row["output_messages"]):
            assert message["role"] and isinstance(message["parts"], list), (case.name, message)
        if case.name not in ("anthropic-native+openllmetry", "verdict+openai-v2", "otel-semconv-1.26"):
            assert "support assistant" in _texts(row["system_instructions"]), case.name

    stats = collector.stats()
    assert stats["spans_by_dialect"] == {"openinference": 1, "openllmetry": 2, "otel_genai": 4, "anthropic": 1,
                                         "vercel_ai": 2, "pydantic_ai": 2, "verdict": 1, "openlit": 1, "genai_events": 1, "langfuse": 2, "genkit": 2,
                                         "mlflow": 2, "litellm": 2,
                                         "llama_index": 2}
    assert stats["logs_received"] == stats["logs_written"] == 4
    assert collector.stop() == 0
    assert find_secrets(collector.data_dir, payloads.SECRETS, "".join(collector.log)) == []


def test_duplicates_keep_tokens_counted_once(collector_factory):
    collector = collector_factory()
    for case in (payloads.ANTHROPIC_TWICE, payloads.VERCEL, payloads.VERDICT_AND_V2):
        for request in case.traces:
            assert post(collector.http_port, "/v1/traces", request)[0] == 200
    con = open_scoped(collector.data_dir, LOCAL_TENANT)
    spans_tokens = con.execute("SELECT sum(input_tokens) FROM spans").fetchone()[0]
    calls, tokens = con.execute("SELECT count(*), sum(input_tokens) FROM llm_calls").fetchone()
    assert (calls, tokens) == (3, 50 + 60 + 40)
    assert spans_tokens == 2 * 50 + 60 + 2 * 40  # every instrumentation's span is kept in `spans`


def test_spans_no_dialect_recognises_are_counted_per_scope(collector_factory):
    collector = collector_factory()
    request = payloads.trace_request(payloads.SpanSpec("my.http.client", "GET /orders", {
        "http.request.method": "GET", "url.full": f"https://shop.example/orders?email={payloads.EMAIL}"},
        trace=0x99, span=0x99))
    assert post(collector.http_port, "/v1/traces", request)[0] == 200
    stats = collector.stats()
    assert stats["unrecognised_scopes"] == {"my.http.client": 1} and stats["spans_by_dialect"] == {}
    assert llm_calls(collector.data_dir) == []
    assert collector.stop() == 0
    assert find_secrets(collector.data_dir, payloads.SECRETS) == []
