"""Evaluation results out and in (docs/evaluations.md): `verdict pipeline` with a scripted judge exports each
judgment as `gen_ai.evaluation.result` log records to the real collector process (token auth through
`headers_env`), `verdict sql` reads them back from `evaluations` parented to the judged call; a dead endpoint
loses nothing, a lost acknowledgement resends without duplicating, and a foreign evaluator's record sent with
the real OTel SDK log exporter lands in the same view."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.collector.conftest import Collector
from tests.daemon.cli import env, write_config
from tests.daemon.conftest import NOW, make_config
from tests.daemon.lakes import synthetic_days, write_rows
from tests.daemon.test_sentinel import rows as _state

TOKEN = "evaluations-sink-token-0001"
AUTH_VARIABLE = "VERDICT_TEST_OTLP_AUTH"


def _dead_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pipeline(config: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.pipeline", "--json", "--config", str(config),
                           "--tenant", "acme", "--as-of", NOW.isoformat()], capture_output=True, text=True,
                          env=env(**{AUTH_VARIABLE: f"Bearer {TOKEN}"}), timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _sql(data: Path, query: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "sql", query, "--data-dir", str(data),
                           "--tenant", "acme", "--format", "json"], capture_output=True, text=True, env=env(),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _config(tmp_path: Path, data: Path, port: int) -> Path:
    return write_config(tmp_path / "verdict.toml", data, f"""
[export.evaluations]
endpoint = "http://127.0.0.1:{port}/v1/logs"
headers = {{ "X-Scope" = "verdict-tests" }}
headers_env = {{ Authorization = "{AUTH_VARIABLE}" }}
timeout_seconds = 10
batch_attempts = 5
""")


@pytest.fixture
def sink(tmp_path):
    """The lake's own collector, with a token for tenant acme; killed at the end."""
    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=("billing.v1", "search.v1"), per_day=3, days=2,
                                            corrupt="search.v1"))
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f'"{TOKEN}": acme\n')
    collector = Collector(data, ("--tokens", str(tokens)))
    yield collector
    if collector.proc and collector.proc.poll() is None:
        collector.proc.kill()
        collector.proc.wait(30)


def test_judgments_leave_as_evaluation_records_at_least_once_and_once_in_the_view(sink, tmp_path):
    data = sink.data_dir
    dead = _dead_port()
    first = _pipeline(_config(tmp_path, data, dead))
    judged = first["judged"]
    assert judged == 12 and first["errors"] == 0
    # the endpoint is down: judging went on, nothing was marked sent, the failure is counted
    assert first["evaluation_export"] == {"attempts": 0, "records": 0, "failed_requests": 1, "pending": judged,
                                          "error": "ConnectionRefusedError"}
    assert first["warnings"] == [f"evaluation export: the endpoint did not take a request (ConnectionRefusedError); "
                                 f"{judged} judgment attempt(s) not exported yet, sent on the next run "
                                 "([export.evaluations])"]

    sink.start()
    second = _pipeline(_config(tmp_path, data, sink.http_port))
    ((verdicts,),) = _state(data, "SELECT count(*) FROM dimension_verdicts")
    assert second["judged"] == 0  # nothing judged again: the export sends what the first run judged
    assert second["evaluation_export"] == {"attempts": judged, "records": verdicts, "failed_requests": 0,
                                           "pending": 0, "error": None}
    assert second["warnings"] == []

    rows = _sql(data, "SELECT e.*, c.intent_key FROM evaluations e JOIN llm_calls c USING (trace_id, span_id) "
                      "ORDER BY trace_id, name")
    assert len(rows) == verdicts == len({r["evaluation_id"] for r in rows})  # every record, on its judged call
    expected = _state(data, """SELECT s.trace_id, s.span_id, v.dimension, lower(v.value), v.reason, a.fingerprint
        FROM dimension_verdicts v JOIN judgment_attempts a USING (tenant_id, attempt_id)
        JOIN sampled_traces s USING (tenant_id, trace_id) ORDER BY s.trace_id, v.dimension""")
    assert [(r["trace_id"], r["span_id"], r["name"], r["score_label"], r["explanation"], r["evaluator_version"])
            for r in rows] == [tuple(e) for e in expected]
    assert {(r["score_label"], r["score_value"]) for r in rows} == {("pass", 1.0), ("fail", 0.0)}
    truncated = {r["trace_id"] for r in rows if r["name"] == "completeness" and r["score_label"] == "fail"}
    assert truncated and all(r["intent_key"] == "search.v1" for r in rows if r["trace_id"] in truncated)
    row = rows[0]
    assert (row["tenant_id"], row["evaluator_name"], row["evaluator_type"], row["service_name"]) == \
        ("acme", "quality", "llm_judge", "verdict-daemon")
    attributes = json.loads(row["attributes"])
    assert attributes["verdict.evaluation.judge.models"] == ["scripted/inspecting-judge"]
    assert attributes["verdict.evaluation.rubric.name"] and attributes["verdict.evaluation.attempt"] == 1

    # the acknowledgements are lost (a crash after the endpoint's 2xx, before the commit): all is sent again,
    # and the view still shows each record once
    con = duckdb.connect(str(data / "state.duckdb"))
    con.execute("DELETE FROM evaluation_exports")
    con.close()
    assert _pipeline(_config(tmp_path, data, sink.http_port))["evaluation_export"]["attempts"] == judged
    assert _sql(data, "SELECT count(*) AS n, count(DISTINCT evaluation_id) AS d FROM evaluations") == \
        [{"n": verdicts, "d": verdicts}]
    # and a run with everything acknowledged sends nothing
    assert _pipeline(_config(tmp_path, data, sink.http_port))["evaluation_export"]["attempts"] == 0


def test_a_foreign_evaluators_record_from_the_real_sdk_exporter_lands_in_the_view(sink):
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    sink.start()
    ((trace_id, span_id),) = [(r["trace_id"], r["span_id"]) for r in _sql(
        sink.data_dir, "SELECT trace_id, span_id FROM llm_calls ORDER BY trace_id LIMIT 1")]
    provider = LoggerProvider(resource=Resource.create({"service.name": "offline-evals"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(
        endpoint=f"{sink.url}/v1/logs", headers={"Authorization": f"Bearer {TOKEN}"})))
    judged_call = trace.set_span_in_context(NonRecordingSpan(SpanContext(
        int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1))))
    logger = provider.get_logger("ragas")
    logger.emit(event_name="gen_ai.evaluation.result", context=judged_call,
                attributes={"gen_ai.evaluation.name": "faithfulness", "gen_ai.evaluation.score.value": 0.25,
                            "gen_ai.evaluation.score.label": "unfaithful",
                            "gen_ai.evaluation.explanation": "two of eight claims are supported",
                            "gen_ai.evaluation.evaluator.name": "ragas.faithfulness",
                            "gen_ai.evaluation.evaluator.version": "0.2.15",
                            "gen_ai.evaluation.evaluator.type": "llm_judge"})
    logger.emit(event_name="gen_ai.client.inference.operation.details", context=judged_call)  # not an evaluation
    provider.shutdown()

    rows = _sql(sink.data_dir, "SELECT * EXCLUDE (attributes, received_at, time) FROM evaluations")
    assert len(rows) == 1
    assert {k: rows[0][k] for k in ("trace_id", "span_id", "name", "score_value", "score_label", "explanation",
                                    "evaluator_name", "evaluator_version", "evaluator_type", "service_name",
                                    "tenant_id")} == {
        "trace_id": trace_id, "span_id": span_id, "name": "faithfulness", "score_value": 0.25,
        "score_label": "unfaithful", "explanation": "two of eight claims are supported",
        "evaluator_name": "ragas.faithfulness", "evaluator_version": "0.2.15", "evaluator_type": "llm_judge",
        "service_name": "offline-evals", "tenant_id": "acme"}


def test_export_settings_are_checked_at_start(tmp_path, monkeypatch):
    from verdict_daemon.errors import DaemonError
    from verdict_daemon.service.daemon import Daemon

    (tmp_path / "data").mkdir()
    monkeypatch.delenv(AUTH_VARIABLE, raising=False)
    unset = make_config(tmp_path / "data", export={"evaluations": {
        "endpoint": "http://127.0.0.1:9/v1/logs", "headers_env": {"Authorization": AUTH_VARIABLE}}})
    with pytest.raises(DaemonError) as refused:
        Daemon(unset)
    assert (refused.value.code, refused.value.message) == ("invalid_config", "export.evaluations.headers_env."
                                                           f"Authorization: environment variable {AUTH_VARIABLE} is not set")
    for bad, why in (({"endpoint": "grpc://127.0.0.1:4317"}, "export.evaluations.endpoint: endpoint must start with"),
                     ({"headers": {"Bad Header": "x"}}, "export.evaluations.headers.Bad Header"),
                     ({"headers": {"X-A": "one\ntwo"}}, "header values must be printable")):
        with pytest.raises(DaemonError) as invalid:
            make_config(tmp_path / "data", export={"evaluations": bad})
        assert invalid.value.code == "invalid_config" and why in invalid.value.message, invalid.value.message


def test_an_error_attempt_is_one_record_with_its_error_type_and_no_score():
    """The record shape alone (the pipeline test above has no ERROR attempt): decoded from the real protobuf."""
    from datetime import datetime

    from google.protobuf.json_format import MessageToDict

    from verdict_daemon.service.evaluation_export import log_records
    from verdict_daemon.store.evaluation_exports import ExportableAttempt

    attempt = ExportableAttempt("a1", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "f" * 64, 2, "ERROR",
                                "invalid_reply", "the reply was not JSON", datetime(2026, 12, 1, 12, 0), "quality",
                                {"kind": "ensemble", "models": ["m1", "m2"]}, ())
    (record,) = [MessageToDict(r) for r in log_records("acme", attempt)]
    attributes = {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}
    assert attributes == {
        "gen_ai.evaluation.name": "quality", "gen_ai.evaluation.score.label": "error", "error.type": "invalid_reply",
        "gen_ai.evaluation.explanation": "the reply was not JSON", "gen_ai.evaluation.evaluator.name": "quality",
        "gen_ai.evaluation.evaluator.version": "f" * 64, "gen_ai.evaluation.evaluator.type": "llm_judge",
        "verdict.evaluation.attempt": "2", "verdict.evaluation.judge.models": {"values": [
            {"stringValue": "m1"}, {"stringValue": "m2"}]},
        "verdict.evaluation.id": attributes["verdict.evaluation.id"]}
    assert record["eventName"] == "gen_ai.evaluation.result" and record["timeUnixNano"] == "1796126400000000000"  # 2026-12-01T12:00Z
