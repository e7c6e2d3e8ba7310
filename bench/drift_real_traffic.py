"""Benchmark: drift on real traffic (issue 27), through the daemon's plan -> detector -> signal ids
(tests/daemon/drift_schedule.py), the current design next to the one before issue 27 (`BEFORE_27`: the
recent baseline only, a whole alpha per evaluator). Prints every figure of docs/statistics.md, "Real
traffic", with its seeds and 95 % Clopper-Pearson intervals; delays as median and 90th percentile.

    .venv/bin/python bench/drift_real_traffic.py [--weeks 8] [--replicates 30] [--seed 0]

Scenarios (default config, alpha 0.05; looks every 6 hours: closing decisions and early looks):
  weekly      40 intents x 6 dimensions, log-normal volumes (sigma 1, mean 100 a day), pass rate 0.85 on
              weekdays, 0.78 on weekends, nothing broken: periods with any alert, weekend and weekday
  stationary  the same without the weekend effect: periods with any alert
  power       10 clusters x 6 dimensions at 100 a day, a 15-point drop on one cell at a uniform onset:
              hours to the first alert (hourly looks), within 3 days
  slow        one cell falls 1 point a day from 0.90 to 0.70 over 20 days, then stays: flagged within 30 days
  lasting     a 20-point drop on a 60-a-day cell, nobody looks in its first 3 days: flagged in the 7 after
  evaluators  4 clusters x 5 dimensions, 5 evaluators on one tenant, clean: tenant periods with any alert
  small       drift.small_cell_weeks 1 (default) against 0, daily looks: a drop on a low-volume cell (8 or 4
              traces a day among 9 clusters at 100, 3 dimensions) at an onset uniform over a week, flagged
              within 21 days and days to the first alert; clean traffic where every cell is small (12 x 4 at
              10 a day), looked at each Monday 00:00 only (the periods holding the small-cell tests); the
              log-normal shape of `stationary` with daily looks (every period)
  scores      10 clusters x 6 score dimensions at 100 a day, one cell's mean falls by 0.3 SD at an onset
              uniform over a day: found within 7 days (looks every 6 hours) and hours to the first alert
  coverage    4 clusters x 5 dimensions at 100 a day with 0-40 % UNCLEAR per cell, hourly looks, alpha 0.2:
              periods with an alert of any kind, coverage tests at their 0.1 share of a run's level and at
              the full level (each run then spends 2 alpha)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.daemon.drift_schedule

from statsmodels.stats.proportion import proportion_confint  # noqa: E402

from tests.daemon.drift_schedule import (  # noqa: E402
    BEFORE_27,
    NEW,
    START,
    Design,
    Traffic,
    alarmed_periods,
    delay_quantile,
    detection_delays,
    drop_at,
    flagged_looks,
    is_weekend,
)
from verdict_daemon.config import Drift  # noqa: E402

DAY, SIX_HOURS = timedelta(days=1), timedelta(hours=6)
DESIGNS = (("issue 27", NEW), ("before", BEFORE_27))


def rate(hits: int, n: int) -> str:
    low, high = proportion_confint(hits, n, alpha=0.05, method="beta")
    return f"{hits:>3}/{n:<3} = {hits / n:5.1%} [{low:.1%}, {high:.1%}]"


def weekly(config: Drift, weeks: int, seed: int, weekend: float) -> None:
    traffic = Traffic(clusters=40, dimensions=6, per_day=100, low=0.85, high=0.85, weekend=weekend,
                      volume_sigma=1.0)
    name = "weekly" if weekend else "stationary"
    for label, design in DESIGNS:
        alarmed, observed = alarmed_periods(config, traffic, 7 * weeks, SIX_HOURS, seed, design)
        ends = [p for p in observed if is_weekend(config, p)]
        days = [p for p in observed if not is_weekend(config, p)]
        print(f"{name:<11}{label:<10} weekend {rate(sum(p in alarmed for p in ends), len(ends))}   "
              f"weekday {rate(sum(p in alarmed for p in days), len(days))}   (seed {seed})")


def power(config: Drift, replicates: int, seed: int) -> None:
    traffic = Traffic(clusters=10, dimensions=6, per_day=100)
    for label, design in DESIGNS:
        delays = detection_delays(config, traffic, 0.15, range(seed, seed + replicates), timedelta(hours=1), design)
        found = sorted(d for d in delays if d is not None)
        q = statistics.quantiles(found, n=10) if len(found) > 1 else [float("nan")] * 9
        print(f"{'power':<11}{label:<10} 15-point drop found within 3 days {rate(len(found), replicates)}   "
              f"delay median {statistics.median(found) if found else float('nan'):.0f} h, p90 {q[8]:.0f} h "
              f"(seeds {seed}..{seed + replicates - 1})")


def slow_and_lasting(config: Drift, replicates: int, seed: int) -> None:
    warm = config.reach / DAY
    slow = lambda days: -np.clip(days - warm, 0, 20) / 100  # noqa: E731
    flat, small = Traffic(clusters=10, dimensions=6, per_day=100), Traffic(clusters=10, dimensions=6, per_day=60)
    for label, design in DESIGNS:
        days = []
        for s in range(seed, seed + replicates):
            looks = flagged_looks(config, flat, warm + 30, s, slow, 0.90, START + config.reach, design=design)
            days.append((looks[0] - START) / DAY - warm if looks else None)
        found = sorted(d for d in days if d is not None)
        median = f"{statistics.median(found):.0f}" if found else "-"
        print(f"{'slow':<11}{label:<10} flagged within 30 days {rate(len(found), replicates)}   "
              f"days from onset median {median}")
    for label, design in DESIGNS:
        hits = 0
        for s in range(seed, seed + replicates):
            onset = START + timedelta(days=warm + np.random.default_rng(s).uniform(0, 1))
            hits += bool(flagged_looks(config, small, warm + 11, s, drop_at(onset, 0.20), 0.90,
                                       START + timedelta(days=warm + 4), design=design))
        print(f"{'lasting':<11}{label:<10} flagged on days 4-10 after onset {rate(hits, replicates)}")


def evaluators(weeks: int, seed: int) -> None:
    config = Drift()
    traffic = Traffic(clusters=4, dimensions=5, per_day=100, evaluators=5)
    for label, design in DESIGNS:
        alarmed, observed = alarmed_periods(config, traffic, 7 * weeks, DAY, seed, design, offset=timedelta(0))
        print(f"{'evaluators':<11}{label:<10} tenant periods with an alert {rate(len(alarmed), len(observed))}")


def small_cells(weeks: int, replicates: int, seed: int) -> None:
    for volume in (8, 4):
        traffic = Traffic(clusters=10, dimensions=3, per_day=100, small=volume)
        for points in (0.30, 0.15):
            for option in (1, 0):
                config = Drift(small_cell_weeks=option)
                warm = config.reach / DAY
                days = []
                for s in range(seed, seed + replicates):
                    onset = START + timedelta(days=warm + np.random.default_rng(s).uniform(0, 7))
                    looks = [t for t in flagged_looks(config, traffic, warm + 28, s, drop_at(onset, points), 0.90,
                                                      START + config.reach) if t >= onset]
                    days.append((looks[0] - onset) / DAY if looks else None)
                found = sorted(d for d in days if d is not None)
                q = statistics.quantiles(found, n=10) if len(found) > 1 else [float("nan")] * 9
                median = statistics.median(found) if found else float("nan")
                print(f"{'small':<11}small_cell_weeks {option}  {volume} a day, {points:.0%} drop from 0.90: "
                      f"flagged within 21 days {rate(len(found), replicates)}   days to alert median {median:.1f}, "
                      f"p90 {q[8]:.1f} (seeds {seed}..{seed + replicates - 1})")
    config = Drift(catch_up_periods=1)
    tiny = Traffic(clusters=12, dimensions=4, per_day=10, low=0.6, high=0.95, unusable=(0.0, 0.2))
    alarms = periods = 0
    for s in range(seed, seed + replicates):
        alarmed, _ = alarmed_periods(config, tiny, 7 * weeks, timedelta(weeks=1), s, offset=2 * DAY)
        alarms, periods = alarms + len(alarmed), periods + weeks
    print(f"{'small':<11}every cell small, weekly decisions only: periods with an alert {rate(alarms, periods)} "
          f"(seeds {seed}..{seed + replicates - 1}, {weeks} weeks each)")
    mixed = Traffic(clusters=40, dimensions=6, per_day=100, low=0.85, high=0.85, volume_sigma=1.0)
    for option in (1, 0):
        alarmed, observed = alarmed_periods(Drift(small_cell_weeks=option), mixed, 7 * weeks, DAY, seed,
                                            offset=timedelta(0))
        print(f"{'small':<11}small_cell_weeks {option}  log-normal 40 x 6, daily looks: periods with an alert "
              f"{rate(len(alarmed), len(observed))} (seed {seed})")


def hours(delays: list[float | None], q: float) -> str:
    """The q-quantile of the delays with its 95 % interval (a miss counts as later than any delay)."""
    value, low, high = (f"{x:.0f}" if x != float("inf") else "miss" for x in delay_quantile(delays, q))
    return f"{value} h [{low}, {high}]"


def scores(config: Drift, replicates: int, seed: int) -> None:
    """Power on a score dimension: 10 clusters x 6 scored dimensions at 100 a day, the mean of one cell
    falling by 0.3 SD at an onset uniform over day 9, looks every 6 hours, found within 7 days."""
    traffic = Traffic(clusters=10, dimensions=6, per_day=100, scores=True)
    seeds = range(seed, seed + replicates)
    delays = detection_delays(config, traffic, 0.30, seeds, SIX_HOURS, NEW, horizon=7 * DAY)
    found = sum(d is not None for d in delays)
    print(f"{'scores':<11}{'issue 27':<10} 0.3 SD shift found within 7 days {rate(found, replicates)}   delay "
          f"median {hours(delays, 0.5)}, p90 {hours(delays, 0.9)} (seeds {seed}..{seed + replicates - 1}, "
          f"onsets {10_000 + seed}..{10_000 + seed + replicates - 1})")


# The coverage family at the full level next to the quality family, as before issue 17's split: each run
# spends 2 alpha (quality at alpha, coverage at alpha).
COVERAGE_AT_ALPHA = Design(NEW.plan, lambda config, d: config.model_copy(update={"coverage_alpha_share": 0.5})
                           .detector(2 * d.alpha))


def coverage(weeks: int, seed: int) -> None:
    """Clean traffic with UNCLEAR verdicts (4 clusters x 5 dimensions at 100 a day, 0-40 % UNCLEAR per cell),
    hourly looks, alpha 0.2: alert periods of any kind with the coverage tests at their share of each run's
    level (`coverage_alpha_share` 0.1) and at the full level."""
    config, traffic = Drift(alpha=0.2), Traffic(clusters=4, unusable=(0.0, 0.4))
    for label, design in (("share 0.1", NEW), ("full level", COVERAGE_AT_ALPHA)):
        alarmed, observed = alarmed_periods(config, traffic, 7 * weeks, timedelta(hours=1), seed, design)
        print(f"{'coverage':<11}{label:<11} periods with an alert of any kind {rate(len(alarmed), len(observed))} "
              f"(alpha 0.2, seed {seed})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weeks", type=int, default=8, help="simulated weeks after warm-up per rate")
    parser.add_argument("--replicates", type=int, default=30, help="simulated cells per drift scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("weekly", "stationary", "power", "drift", "evaluators", "small", "scores",
                                           "coverage"))
    args = parser.parse_args()
    config = Drift()
    steps = {
        "weekly": lambda: weekly(config, args.weeks, args.seed, 0.07),
        "stationary": lambda: weekly(config, args.weeks, args.seed, 0.0),
        "power": lambda: power(config, args.replicates, args.seed),
        "drift": lambda: slow_and_lasting(config, args.replicates, args.seed),
        "evaluators": lambda: evaluators(args.weeks, args.seed),
        "small": lambda: small_cells(args.weeks, args.replicates, args.seed),
        "scores": lambda: scores(config, args.replicates, args.seed),
        "coverage": lambda: coverage(args.weeks, args.seed),
    }
    for name, step in steps.items():
        if args.only in (None, name):
            step()


if __name__ == "__main__":
    main()
