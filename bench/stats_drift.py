"""Benchmark: drift detection, Cliff's delta and Bradley-Terry, each next to its target; per-period
false alarms and detection delay of the daemon's drift schedule, from a simulation.

    .venv/bin/python bench/stats_drift.py [--repeats 5] [--days 60] [--delay-seeds 40] [--only perf|schedule|delays|shares]

Every measurement runs in a fresh subprocess so its peak RSS (ru_maxrss) is its own. Wall times
are medians over repeats after one warm-up call (the first call also pays the scipy import,
printed separately). The machine is shared, so read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.daemon.drift_schedule

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def _timed(fn, repeats: int) -> dict:
    start = time.perf_counter()
    fn()
    cold = time.perf_counter() - start
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return {"cold_s": cold, "median_s": statistics.median(runs), "runs": len(runs)}


def child_drift(n: int, repeats: int) -> dict:
    from verdict.inject import synthetic_judgments
    from verdict_daemon.config import Drift

    table = synthetic_judgments(
        n, now=NOW, clusters=50, dimensions=5, drops={("c07", "d3"): 0.2}, seed=1
    )
    before = _rss_mib()
    config = Drift()  # a run at the closing decision's level, as the daemon takes it
    detector = config.detector((1 - config.early_alpha_share) * config.alpha)
    result = _timed(lambda: detector.detect(table, now=NOW), repeats)
    report = detector.detect(table, now=NOW)
    found = [(c.cluster, c.dimension) for c in report.signals]
    return result | {
        "rss_peak_mib": _rss_mib(),
        "rss_before_detect_mib": before,
        "cells": len(report.cells),
        "signals": found,
    }


def child_cliff(n: int, repeats: int) -> dict:
    import numpy as np

    from verdict.stats import cliffs_delta

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=n), rng.normal(0.1, size=n)
    before = _rss_mib()
    result = _timed(lambda: cliffs_delta(x, y), repeats)
    return result | {"rss_peak_mib": _rss_mib(), "rss_before_mib": before}


def child_bt(n: int, repeats: int) -> dict:
    import numpy as np

    from verdict.stats import fit_bradley_terry

    rng = np.random.default_rng(0)
    k = 8
    strength = rng.normal(0, 0.7, k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
    outcome = np.where(rng.random(n) < 0.1, 0.5, (rng.random(n) < p).astype(float)).tolist()
    names = [f"model-{i}" for i in range(k)]
    first, second = [names[i] for i in a], [names[i] for i in b]
    result = _timed(
        lambda: fit_bradley_terry(first, second, outcome, n_resamples=1000, seed=1), repeats
    )
    with_order = _timed(
        lambda: fit_bradley_terry(
            first, second, outcome, n_resamples=1000, seed=1, order_term=True
        ),
        repeats,
    )
    return result | {"order_term_median_s": with_order["median_s"], "rss_peak_mib": _rss_mib()}


def child_schedule(days: int, repeats: int) -> dict:
    """Clean traffic through the daemon's plan -> detector -> signal ids (tests/daemon/drift_schedule.py):
    20 clusters x 5 PASS/FAIL dimensions, 100 traces per cluster per day (traffic seed 0): alert periods."""
    from tests.daemon.drift_schedule import LEGACY, NEW, Traffic, false_alarm_periods
    from verdict_daemon.config import Drift

    config, traffic, hour = Drift(), Traffic(), timedelta(hours=1)
    out: dict = {"days": days}
    for name, every, n, design in (("hourly", hour, days, NEW), ("5min", timedelta(minutes=5), max(days // 6, 1), NEW),
                                    ("legacy_hourly", hour, days, LEGACY)):
        out[name] = false_alarm_periods(config, traffic, n, every, 0, design=design)
    return out


def child_delays(seeds: int, repeats: int) -> dict:
    """The same traffic with a drop of 15 or 25 points in one cell at an onset uniform over a day, hourly
    looks: hours until the first alert, 3-day horizon (drop seeds 0..seeds-1, onsets from 10000 + seed)."""
    from tests.daemon.drift_schedule import LEGACY, NEW, Traffic, detection_delays
    from verdict_daemon.config import Drift

    config, traffic, hour = Drift(), Traffic(), timedelta(hours=1)
    return {f"{name}_{int(points * 100)}": detection_delays(config, traffic, points, range(seeds), hour, design=design)
            for points in (0.15, 0.25) for name, design in (("new", NEW), ("legacy", LEGACY))}


def child_shares(seeds: int, repeats: int) -> dict:
    """Power of one run at the closing decision's level 0.04 by the coverage tests' share of it, on 20 x 5
    PASS/FAIL cells at n = 400/400 (tests/stats/test_drift_gates.py's data), seeds 60..60+seeds-1: how often a
    10-point drop (0.90 -> 0.80) in one cell is a regression, and how often a rise of that cell's UNCLEAR share
    from 5 to 15 % (every cell 5 % UNCLEAR otherwise) is a coverage drop."""
    import numpy as np
    import pyarrow as pa

    from tests.stats.test_drift_gates import CLOSING_ALPHA, NOW, judgments
    from verdict.drift import CellStatus, CoverageStatus, DriftDetector

    def unclear(table: pa.Table, seed: int) -> pa.Table:
        rng = np.random.default_rng(10_000 + seed)
        now_s = NOW.timestamp() * 1e6
        started = table.column("started_at").cast(pa.int64()).to_numpy()
        first_cell = (table.column("cluster").to_numpy(zero_copy_only=False) == "c00") & \
            (table.column("dimension").to_numpy(zero_copy_only=False) == "d0")
        share = np.where(first_cell & (started >= now_s - 86_400e6), 0.15, 0.05)
        value = np.where(rng.random(len(table)) < share, "UNCLEAR", table.column("value").to_numpy(zero_copy_only=False))
        return table.set_column(table.schema.get_field_index("value"), "value", pa.array(value, pa.string()))

    detectors = {share: DriftDetector(alpha=CLOSING_ALPHA, coverage_alpha_share=share) for share in (0.0, 0.1, 0.2)}
    hits, rises = dict.fromkeys(detectors, 0), dict.fromkeys(detectors, 0)
    for seed in range(60, 60 + seeds):
        drop, rise = judgments(seed, 0.10), unclear(judgments(seed, 0.0), seed)
        for share, det in detectors.items():
            hits[share] += det.detect(drop, now=NOW).cell("fp", "c00", "d0").status is CellStatus.REGRESSION
            rises[share] += det.detect(rise, now=NOW).cell("fp", "c00", "d0").coverage.status is \
                CoverageStatus.COVERAGE_DROP
    return {"seeds": seeds, "hits": [[share, n] for share, n in hits.items()],
            "rises": [[share, n] for share, n in rises.items()]}


CHILDREN = {"drift": child_drift, "cliff": child_cliff, "bt": child_bt, "schedule": child_schedule,
            "delays": child_delays, "shares": child_shares}


def run_child(kind: str, n: int, repeats: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--n", str(n), "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", choices=sorted(CHILDREN))
    parser.add_argument("--n", type=int)
    parser.add_argument("--days", type=int, default=60, help="simulated days per schedule")
    parser.add_argument("--delay-seeds", type=int, default=40, help="simulated drops per size")
    parser.add_argument("--only", choices=("perf", "schedule", "delays", "shares"), help="one part: timings, "
                        "false alarms per period, detection delays, or power by the coverage tests' share of alpha")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args.n, args.repeats)))
        return
    if args.only == "schedule":
        _print_schedule(run_child("schedule", args.days, 1))
        return
    if args.only == "shares":
        _print_shares(run_child("shares", 200, 1))
        return
    if args.only == "delays":
        _print_delays(run_child("delays", args.delay_seeds, 1), args.delay_seeds)
        return

    print(f"{'measurement':<58}{'ours':>12}{'target':>10}  reference")
    small = run_child("drift", 100_000, args.repeats)
    big = run_child("drift", 1_000_000, args.repeats)
    print(
        f"{'drift 100k judgments, wall (median)':<58}{small['median_s']:>10.3f} s{'':>10}  "
        f"earlier product 4.2 s ({4.2 / small['median_s']:.0f}x), successor 1.7 s "
        f"({1.7 / small['median_s']:.0f}x)"
    )
    print(
        f"{'drift 100k judgments, process peak RSS':<58}{small['rss_peak_mib']:>8.0f} MiB{'':>10}  "
        f"earlier product 288 MiB"
    )
    print(
        f"{'drift 1M judgments x 50 clusters x 5 dims, wall (median)':<58}{big['median_s']:>10.3f} s{'<= 2 s':>10}  "
        f"earlier product ~42 s and successor ~17 s at their per-100k rates"
    )
    print(f"{'  same, first call (includes scipy import)':<58}{big['cold_s']:>10.3f} s")
    print(
        f"{'drift 1M, process peak RSS (data + detector)':<58}{big['rss_peak_mib']:>8.0f} MiB{'<= 1 GiB':>10}  "
        f"of which {big['rss_peak_mib'] - big['rss_before_detect_mib']:.0f} MiB added by detection"
    )
    print(f"{'  cells / signals found (injected c07/d3)':<58}{big['cells']:>12} {big['signals']}")
    cliff = run_child("cliff", 40_000, max(args.repeats, 21))
    print(
        f"{'Cliff delta + CI, one 40,000 x 40,000 cell (median)':<58}{cliff['median_s'] * 1000:>9.1f} ms"
        f"{'<= 50 ms':>10}  O(n*m) way 6.6 s ({6.6 / cliff['median_s']:.0f}x) and 1.6 GiB"
    )
    print(
        f"{'  peak RSS added':<58}{cliff['rss_peak_mib'] - cliff['rss_before_mib']:>8.0f} MiB{'':>10}  "
        f"O(n*m) way 1.6 GiB"
    )
    if args.only is None:
        _print_schedule(run_child("schedule", args.days, 1))
        _print_delays(run_child("delays", args.delay_seeds, 1), args.delay_seeds)
    bt = run_child("bt", 2_000, args.repeats)
    print(
        f"{'Bradley-Terry 2,000 comparisons, 8 models, 1,000 bootstraps':<58}{bt['median_s']:>10.3f} s"
        f"{'<= 1 s':>10}  peer 23 s ({23 / bt['median_s']:.0f}x)"
    )
    print(
        f"{'  same with the order (position) term':<58}{bt['order_term_median_s']:>10.3f} s{'<= 1 s':>10}"
    )


def _print_schedule(sim: dict) -> None:
    from scipy import stats

    print("per-period false alarms, clean traffic, 20 clusters x 5 dims, 100 traces/cluster/day, alpha 0.05, seed 0")
    for key, label in (("hourly", "hourly looks (default cron), new"), ("5min", "5-minute looks, new"),
                       ("legacy_hourly", "hourly looks, legacy (every look at alpha)")):
        alarms, periods = sim[key]
        upper = stats.beta.ppf(0.975, alarms + 1, periods - alarms) if alarms < periods else 1.0
        print(f"  {label:<56}{alarms:>4} of {periods:<4} days = {alarms / periods:5.1%}  "
              f"(95 % upper bound {upper:.1%}; target <= 5 %, legacy ~21 %)")


def _print_shares(sim: dict) -> None:
    from statsmodels.stats.proportion import proportion_confint

    print(f"10-point drop at n = 400/400 among 100 cells, run level 0.04, seeds 60..{59 + sim['seeds']}: regression in")
    for share, hits in sim["hits"]:
        low, high = proportion_confint(hits, sim["seeds"], alpha=0.05, method="beta")
        print(f"  coverage_alpha_share {share:<4} {hits:>4} of {sim['seeds']} [{low:.1%}, {high:.1%}]")
    print("UNCLEAR share of one cell rising 5 -> 15 % (the others at 5 %), same data: coverage drop in")
    for share, hits in sim["rises"]:
        low, high = proportion_confint(hits, sim["seeds"], alpha=0.05, method="beta")
        print(f"  coverage_alpha_share {share:<4} {hits:>4} of {sim['seeds']} [{low:.1%}, {high:.1%}]")


def _print_delays(sim: dict, seeds: int) -> None:
    """Median and 90th percentile of the hours to the first alert, a miss counted as later than 72 h, with
    distribution-free 95 % intervals (order statistics, tests/daemon/drift_schedule.delay_quantile)."""
    from statsmodels.stats.proportion import proportion_confint

    from tests.daemon.drift_schedule import delay_quantile

    def hours(x: float) -> str:
        return "> 72" if x == float("inf") else f"{x:.1f}"

    print(f"detection delay, hourly looks, one cell of 100 dropped at a uniform onset, 3-day horizon; drop seeds "
          f"0..{seeds - 1}, onset seeds 10000..{10_000 + seeds - 1}; hours to the first alert, 95 % intervals")
    for points in (15, 25):
        for name in ("new", "legacy"):
            delays = sim[f"{name}_{points}"]
            found = sum(d is not None for d in delays)
            low, high = proportion_confint(found, len(delays), alpha=0.05, method="beta")
            q = [delay_quantile(delays, p) for p in (0.5, 0.9)]
            print(f"  {points}-point drop, {name:<7} caught {found:>3} of {len(delays):<3} [{low:.0%}, {high:.0%}]  "
                  + "  ".join(f"{label} {hours(v)} h [{hours(lo)}, {hours(hi)}]"
                              for label, (v, lo, hi) in zip(("median", "p90"), q, strict=True)))


if __name__ == "__main__":
    main()
