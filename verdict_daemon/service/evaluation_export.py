"""Judgments out as OpenTelemetry: each finished attempt becomes `gen_ai.evaluation.result` log records, posted as
one OTLP/HTTP protobuf request per batch to `[export.evaluations] endpoint` (docs/evaluations.md).

- One record per dimension verdict of an OK attempt; one record for an ERROR attempt (`error.type` its code).
  NO_CONTENT attempts judged nothing and are not sent.
- Each record is parented to the judged call's span (its trace_id and span_id), so a backend shows it on that
  span; a conversation judged as a whole, to its first turn's graded call. Its time is the judgment's, and its attributes are derived from stored rows only, so a resent record
  is byte for byte the one sent before; `verdict.evaluation.id` names it for receivers that deduplicate.
- At least once: an attempt is marked exported (store.evaluation_exports) only after the endpoint answered
  2xx. A failed request (refused, unreachable, timed out) ends the run and is counted in the report and the
  log (`export_failed`); the attempts wait for the next run. Judging never waits for the export.
- A plain POST (service/webhook.py: the configured URL only, no redirects, a whole-request deadline) rather
  than the OTel SDK's batching exporter: the SDK reports no per-record outcome, and the outbox needs one.
  A 2xx with `partial_success` rejections is taken as delivered, as OTLP asks (rejected records are not retried).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from verdict import semconv as sc
from verdict.tenancy import TenantId
from verdict_daemon.config import EvaluationExport
from verdict_daemon.service import webhook
from verdict_daemon.service.conversation import judged_trace
from verdict_daemon.store import evaluation_exports
from verdict_daemon.store.evaluation_exports import ExportableAttempt, ExportableVerdict
from verdict_daemon.store.state import StateStore

log = logging.getLogger("verdict.daemon")

SCOPE = "verdict.evaluations"
SERVICE = "verdict-daemon"
# gen_ai.evaluation.evaluator.type by the evaluator's kind ([[evaluators]] kind)
EVALUATOR_TYPES = {"rubric": "llm_judge", "ensemble": "llm_judge", "graph": "judge_graph"}
# score.value of the binary verdicts; UNCLEAR and ERROR have a label and no value
BINARY_SCORES = {"PASS": 1.0, "FAIL": 0.0}
_EPOCH = datetime(1970, 1, 1)  # judged_at is naive UTC


@dataclass(frozen=True)
class ExportReport:
    attempts: int  # attempts the endpoint acknowledged in this run
    records: int  # their records
    failed_requests: int  # requests the endpoint did not take (the run stops at the first)
    pending: int  # attempts still waiting after the run
    error: str | None  # the failed request's reason (`HTTP 503`, `ConnectionRefusedError`, ...)

    def warning(self) -> str | None:
        """What a run that could not export says (the summary's warnings): nothing is lost, but nothing left."""
        if not self.failed_requests:
            return None
        return (f"evaluation export: the endpoint did not take a request ({self.error}); {self.pending} judgment "
                "attempt(s) not exported yet, sent on the next run ([export.evaluations])")

    def as_dict(self) -> dict[str, Any]:
        return {"attempts": self.attempts, "records": self.records, "failed_requests": self.failed_requests,
                "pending": self.pending, "error": self.error}


def record_id(tenant: str, attempt_id: str, dimension: str | None) -> str:
    return hashlib.sha256(f"{tenant}\0{attempt_id}\0{dimension or ''}".encode()).hexdigest()[:32]


def _value(key: str, value: str | float | int | list[str]):
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

    if isinstance(value, list):
        return KeyValue(key=key, value=AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=v) for v in value])))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _provenance(attempt: ExportableAttempt) -> dict[str, str | int | list[str]]:
    """The evaluator attributes every record of the attempt carries."""
    definition = attempt.definition
    rubric = definition.get("rubric") or {}
    attrs: dict[str, str | int | list[str]] = {
        sc.EVALUATOR_NAME: attempt.evaluator, sc.EVALUATOR_VERSION: attempt.fingerprint,
        sc.EVALUATOR_TYPE: EVALUATOR_TYPES.get(str(definition.get("kind")), "judge_graph"),
        sc.EVALUATION_ATTEMPT: attempt.attempt_no,
    }
    if rubric.get("name"):
        attrs[sc.EVALUATION_RUBRIC_NAME] = str(rubric["name"])
        attrs[sc.EVALUATION_RUBRIC_VERSION] = str(rubric.get("version", ""))
    if definition.get("models"):
        attrs[sc.EVALUATION_JUDGE_MODELS] = [str(m) for m in definition["models"]]
    return attrs


def _result(verdict: ExportableVerdict) -> dict[str, str | float]:
    """name, score.value, score.label and explanation of one dimension verdict."""
    attrs: dict[str, str | float] = {sc.EVALUATION_NAME: str(verdict.dimension)}
    score = verdict.score if verdict.score is not None else BINARY_SCORES.get(verdict.value or "")
    if score is not None:
        attrs[sc.EVALUATION_SCORE_VALUE] = float(score)
    if verdict.value is not None:
        attrs[sc.EVALUATION_SCORE_LABEL] = verdict.value.lower()
    if verdict.reason:
        attrs[sc.EVALUATION_EXPLANATION] = verdict.reason
    return attrs


def log_records(tenant: str, attempt: ExportableAttempt) -> list:
    """The attempt's `gen_ai.evaluation.result` records (OTLP LogRecord messages)."""
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, SeverityNumber

    at = (attempt.judged_at - _EPOCH) // timedelta(microseconds=1) * 1000  # exact: no float rounding
    if attempt.status == "ERROR":
        results: list[tuple[str | None, dict[str, str | float]]] = [(None, {
            sc.EVALUATION_NAME: attempt.evaluator, sc.EVALUATION_SCORE_LABEL: "error",
            sc.ERROR_TYPE: attempt.error_code or sc.ERROR_TYPE_OTHER,
            **({sc.EVALUATION_EXPLANATION: attempt.error_message} if attempt.error_message else {})})]
    else:
        results = [(v.dimension, _result(v)) for v in attempt.verdicts]
    provenance = _provenance(attempt)
    return [LogRecord(
        time_unix_nano=at, observed_time_unix_nano=at, severity_number=SeverityNumber.SEVERITY_NUMBER_INFO,
        severity_text="INFO", event_name=sc.EVENT_EVALUATION_RESULT, trace_id=bytes.fromhex(judged_trace(attempt.trace_id)),
        span_id=bytes.fromhex(attempt.span_id), flags=1,
        attributes=[_value(k, v) for k, v in {**attrs, **provenance,
                                              sc.EVALUATION_RECORD_ID: record_id(tenant, attempt.attempt_id, dim)}.items()])
        for dim, attrs in results]


def request_body(tenant: str, records: list) -> bytes:
    """One ExportLogsServiceRequest: the daemon as the resource (claiming `tenant`), Verdict's scope."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs, ScopeLogs
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource

    from verdict import __version__

    resource = Resource(attributes=[_value(sc.SERVICE_NAME, SERVICE), _value(sc.TENANT_ID, tenant)])
    scope = ScopeLogs(scope=InstrumentationScope(name=SCOPE, version=__version__), log_records=records)
    request = ExportLogsServiceRequest(resource_logs=[ResourceLogs(resource=resource, scope_logs=[scope])])
    return request.SerializeToString(deterministic=True)


def export(store: StateStore, tenant: TenantId, config: EvaluationExport,
           should_stop: Callable[[], bool] = lambda: False) -> ExportReport:
    """Send the tenant's unexported attempts, batch by batch, until none is left, `max_batches_per_run`, a
    failed request or a stop request."""
    endpoint = config.endpoint
    assert endpoint is not None, "export runs only with an endpoint ([export.evaluations])"
    headers = {**config.resolved_headers(), "Content-Type": "application/x-protobuf", "User-Agent": SERVICE}
    attempts = records = failed = 0
    error = None
    for _ in range(config.max_batches_per_run):
        batch = [] if should_stop() else evaluation_exports.pending(store, tenant, config.batch_attempts)
        if not batch:
            break
        per_attempt = {a.attempt_id: log_records(tenant, a) for a in batch}
        body = request_body(tenant, [r for rs in per_attempt.values() for r in rs])
        error = webhook.post(endpoint, body, headers, config.timeout_seconds).error
        if error is not None:
            failed += 1
            log.error("job=export tenant=%s error=export_failed: %d attempt(s) not taken by %s (%s); "
                      "sent again next run", tenant, len(batch), endpoint, error)
            break
        evaluation_exports.acknowledge(store, tenant, {k: len(v) for k, v in per_attempt.items()},
                                       datetime.now(UTC).replace(tzinfo=None))
        attempts += len(batch)
        records += sum(len(v) for v in per_attempt.values())
        if len(batch) < config.batch_attempts:
            break
    return ExportReport(attempts, records, failed, evaluation_exports.unexported(store, tenant), error)
