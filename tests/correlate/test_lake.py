"""End to end: user signals recorded with the SDK helper travel through the real OpenTelemetry SDK and
the real collector into the span lake; a side file adds more; `verdict review correlate` joins them
with the judgments of a real monitoring cycle and reports the table a test can compute by hand."""

from __future__ import annotations

import json

import duckdb
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from sklearn.metrics import cohen_kappa_score

from tests.correlate.models import expected_overall
from tests.daemon.conftest import INTENTS, NOW
from tests.daemon.lakes import synthetic_days, write_rows
from tests.review.cli import review
from verdict.correlate import record_user_signal
from verdict.tenancy import TenantId
from verdict_daemon.config import parse_config
from verdict_daemon.review.correlation import lake_signals
from verdict_daemon.service.cycle import build_evaluators, run_cycle


def _signal_for(verdict: str, k: int) -> str:
    if verdict == "FAIL":
        return "copy" if k % 3 == 0 else "regenerate"  # strict on every third
    if verdict == "PASS":
        return "thumbs_down" if k % 4 == 0 else "thumbs_up"  # lenient on every fourth
    return "thumbs_up"  # UNCLEAR: excluded whatever the user did


@pytest.fixture
def judged_with_signals(tmp_path, collector_factory):
    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=INTENTS, per_day=40))
    config = parse_config({
        "data_dir": str(data), "tenants": [{"id": "acme"}], "sampling": {"per_cluster_per_window": 2},
        "judging": {"concurrency": 4},
        "evaluators": [{"name": "graded", "kind": "rubric", "model": "tests.correlate.models:graded"},
                       {"name": "inspecting", "kind": "rubric", "model": "tests.review.models:inspecting"}]})
    run_cycle(config, TenantId("acme"), NOW, build_evaluators(config))
    con = duckdb.connect(str(data / "state.duckdb"), read_only=True)
    sampled = con.execute("SELECT trace_id, query FROM sampled_traces ORDER BY trace_id").fetchall()
    con.close()

    collector = collector_factory("--allow-claimed-tenant", data_dir=data)
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot", "verdict.tenant_id": "acme"}))
    provider.add_span_processor(SimpleSpanProcessor(
        OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces")))
    side = []
    expected = []
    for k, (trace_id, query) in enumerate(sampled):
        verdict = expected_overall(query)
        kind = _signal_for(verdict, k)
        if k % 2:
            record_user_signal(kind, trace_id=trace_id, tracer_provider=provider)
        else:
            side.append({"trace_id": trace_id, "signal": kind, "timestamp": f"2026-11-19T0{k % 10}:00:00Z"})
        expected.append((trace_id, verdict, kind))
    # Noise with a known effect: an exact duplicate row, a neutral signal, and one contradiction.
    side += [dict(side[0]), {"trace_id": sampled[2][0], "signal": "view"}]
    contradicted = next(t for t, v, kind in expected if v == "PASS" and kind == "thumbs_up")
    record_user_signal("retry", trace_id=contradicted, tracer_provider=provider)
    provider.shutdown()
    assert collector.stop() == 0
    signals_file = tmp_path / "signals.jsonl"
    signals_file.write_text("".join(json.dumps(row) + "\n" for row in side))
    pairs = [(v, kind) for t, v, kind in expected if v != "UNCLEAR" and t != contradicted]
    return data, signals_file, pairs, sum(v == "UNCLEAR" for _, v, _ in expected)


def test_correlate_reports_the_hand_computed_table(capsys, judged_with_signals):
    data, signals_file, pairs, unclear = judged_with_signals
    positive = {"thumbs_up", "copy"}
    table = {f"{v.lower()}_{'positive' if kind in positive else 'negative'}": 0 for v in ("PASS", "FAIL")
             for kind in ("copy", "regenerate")}
    for verdict, kind in pairs:
        table[f"{verdict.lower()}_{'positive' if kind in positive else 'negative'}"] += 1
    base = ["--data-dir", str(data), "--tenant", "acme", "--signals-file", str(signals_file)]

    code, _, err = review(capsys, "correlate", *base)
    assert code == 2 and err["error"]["code"] == "evaluator_ambiguous" and len(err["error"]["fingerprints"]) == 2

    code, result, _ = review(capsys, "correlate", *base, "--evaluator", "graded")
    assert code == 0, result
    assert result["table"] == table and result["usable"] == len(pairs) == sum(table.values())
    assert result["counts"]["unclear_excluded"] == unclear
    assert result["counts"]["contradictory_traces"] == 1
    assert (result["counts"]["duplicate_rows"], result["counts"]["neutral_rows"]) == (1, 1)
    judge = [v for v, _ in pairs]
    users = ["PASS" if kind in positive else "FAIL" for _, kind in pairs]
    assert result["kappa"]["value"] == pytest.approx(cohen_kappa_score(judge, users), abs=1e-12)
    assert result["leniency"]["value"] == pytest.approx(table["pass_negative"] / judge.count("PASS"))
    assert result["strictness"]["value"] == pytest.approx(table["fail_positive"] / judge.count("FAIL"))
    assert result["dimension"] == "overall" and result["status"] in ("calibrated", "miscalibrated")

    # The lake alone holds half the signals (odd positions) and the contradiction.
    code, lake_only, _ = review(capsys, "correlate", "--data-dir", str(data), "--tenant", "acme",
                                "--evaluator", "graded", "--min-pairs", "1000")
    assert code == 0 and lake_only["status"] == "insufficient_data"
    assert 0 < lake_only["usable"] < result["usable"] and lake_only["counts"]["contradictory_traces"] == 1

    code, relevance, _ = review(capsys, "correlate", *base, "--evaluator", "graded", "--dimension", "relevance")
    assert code == 0 and relevance["table"] == table  # relevance is the only dimension this judge varies
    code, safety, _ = review(capsys, "correlate", *base, "--evaluator", "graded", "--dimension", "safety")
    assert code == 0 and safety["dimension"] == "safety"  # PASS everywhere: the relevance-UNCLEAR traces count too
    assert (safety["table"]["fail_positive"], safety["table"]["fail_negative"]) == (0, 0)
    assert safety["usable"] == len(pairs) + unclear and safety["counts"]["unclear_excluded"] == 0

    # Tenant scope: the signals landed in acme's partition only.
    assert lake_signals(data, TenantId("acme")) and lake_signals(data, TenantId("globex")) == []

    # --fail-on decides the exit code (checked here: building the judged lake is the slow part).
    assert _fail_on_outcomes(capsys, data, signals_file) == FAIL_ON_CASES

    # The span events are read from every lake of the tenant: the spans moved to another collector's data dir
    # (the data dir keeps state.duckdb) are found with --lake-dir, and only there.
    elsewhere = data.parent / "zone-b"
    elsewhere.mkdir()
    (data / "spans").rename(elsewhere / "spans")
    code, side_only, _ = review(capsys, "correlate", *base, "--evaluator", "graded")
    assert code == 0 and side_only["usable"] < result["usable"] and side_only["counts"]["contradictory_traces"] == 0
    code, union, _ = review(capsys, "correlate", *base, "--evaluator", "graded", "--lake-dir", str(elsewhere))
    same = ("table", "usable", "counts", "dimension")  # the bootstrap intervals follow the lake's row order
    assert code == 0 and {k: union[k] for k in same} == {k: result[k] for k in same}
    assert union["kappa"]["value"] == pytest.approx(result["kappa"]["value"], abs=1e-12)


FAIL_ON_CASES = [  # (flags, status, exit code)
    (["--min-ac1", "-1"], "calibrated", 0),  # any AC1 lower bound reaches -1
    (["--min-ac1", "1", "--fail-on", "uncalibrated"], "miscalibrated", 1),  # imperfect users: AC1 low < 1
    (["--min-ac1", "1", "--fail-on", "miscalibrated"], "miscalibrated", 1),
    (["--min-ac1", "1"], "miscalibrated", 0),  # no --fail-on: read `status`
    (["--min-ac1", "-1", "--fail-on", "uncalibrated"], "calibrated", 0),
    (["--min-pairs", "1000", "--fail-on", "miscalibrated"], "insufficient_data", 0),
    (["--min-pairs", "1000", "--fail-on", "uncalibrated"], "insufficient_data", 1),
]


def _fail_on_outcomes(capsys, data, signals_file) -> list:
    """`--fail-on` turns the status into the exit code; the JSON is printed either way."""
    base = ["--data-dir", str(data), "--tenant", "acme", "--evaluator", "graded", "--signals-file", str(signals_file),
            "--resamples", "200"]
    outcomes = []
    for flags, _, _ in FAIL_ON_CASES:
        code, result, err = review(capsys, "correlate", *base, *flags)
        outcomes.append((flags, result["status"], code if err is None else err))
    return outcomes


def test_correlate_refuses_a_bad_lake_option(capsys, tmp_path):
    for lake, says in ((("--lake-url", "ftp://bucket/x"), "expected s3://"),
                       (("--lake-dir", str(tmp_path / "typo")), "is not an existing directory")):
        code, _, err = review(capsys, "correlate", "--data-dir", str(tmp_path), "--tenant", "acme", *lake)
        assert code == 2 and err["error"]["code"] == "invalid_config" and says in err["error"]["message"], err
