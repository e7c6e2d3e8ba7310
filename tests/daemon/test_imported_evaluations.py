"""Drift over other evaluators' results (docs/evaluations.md, "Drift over imported evaluations"): a team's own
`gen_ai.evaluation.result` records, sent with the real OTel SDK log exporter to the real collector process, are
a drift series like a judge's: a planted drop in one intent is flagged, a stable intent is not, records of
another version of the evaluator are never pooled in, and the report names the series."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.collector.conftest import Collector
from tests.daemon.conftest import NOW, make_config
from tests.daemon.lakes import synthetic_days, write_rows
from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.cycle import Cycle, build_evaluators, store_for
from verdict_daemon.service.imported_evaluations import value_of

TOKEN = "imported-evaluations-token-01"
SERIES = {"name": "support-qa", "evaluator": "support-qa-suite", "evaluator_version": "3",
          "evaluations": ["resolved"]}


def _send(collector: Collector, records: list[tuple[str, str, dict]]) -> None:
    """(trace id, span id, attributes) as gen_ai.evaluation.result records, parented to the span, through the
    OTel SDK's batching OTLP/HTTP log exporter."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    provider = LoggerProvider(resource=Resource.create({"service.name": "offline-evals"}))
    provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(
        endpoint=f"{collector.url}/v1/logs", headers={"Authorization": f"Bearer {TOKEN}"})))
    logger = provider.get_logger("support-qa-suite")
    for trace_id, span_id, attributes in records:
        span = trace.set_span_in_context(NonRecordingSpan(SpanContext(
            int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1))))
        logger.emit(event_name="gen_ai.evaluation.result", context=span, attributes=attributes)
    assert provider.force_flush(60_000)
    provider.shutdown()


def _record(label: str, version: str = "3") -> dict:
    return {"gen_ai.evaluation.name": "resolved", "gen_ai.evaluation.score.label": label,
            "gen_ai.evaluation.evaluator.name": "support-qa-suite", "gen_ai.evaluation.evaluator.version": version}


@pytest.fixture
def collector(tmp_path):
    data = tmp_path / "data"
    rows = synthetic_days(NOW, intents=("billing.v1", "search.v1"), per_day=40, days=9)
    write_rows(data, "acme", rows)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f'"{TOKEN}": acme\n')
    process = Collector(data, ("--tokens", str(tokens))).start()
    yield process, rows
    if process.proc and process.proc.poll() is None:
        process.proc.kill()
        process.proc.wait(30)


def test_a_drop_in_a_teams_own_scores_is_flagged_per_intent_and_a_stable_intent_is_not(collector):
    process, rows = collector
    last_day = NOW - timedelta(days=1)
    records = []
    for n, row in enumerate(rows):  # 40 a day per intent, one day and intent after the other
        recent = row["start_time"] >= last_day.timestamp() * 1e9
        # every 10th trace of a day unresolved; billing's last day: every other one (the planted drop)
        failed = n % 2 == 0 if recent and row["intent_key"] == "billing.v1" else n % 40 % 10 == 0
        records.append((row["trace_id"], row["span_id"], _record("FAIL" if failed else "pass")))
        if row["intent_key"] == "search.v1" and recent:  # version 2 of the suite failed all of search: not pooled
            records.append((row["trace_id"], row["span_id"], _record("fail", version="2")))
    _send(process, records)

    config = make_config(process.data_dir, imported_evaluations=[SERIES])
    cycle = Cycle(config, store_for(config), [])
    (series,) = cycle.imported
    runs = cycle.drift_imported(TenantId("acme"), series, NOW, None)
    signals = [(s.cluster, s.dimension, s.kind) for r in runs for s in r.signals]
    assert signals == [("billing.v1", "resolved", "regression")]
    assert {r.fingerprint for r in runs} == {series.fingerprint} and runs[-1].judgments == len(rows)
    (signal,) = [s for r in runs for s in r.signals]
    assert (signal.current_level, signal.baseline_level, signal.current_n) == (0.5, 0.9, 40)

    from verdict_daemon.report.writer import build_report

    report = build_report(process.data_dir, "acme")
    (section,) = report.evaluators
    assert (section.name, section.fingerprint) == ("support-qa", series.fingerprint)
    assert [(s.signal.cluster, s.signal.dimension) for s in section.signals] == [("billing.v1", "resolved")]

    # the whole cycle (`verdict pipeline`'s): the judge and the series drift side by side, each named in the summary
    later = NOW + timedelta(hours=1)
    summary = Cycle(config, store_for(config), build_evaluators(config)).run(TenantId("acme"), later)
    at = later.replace(tzinfo=None).isoformat()  # runs' as_of are naive UTC
    assert {(r["evaluator"], r["as_of"]) for r in summary["drift_runs"]} >= {("quality", at), ("support-qa", at)}
    assert {s["evaluator"] for s in summary["signals"]} <= {"quality", "support-qa"}


def test_a_series_of_another_version_or_scale_is_another_fingerprint(tmp_path):
    base = make_config(tmp_path, imported_evaluations=[SERIES])
    others = [{**SERIES, "evaluator_version": "4"}, {**SERIES, "scale": "score"}, {**SERIES, "evaluator": "x"}]
    fingerprints = {Cycle(make_config(tmp_path, imported_evaluations=[o]), None, []).imported[0].fingerprint  # type: ignore[arg-type]
                    for o in [*others, {**SERIES, "name": "renamed"}]}
    assert len(fingerprints) == 4 and Cycle(base, None, []).imported[0].fingerprint in fingerprints  # type: ignore[arg-type]


@pytest.mark.parametrize(("scale", "label", "score", "expected"), [
    ("label", "pass", None, ("PASS", None)), ("label", "FAIL", 0.3, ("FAIL", None)),
    ("label", " Unclear ", None, ("UNCLEAR", None)), ("label", "error", None, ("ERROR", None)),
    ("label", "unfaithful", 0.25, ("ERROR", None)),  # outside the vocabulary: unusable, never a pass or a fail
    ("label", None, 1.0, ("PASS", None)), ("label", None, 0.0, ("FAIL", None)), ("label", None, 0.5, ("ERROR", None)),
    ("label", None, None, ("ERROR", None)),
    ("score", "good", 0.75, (None, 0.75)), ("score", "pass", None, ("ERROR", None)),
])
def test_records_are_read_by_the_documented_vocabulary(scale, label, score, expected):
    assert value_of(scale, label, score) == expected


def test_a_series_sharing_an_evaluators_name_is_refused(tmp_path):
    with pytest.raises(DaemonError) as raised:
        make_config(tmp_path, imported_evaluations=[{**SERIES, "name": "quality"}])
    assert raised.value.code == "invalid_config" and "duplicate name(s) ['quality']" in raised.value.message
