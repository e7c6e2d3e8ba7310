"""The report's figures against hand counts over the raw state tables and independent references
(statsmodels' Wilson interval and power analysis), on a state.duckdb the real pipeline produced."""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np
import pytest
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint

from tests.daemon.conftest import INTENTS
from tests.report.conftest import NOW, section
from verdict.drift.model import window_to_reach
from verdict.tenancy import TenantId
from verdict_daemon.report import build_report
from verdict_daemon.report.gather import UNASSIGNED
from verdict_daemon.report.render import render

AT = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def data(lake):
    return build_report(lake.data_dir, "acme", generated_at=AT)


@pytest.fixture(scope="module")
def raw(lake) -> list[dict]:
    """Latest attempt per (trace, fingerprint) with its verdicts, computed in Python from the raw tables."""
    con = duckdb.connect(str(lake.data_dir / "state.duckdb"), read_only=True)
    try:
        attempts = con.execute("SELECT trace_id, fingerprint, attempt_no, attempt_id, status FROM judgment_attempts "
                               "WHERE tenant_id = 'acme'").fetchall()
        verdicts = con.execute("SELECT attempt_id, dimension, value FROM dimension_verdicts "
                               "WHERE tenant_id = 'acme'").fetchall()
        started = dict(con.execute("SELECT trace_id, started_at FROM sampled_traces WHERE tenant_id = 'acme'").fetchall())
        clusters = dict(con.execute("SELECT trace_id, cluster FROM cluster_assignments "
                                    "WHERE tenant_id = 'acme'").fetchall())
    finally:
        con.close()
    latest: dict[tuple[str, str], tuple] = {}
    for trace, fp, no, attempt_id, status in attempts:
        if (trace, fp) not in latest or no > latest[(trace, fp)][0]:
            latest[(trace, fp)] = (no, attempt_id, status)
    by_attempt: dict[str, list[tuple[str, str]]] = {}
    for attempt_id, dimension, value in verdicts:
        by_attempt.setdefault(attempt_id, []).append((dimension, value))
    return [{"trace": trace, "fp": fp, "status": status, "started": started[trace],
             "cluster": clusters.get(trace, UNASSIGNED), "verdicts": by_attempt.get(attempt_id, [])}
            for (trace, fp), (_, attempt_id, status) in latest.items()]


def _counts(raw, fingerprint, keep) -> tuple[Counter, Counter]:
    passed: Counter[str] = Counter()
    usable: Counter[str] = Counter()
    for r in (r for r in raw if r["fp"] == fingerprint):
        for dimension, value in r["verdicts"]:
            key = keep(r, dimension)
            if key is not None and value in ("PASS", "FAIL"):
                usable[key] += 1
                passed[key] += value == "PASS"
    return passed, usable


@pytest.mark.parametrize(("name", "dimensions"), [("quality", 4), ("format", 1)])
def test_daily_pass_rates_equal_hand_counts_with_statsmodels_wilson_bands(data, raw, name, dimensions):
    evaluator = section(data, name)
    passed, usable = _counts(raw, evaluator.fingerprint, lambda r, d: (r["cluster"], d, r["started"].date()))
    points = {(s.cluster, s.dimension, p.day): p for s in evaluator.series for p in s.points}
    assert set(points) == set(usable)  # every (cluster, dimension, day) with a PASS/FAIL verdict, and no other
    assert len(points) == 4 * dimensions * 9
    for key, p in points.items():
        assert (p.passed, p.usable) == (passed[key], usable[key]), key
        assert p.rate == pytest.approx(passed[key] / usable[key])
        low, high = proportion_confint(passed[key], usable[key], alpha=0.05, method="wilson")
        assert (p.low, p.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12)), key
    last_day = {dim: p.rate for (cluster, dim, day), p in points.items()
                if cluster == "search.v1" and day == (NOW - timedelta(days=1)).date()}
    # The regression: every truncated answer of the day fails. The day's sample is a uniform draw over
    # all its traces, so it may include the three late hostile traces, whose answers can pass.
    assert last_day[{"quality": "completeness", "format": "complete"}[name]] <= 3 / 40


def test_the_noisy_judge_gives_real_intervals(data):
    rates = [p.rate for s in section(data, "quality").series for p in s.points]
    assert any(0 < r < 1 for r in rates)  # not only 0 and 1: the Wilson comparison above is not trivial


def test_evaluators_are_never_pooled(data):
    assert [e.name for e in data.evaluators] == ["format", "quality"]
    dims = {e.name: {s.dimension for s in e.series} for e in data.evaluators}
    assert dims == {"format": {"complete"}, "quality": {"completeness", "instruction_following", "relevance", "safety"}}
    assert len({e.fingerprint for e in data.evaluators}) == 2 and all(e.run for e in data.evaluators)


def test_heatmap_is_the_latest_runs_current_window(data, raw):
    quality = section(data, "quality")
    run = quality.run
    assert quality.heat_period == (run.current_start, run.as_of) == (datetime(2026, 11, 19), datetime(2026, 11, 20))
    passed, usable = _counts(raw, quality.fingerprint,
                             lambda r, d: (r["cluster"], d) if run.current_start <= r["started"] < run.as_of else None)
    cells = {(c.cluster, c.dimension): c for c in quality.heatmap}
    assert set(cells) == set(usable) and len(cells) == 16
    for key, cell in cells.items():
        assert (cell.passed, cell.usable, cell.rate) == (passed[key], usable[key], pytest.approx(passed[key] / usable[key]))
    flagged = {key: c.signal for key, c in cells.items() if c.signal}
    assert flagged == {("search.v1", "completeness"): "regression"}


def test_signals_equal_the_latest_run_with_mde_from_statsmodels_power(lake, data):
    stored = sorted(lake.summary["signals"], key=lambda s: s["evaluator"])
    shown = [(e.name, s) for e in data.evaluators for s in e.signals]
    assert [(name, s.signal.cluster, s.signal.dimension, s.signal.kind) for name, s in shown] == [
        (s["evaluator"], s["cluster"], s["dimension"], s["kind"]) for s in stored] == [
        ("format", "search.v1", "complete", "regression"), ("quality", "search.v1", "completeness", "regression")]
    quality = section(data, "quality")
    [row], expected = quality.signals, stored[1]
    signal = row.signal
    assert row.scored is False
    assert (signal.signal_id, signal.fingerprint) == (expected["signal_id"], expected["fingerprint"])
    for field in ("baseline_level", "current_level", "baseline_n", "current_n", "delta", "delta_low", "delta_high",
                  "p_value", "adjusted_p"):
        assert getattr(signal, field) == pytest.approx(expected[field]), field
    # MDE: the smallest drop from the baseline rate detected with 80 % power (arcsine h) at the level the
    # detector tests a lone cell at: the quality share (0.9) of the run's alpha over its tested cells and the
    # cell's comparisons, here one (the lake's history is too short for a reference window; the figure the
    # report recomputed before drift_signals.mde assumed two, and showed a larger MDE than the detector had)
    level = quality.run.alpha * 0.9 / quality.run.tested
    h = NormalIndPower().solve_power(nobs1=signal.baseline_n, ratio=signal.current_n / signal.baseline_n,
                                     alpha=level, power=0.8)
    p1 = signal.baseline_level
    reference = p1 - np.sin(np.arcsin(np.sqrt(p1)) - h / 2) ** 2
    assert row.mde == pytest.approx(reference, rel=1e-4)
    assert list(signal.examples) == [x.trace_id for x in row.examples] == expected["examples"]


def test_signal_examples_carry_the_redacted_conversation_and_rationale(data):
    [signal] = section(data, "quality").signals
    hostile = signal.examples[0]
    assert hostile.trace_id.endswith("bad0") and hostile.value == "FAIL"
    assert hostile.query.startswith("Where is my order")
    assert "with your order number and then" in hostile.response
    assert "so it is FAIL" in hostile.reason
    assert all(x.value == "FAIL" and x.reason for x in signal.examples)


def test_coverage_counts_unclear_and_error_by_hand(lake, data, raw):
    quality = section(data, "quality")
    rows = {r.cluster: r for r in quality.coverage}
    assert set(rows) == {"account.v1", "billing.v1", "returns.v1", "search.v1"}
    for cluster, row in rows.items():
        mine = [r for r in raw if r["cluster"] == cluster and r["fp"] == quality.fingerprint]
        errors = sum(r["status"] == "ERROR" for r in mine)
        unclear = sum(v == "UNCLEAR" for r in mine for _, v in r["verdicts"])
        verdicts = sum(len(r["verdicts"]) for r in mine)
        assert (row.sampled, row.judged, row.error_traces, row.unclear, row.verdicts) == (360, len(mine), errors, unclear, verdicts)
        assert row.usable == verdicts - unclear and row.pending == 0
    assert sum(r.error_traces for r in rows.values()) == lake.summary["errors"] > 0  # the graph never errs
    assert sum(r.unclear for r in rows.values()) > 0


def test_spend_and_sentinel_equal_the_pipeline_summary(lake, data):
    expected = {e["name"]: e for e in lake.summary["evaluators"]}
    assert [s.evaluator for s in data.spend] == ["format", "quality"]
    for spend in data.spend:
        evaluator = expected[spend.evaluator]
        assert spend.fingerprint == evaluator["fingerprint"]
        assert (spend.input_tokens, spend.output_tokens) == (evaluator["input_tokens"], evaluator["output_tokens"])
        assert (spend.attempts, spend.errors) == (1440, evaluator["errors"])
        # the requests the run counted, stored per attempt; a scripted judge sends one per attempt it judges
        assert spend.requests == evaluator["requests"] > 0
        assert spend.requests_per_attempt == evaluator["requests_per_judgment"]
    assert sum(d.input_tokens for d in data.spend_days) == sum(s.input_tokens for s in data.spend)
    [health] = lake.summary["sentinel_health"]
    [row] = data.sentinel
    assert (row.status, row.usable, row.passed, row.sentinel_file) == ("healthy", 10, 10, "sentinel.jsonl")
    assert row.pass_rate_low == pytest.approx(health["pass_rate_low"]) and row.checks == 1


def test_a_tenant_with_spans_but_nothing_judged_gets_empty_sections(lake):
    empty = build_report(lake.data_dir, "globex")
    assert (empty.evaluators, empty.sentinel, empty.spend, empty.sampled_traces) == ((), (), (), 0)


def test_a_data_dir_without_state_reports_its_lake_tenants_only(lake, tmp_path):
    import shutil

    from verdict_daemon.errors import DaemonError

    shutil.copytree(lake.data_dir / "spans", tmp_path / "spans")
    assert build_report(tmp_path, "acme").evaluators == ()
    with pytest.raises(DaemonError) as info:
        build_report(tmp_path, "initech")
    assert info.value.code == "unknown_tenant"



def test_before_the_first_drift_run_the_heatmap_covers_the_last_day(tmp_path):
    """Judged but neither assigned nor analysed yet (the daemon's assign and drift jobs have not run)."""
    from tests.daemon.conftest import make_config
    from tests.daemon.lakes import synthetic_days, write_rows
    from verdict_daemon.report.render import render
    from verdict_daemon.service.cycle import build_evaluators, store_for
    from verdict_daemon.service.judging import judge
    from verdict_daemon.service.sampling import sample

    data_dir = tmp_path / "data"
    write_rows(data_dir, "acme", synthetic_days(NOW, intents=("billing.v1",), per_day=3))
    config = make_config(data_dir)
    store = store_for(config)
    sample(store, data_dir, TenantId("acme"), config.sampling, NOW)
    [evaluator] = build_evaluators(config)
    judge(store, TenantId("acme"), evaluator, config.judging, "judge-run-1", lambda: False)
    data = build_report(data_dir, "acme", generated_at=AT)
    [quality] = data.evaluators
    assert quality.run is None and quality.signals == ()
    assert quality.heat_period == (datetime(2026, 11, 19), datetime(2026, 11, 20))
    assert {(c.cluster, c.usable, c.rate) for c in quality.heatmap} == {(UNASSIGNED, 3, 1.0)}
    assert {s.cluster for s in quality.series} == {UNASSIGNED} and len(quality.series[0].points) == 9
    page = render(data)
    assert "No drift run yet" in page and "over the last day with verdicts" in page


def test_every_figure_is_the_tenants_own(lake, data):
    """umbrella was judged by the same evaluators (same fingerprints), with sentinel checks, spend and review
    items of its own: acme's report holds none of them, and umbrella's holds none of acme's."""
    other = build_report(lake.data_dir, "umbrella", generated_at=AT)
    assert {e.fingerprint for e in other.evaluators} == {e.fingerprint for e in data.evaluators}
    assert other.sampled_traces == lake.other["sampled"] == 2 * 9 * 6 and data.sampled_traces == lake.summary["sampled"]
    assert len(other.sentinel) == len(data.sentinel) == 1 and other.sentinel[0].checks == data.sentinel[0].checks == 1
    assert {s.attempts for s in other.spend} == {108} and {s.attempts for s in data.spend} == {1440}
    assert sum(d.input_tokens for d in data.spend_days) == sum(s.input_tokens for s in data.spend)
    items = {key: value for key, value in other.review.counts.rows}["Items"]
    assert items == f"{lake.other['review_queued']:,}" != dict(data.review.counts.rows)["Items"]
    clusters = {c.cluster for e in other.evaluators for c in e.coverage}
    assert clusters == set(INTENTS[:2]) and {c.cluster for e in data.evaluators for c in e.coverage} == set(INTENTS)
    ids = {x.trace_id for e in data.evaluators for s in e.signals for x in s.examples}
    assert ids and not ids & {x.trace_id for e in other.evaluators for s in e.signals for x in s.examples}


def test_the_mde_is_computed_at_the_runs_own_corrected_level(data):
    import dataclasses

    from verdict_daemon.report.gather import mde

    quality = section(data, "quality")
    [row] = quality.signals
    signal = row.signal
    # a signal stored before drift_signals.mde: recomputed at the stored run's level
    strict = mde(dataclasses.replace(signal, mde=None), dataclasses.replace(quality.run, alpha=0.01), ())
    h = NormalIndPower().solve_power(nobs1=signal.baseline_n, ratio=signal.current_n / signal.baseline_n,
                                     alpha=0.01 * 0.9 / (quality.run.tested * 2), power=0.8)
    p1 = signal.baseline_level
    assert strict == pytest.approx(p1 - np.sin(np.arcsin(np.sqrt(p1)) - h / 2) ** 2, rel=1e-4) and strict > row.mde


def test_the_latest_closing_decision_is_the_headline_and_a_later_early_look_is_labelled(lake, tmp_path):
    """After the closing decision at midnight the daemon keeps looking hourly at a small share of alpha; the
    report headlines the decision (its signals, its window) and shows the latest look under it, as a look."""
    import shutil

    from verdict_daemon.config import Drift
    from verdict_daemon.report.render import render
    from verdict_daemon.service import drift_runs
    from verdict_daemon.store.state import StateStore

    data_dir = tmp_path / "data"
    shutil.copytree(lake.data_dir, data_dir)
    store = StateStore(data_dir)
    quality = section(build_report(data_dir, "acme", generated_at=AT), "quality")
    decision = quality.run
    assert decision.closing and decision.as_of == datetime(2026, 11, 20) and quality.look is None
    for hours in (1, 2, 5):
        drift_runs.run_drift(store, TenantId("acme"), quality.fingerprint, Drift(), NOW + timedelta(hours=hours, minutes=5))
    report = build_report(data_dir, "acme", generated_at=AT)
    after = section(report, "quality")
    assert after.run == decision  # not the 05:05 look, the latest run by completed_at
    assert [s.signal.kind for s in after.signals] == ["regression"]
    assert after.look.as_of == datetime(2026, 11, 20, 5, 5) and not after.look.closing
    assert after.look.alpha == pytest.approx(0.01 * 3 / 24)
    assert after.heat_period == (decision.current_start, decision.as_of)
    html = render(report)
    headline = html.index("Closing decision for the period 2026-11-19")
    assert headline < html.index("Early look as of 2026-11-20 05:05 UTC, inside the open period")


def test_cells_below_min_usable_are_marked_not_tested_with_the_window_that_would_test_them(lake):
    """umbrella has 6 traces a day over two intents: its cells stay below min_usable (30) in the one-day
    current window, so the detector tests none. Each heatmap cell says so, with the window that
    verdict.drift's own DriftReport.window_to_test extrapolates from the cell's volume."""
    other = build_report(lake.data_dir, "umbrella", generated_at=AT)
    quality = section(other, "quality")
    run = quality.run
    assert run.tested == 0 and run.cells > 0
    lo, hi = quality.heat_period
    small = [c for c in quality.heatmap if c.usable]
    assert small and all(c.not_tested and c.min_usable == run.min_usable == 30 for c in small)
    for c in small:
        assert c.window_to_test == window_to_reach(30, c.usable, hi - lo)
        assert c.window_to_test.days == math.ceil(30 / c.usable * (hi - lo).days) > 1
    html = render(other)
    for c in small:
        assert (f"not tested: n={c.usable} &lt; min_usable 30; a {c.window_to_test.days}-day window would reach it"
                in html)
    assert (f"0 of {run.cells} cells tested" in html and f"; {run.cells} not tested for fewer than 30 usable "
            "judgments in the current window or in the windows it is compared against" in html)


def test_the_mde_shown_is_the_detectors_own(lake, data):
    """The signal stores DriftCell.mde_adjusted of the run: the same detector (the daemon's drift config at
    the run's alpha) over the same judgment table at the run's as_of gives exactly the figure shown."""
    from tests.daemon.conftest import make_config
    from verdict_daemon.store.drift_runs import judgment_table
    from verdict_daemon.store.state import StateStore

    quality = section(data, "quality")
    [row], run = quality.signals, quality.run
    table = judgment_table(StateStore(lake.data_dir), "acme", quality.fingerprint).drop_columns(["attempt_id"])
    report = make_config(lake.data_dir).drift.detector(run.alpha).detect(table, now=run.as_of.replace(tzinfo=UTC))
    cell = report.cell(quality.fingerprint, row.signal.cluster, row.signal.dimension)
    assert row.signal.mde is not None and row.mde == row.signal.mde == pytest.approx(cell.mde_adjusted, rel=1e-12)
