"""The report of a weekly decision (drift.small_cell_weeks, issue 27 item 3), on a state.duckdb the real
pipeline produced: a low-volume intent is tested over the week and the report says so, in the signal and in
the heatmap; on the next day's closing decision the weekly one is still shown below it.

Tenant `initech`: billing.v1 at 40 traces a day, search.v1 at 6 a day (42 a week: under min_usable 30 in
a day, over it in a week), 29 days up to Monday 2026-11-23 00:00 UTC; search.v1's answers are truncated
over the last week (the scripted judge fails their completeness).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pytest

from tests.daemon.conftest import make_config
from tests.daemon.lakes import INJECTOR, span_row, synthetic_days, write_rows
from tests.report.conftest import section
from verdict.inject import CorruptionKind
from verdict.tenancy import TenantId
from verdict_daemon.report import build_report
from verdict_daemon.report.render import render
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.store.drift_runs import due_alerts
from verdict_daemon.store.state import StateStore
from verdict_daemon.store.views import add_state_views
from verdict_ui.signals import signal_detail

MONDAY = datetime(2026, 11, 23, tzinfo=UTC)
WEEK_START = MONDAY - timedelta(weeks=1)
DAY = timedelta(days=1)


def _truncated_last_week(rows: list[dict]) -> list[dict]:
    import json

    out = []
    for row in rows:
        start = datetime.fromtimestamp(row["start_time"] / 1e9, UTC)
        query = json.loads(row["input_messages"])[0]["parts"][0]["content"]
        answer = json.loads(row["output_messages"])[0]["parts"][0]["content"]
        if start >= WEEK_START:
            answer = INJECTOR.corrupt(answer, CorruptionKind.TRUNCATION, key=query).corrupted
        out.append(span_row(row["trace_id"], start, intent=row["intent_key"], query=query, answer=answer))
    return out


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    data = tmp_path_factory.mktemp("small") / "data"
    rows = synthetic_days(MONDAY + timedelta(days=1), intents=("billing.v1",), per_day=40, days=30)
    rows += _truncated_last_week(synthetic_days(MONDAY + timedelta(days=1), intents=("search.v1",), per_day=6,
                                                days=30, seed=1))
    write_rows(data, "initech", rows)
    config = make_config(data, tenants=[{"id": "initech"}], sampling={"lookback_days": 31})
    evaluators = build_evaluators(config)
    run_cycle(config, TenantId("initech"), MONDAY, evaluators)  # on the grid: the weekly decision (Sunday's)
    return data, config, evaluators


def test_the_weekly_decision_reports_a_small_cell_tested_over_the_week(data_dir):
    data, _, _ = data_dir
    report = build_report(data, "initech", generated_at=MONDAY + timedelta(hours=1))
    quality = section(report, "quality")
    run = quality.run
    assert run.closing and run.small_cell_start == WEEK_START.replace(tzinfo=None)
    [signal] = [s for s in quality.signals if s.signal.cluster == "search.v1"]
    assert signal.signal.small_cell and signal.signal.kind == "regression" and signal.signal.dimension == "completeness"
    assert signal.signal.current_n >= 30  # the week's judgments, not the day's 6
    cell = next(c for c in quality.heatmap if (c.cluster, c.dimension) == ("search.v1", "completeness"))
    assert cell.small_cell == timedelta(weeks=1) and cell.usable == signal.signal.current_n and not cell.not_tested
    big = next(c for c in quality.heatmap if (c.cluster, c.dimension) == ("billing.v1", "completeness"))
    assert big.small_cell is None and big.usable >= 30
    html = render(report)
    assert "Weekly decision: Closing decision for the period 2026-11-22" in html
    assert "tested over 7 days (2026-11-16 00:00 UTC to 2026-11-23 00:00 UTC)" in html
    assert f"({signal.signal.current_n}) <small>over 7 days (small cell)</small>" in html
    assert '<small class="small-cell">tested over 7 days</small>' in html
    con = duckdb.connect()
    add_state_views(con, data, TenantId("initech"))
    detail = signal_detail(con, signal.signal.signal_id)
    con.close()
    assert detail is not None and min(t.started_at for t in detail.window) < MONDAY.replace(tzinfo=None) - DAY
    alerts = {a.cluster: a for a in due_alerts(StateStore(data), "initech", datetime(2100, 1, 1))
              if a.dimension == "completeness"}
    assert alerts["search.v1"].current_start == WEEK_START.replace(tzinfo=None)  # the webhook's window: the week


def test_the_uis_chart_of_a_small_cells_signal_shades_the_weeks_it_was_tested_over(data_dir):
    """The UI's signal page (the real app, local mode) shades the small cell's current window, the week before
    the weekly decision, and its baseline, the 3 weeks that end a day before that week (the detector's
    small-cell windows, docs/statistics.md: [now - 29 d, now - 8 d)), not the run's one-day period."""
    from tests.ui.conftest import client
    from verdict_ui.access import Access

    data, _, _ = data_dir
    report = build_report(data, "initech", generated_at=MONDAY + timedelta(hours=1))
    [signal] = [s.signal for s in section(report, "quality").signals if s.signal.cluster == "search.v1"]
    page = client(data, Access.create(TenantId("initech"), None)).get(f"/signals/{signal.signal_id}")
    assert page.status_code == 200
    assert "<title>current window 2026-11-16 00:00 to 2026-11-23 00:00 UTC</title>" in page.text
    assert "<title>baseline window 2026-10-25 00:00 to 2026-11-15 00:00 UTC</title>" in page.text
    assert "current 2026-11-16 00:00 UTC to 2026-11-23 00:00 UTC (a small cell: tested over the weekly" in page.text


def test_the_next_days_report_still_shows_the_weekly_decision(data_dir):
    data, config, evaluators = data_dir
    run_cycle(config, TenantId("initech"), MONDAY + timedelta(days=1), evaluators)  # Monday's closing decision
    report = build_report(data, "initech", generated_at=MONDAY + timedelta(days=1, hours=1))
    quality = section(report, "quality")
    assert quality.run.as_of == (MONDAY + timedelta(days=1)).replace(tzinfo=None) and quality.run.small_cell_start is None
    assert quality.weekly is not None and quality.weekly.as_of == MONDAY.replace(tzinfo=None)
    assert [s.signal.cluster for s in quality.weekly_signals if s.signal.small_cell] == ["search.v1"]
    small = next(c for c in quality.heatmap if (c.cluster, c.dimension) == ("search.v1", "completeness"))
    assert small.not_tested and small.small_cell is None  # the daily decision: under min_usable, as before
    html = render(report)
    assert html.index("Closing decision for the period 2026-11-23") < html.index("Latest weekly decision: ")
