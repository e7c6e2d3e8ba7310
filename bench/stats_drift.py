"""Benchmark: drift detection, Cliff's delta and Bradley-Terry, each next to its target.

    .venv/bin/python bench/stats_drift.py [--repeats 5]

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
from datetime import UTC, datetime

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
    from verdict.drift import DriftDetector
    from verdict.inject import synthetic_judgments

    table = synthetic_judgments(
        n, now=NOW, clusters=50, dimensions=5, drops={("c07", "d3"): 0.2}, seed=1
    )
    before = _rss_mib()
    detector = DriftDetector()
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
    outcome = np.where(rng.random(n) < 0.1, 0.5, (rng.random(n) < p).astype(float))
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


CHILDREN = {"drift": child_drift, "cliff": child_cliff, "bt": child_bt}


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
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args.n, args.repeats)))
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
    bt = run_child("bt", 2_000, args.repeats)
    print(
        f"{'Bradley-Terry 2,000 comparisons, 8 models, 1,000 bootstraps':<58}{bt['median_s']:>10.3f} s"
        f"{'<= 1 s':>10}  peer 23 s ({23 / bt['median_s']:.0f}x)"
    )
    print(
        f"{'  same with the order (position) term':<58}{bt['order_term_median_s']:>10.3f} s{'<= 1 s':>10}"
    )


if __name__ == "__main__":
    main()
