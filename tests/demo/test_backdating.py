"""The simulated days are UTC days ending yesterday, each inside its own day and its own drift window.

The demo's closing decision (a drift look at today 00:00 UTC) must see the last simulated day as its
current window, the day before in the gap and every earlier day in the baseline; a day's traffic spread
(the app's SPREAD_HOURS) must not leak into a neighbouring UTC day.
"""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from verdict_daemon.config import parse_config
from verdict_demo.app import SPREAD_HOURS
from verdict_demo.backdating import day_noon, day_offset_ns
from verdict_demo.orchestrator import daemon_config
from verdict_demo.scenario import Scenario

TODAY = datetime(2026, 12, 2, tzinfo=UTC)


@pytest.mark.parametrize("days", [3, 9, 30])
def test_each_day_fills_its_own_utc_day_and_its_drift_window(days):
    drift = parse_config(tomllib.loads(daemon_config(Path("."), Scenario(days=days), "offline/heuristic-judge"))).drift
    current_start = TODAY - drift.period
    baseline_end = current_start - timedelta(hours=drift.gap_hours)
    baseline_start = baseline_end - timedelta(days=drift.baseline_days)
    spread = timedelta(hours=SPREAD_HOURS)
    for day in range(days):
        noon = day_noon(day, days, TODAY)
        first, last = noon - spread, noon + spread
        assert first.date() == last.date() == (TODAY - timedelta(days=days - day)).date()
        if day == days - 1:
            assert current_start <= first and last < TODAY  # yesterday: the closed period
        elif day == days - 2:
            assert baseline_end <= first and last < current_start  # the gap
        else:
            assert baseline_start <= first and last < baseline_end


def test_the_offset_moves_a_span_stamped_now_to_its_days_noon():
    now = datetime(2026, 12, 2, 17, 30, tzinfo=UTC)
    now_ns = int(now.timestamp()) * 10**9
    shifted = now_ns + day_offset_ns(8, 9, TODAY, now_ns)
    assert datetime.fromtimestamp(shifted / 10**9, UTC) == datetime(2026, 12, 1, 12, tzinfo=UTC)
