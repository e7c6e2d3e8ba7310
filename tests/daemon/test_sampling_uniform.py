"""Sampling a window hour by hour still yields a uniform random sample of the whole window.

The daemon samples every hour while a day's traces arrive. Here the traffic is skewed within the day
(70 % of it in the evening) and the morning's answers fail more often than the evening's, so a
sample drawn from the traces present at the first runs (the earliest ones) looks worse than the
day. The reference day is sampled once after it closed (a daemon started with history in the
lake), the current day hour by hour: both closed-window samples must have the day's time-of-day
mix (chi-square goodness of fit), be the bottom-m of the day by the md5 draw (an independent
computation), and show no change in pass rate between clean days (the drift detector's Fisher test).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import timedelta

import duckdb
import numpy as np
from scipy.stats import chisquare

from tests.daemon.conftest import NOW
from tests.daemon.lakes import answer_for, span_row, write_rows
from verdict.stats import fisher_exact
from verdict.tenancy import TenantId
from verdict_daemon.config import Sampling
from verdict_daemon.service.sampling import CEILING_FACTOR, sample
from verdict_daemon.store.state import StateStore

K = 100
SEED = 5
PER_DAY = 1200
MORNING_SHARE = 0.3  # of a day's traces start in hours 0-11
PASS_RATE = {"morning": 0.55, "evening": 0.95}


def _day(rng: np.random.Generator, day_start, volume: int) -> dict[int, list[tuple[str, object, bool]]]:
    """Traces of one day by hour: (trace id, start, passes)."""
    hours: dict[int, list] = {}
    morning = rng.random(volume) < MORNING_SHARE
    for is_morning in morning:
        hour = int(rng.integers(0, 12)) + (0 if is_morning else 12)
        start = day_start + timedelta(hours=hour, seconds=float(rng.uniform(0, 3599)))
        passes = bool(rng.random() < PASS_RATE["morning" if is_morning else "evening"])
        hours.setdefault(hour, []).append((f"{int(rng.integers(0, 2**63)):032x}", start, passes))
    return hours


def _land(data, traces) -> None:
    rows = []
    for trace_id, start, passes in traces:
        answer = answer_for("How do I pay?") if passes else "I'm sorry, I cannot help"
        rows.append(span_row(trace_id, start, intent="billing.v1", query="How do I pay?", answer=answer))
    write_rows(data, "acme", rows)


def _sample_of(store: StateStore, window_start) -> set[str]:
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        return {t for (t,) in con.execute("SELECT trace_id FROM sampled_traces WHERE window_start = ?",
                                          [window_start.replace(tzinfo=None)]).fetchall()}
    finally:
        con.close()


def _u(trace_id: str) -> str:
    return hashlib.md5(f"{SEED}:{trace_id}".encode()).hexdigest()


def _bottom(traces, m: int) -> set[str]:
    return {t for t, _s, _p in sorted(traces, key=lambda r: _u(r[0]))[:m]}


def _time_of_day_p(sampled: set[str], traces) -> float:
    """Chi-square goodness of fit of the sample's 6-hour bins against the window's mix."""
    quarter = {t: s.hour // 6 for t, s, _p in traces}
    window = Counter(quarter.values())
    observed = Counter(quarter[t] for t in sampled)
    bins = sorted(window)
    expected = np.array([window[b] for b in bins], dtype=float) / len(traces) * len(sampled)
    return float(chisquare([observed[b] for b in bins], expected).pvalue)


def _pass_counts(sampled: set[str], traces) -> tuple[int, int]:
    passes = {t: p for t, _s, p in traces}
    n_pass = sum(passes[t] for t in sampled)
    return n_pass, len(sampled) - n_pass


def test_hourly_runs_give_a_uniform_sample_of_the_closed_day(tmp_path):
    rng = np.random.default_rng(11)
    data = tmp_path / "data"
    store = StateStore(data)
    config = Sampling(per_cluster_per_window=K, seed=SEED, lookback_days=3)
    reference_start, current_start = NOW - timedelta(days=2), NOW - timedelta(days=1)
    reference = _day(rng, reference_start, PER_DAY)
    current = _day(rng, current_start, PER_DAY)
    _land(data, [t for hour in reference.values() for t in hour])
    for hour in range(24):  # the daemon runs every hour of the current day as its traces arrive
        _land(data, current.get(hour, []))
        sample(store, data, TenantId("acme"), config, current_start + timedelta(hours=hour + 1))
    ref_traces = [t for hour in reference.values() for t in hour]
    cur_traces = [t for hour in current.values() for t in hour]
    ref_sample, cur_sample = _sample_of(store, reference_start), _sample_of(store, current_start)

    # the time-of-day mix of both samples matches their day's (the front-loaded sample of the old design: p = 4e-120)
    assert _time_of_day_p(ref_sample, ref_traces) > 0.05
    assert _time_of_day_p(cur_sample, cur_traces) > 0.05
    # clean traffic: no change in pass rate between the two days' samples (front-loaded: 60 % vs 85 %, p = 1e-4)
    (a, b), (c, d) = _pass_counts(ref_sample, ref_traces), _pass_counts(cur_sample, cur_traces)
    assert fisher_exact([[a, b], [c, d]]).p_value > 0.05
    # the reference day, first seen closed, is exactly its bottom-k
    assert ref_sample == _bottom(ref_traces, K)
    # the current day's closed sample is the bottom-m of the whole day (a simple random sample given m),
    # m about K: the rate k / N(reference) was fixed before the first trace of the day arrived
    assert K <= len(cur_sample) <= K + 3 * K**0.5
    assert cur_sample == _bottom(cur_traces, len(cur_sample))
    # the closed sample depends on the run schedule only through m; here m = K, so another store run
    # twice (hours 6 and 24) on the same lake ends with exactly the same picks
    assert len(cur_sample) == K
    again = StateStore(tmp_path / "again")
    for hour in (5, 23):
        sample(again, data, TenantId("acme"), config, current_start + timedelta(hours=hour + 1))
    assert _sample_of(again, current_start) == cur_sample


def test_a_traffic_surge_stops_at_the_ceiling_filled_by_draw_not_by_time(tmp_path):
    rng = np.random.default_rng(3)
    data = tmp_path / "data"
    store = StateStore(data)
    config = Sampling(per_cluster_per_window=20, seed=SEED, lookback_days=3)
    previous_start, current_start = NOW - timedelta(days=2), NOW - timedelta(days=1)
    _land(data, [t for hour in _day(rng, previous_start, 100).values() for t in hour])
    current = _day(rng, current_start, 1000)  # ten times the previous day's volume: rate 20/100
    arrived = [t for hour in range(23) for t in current.get(hour, [])]
    _land(data, arrived)
    report = sample(store, data, TenantId("acme"), config, current_start + timedelta(hours=23))  # the day is open
    picked = _sample_of(store, current_start)
    assert len(picked) == CEILING_FACTOR * 20 and report.at_ceiling == 1
    # the ceiling is filled by the draw (the bottom-40 of what arrived), not by arrival time
    assert picked == _bottom(arrived, CEILING_FACTOR * 20)


def _u_number(trace_id: str) -> float:
    return int(_u(trace_id)[:13], 16) / 16**13


def test_a_strata_first_open_window_uses_the_volume_extrapolated_from_the_elapsed_part(tmp_path):
    """No previous window to size the rate: half the day gone with N traces means about 2N for the
    day, so the rate is 20 / 2N and the picks are exactly the traces with u below it."""
    rng = np.random.default_rng(9)
    data = tmp_path / "data"
    day_start = NOW - timedelta(days=1)
    arrived = [t for hour in range(12) for t in _day(rng, day_start, 800).get(hour, [])]
    _land(data, arrived)
    store = StateStore(data)
    sample(store, data, TenantId("acme"), Sampling(per_cluster_per_window=20, seed=SEED, lookback_days=3),
           day_start + timedelta(hours=12))
    rate = 20 * 0.5 / len(arrived)
    expected = {t for t, _s, _p in arrived if _u_number(t) < rate}
    assert len(expected) > 5 and _sample_of(store, day_start) == expected
