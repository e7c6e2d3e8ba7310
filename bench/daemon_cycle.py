"""Benchmark: one daemon cycle at scale — sampling, judging throughput, drift run, memory.

    .venv/bin/python bench/daemon_cycle.py [--traces 100000] [--judged 3000] [--latency 0.2] [--concurrency 64]
                                           [--two-dialects] [--baseline DIR] [--runs N] [--sampling-only]

The lake holds `--traces` traces over 9 days in 20 clusters (intent keys) and 2 tenants, written as
the collector writes them (one segment per tenant and day). Then, against a fresh state.duckdb:

- sampling: both tenants, default targets (100 per cluster and day, 10,000 per run), in a child process
  whose peak RSS is the sampler's alone; with `--two-dialects` half the spans are labelled OpenLLMetry, so
  `llm_calls`' duplicate rules run; `--baseline DIR` first runs the same child on the code of DIR (e.g.
  `git worktree add --detach /tmp/main-wt main`) over the same lake and says whether the picks are the same;
  `--runs N` alternates N runs of each (fresh state each), medians of wall and CPU seconds and peak RSS;
- judging: the rubric Judge (5 dimensions, one call per trace) on a scripted model with `--latency`
  per call and `--concurrency` calls in flight, over `--judged` sampled traces; ideal = concurrency /
  latency traces per second;
- drift: every sampled trace is given a judgment (inserted directly: judging all of them at 320/s
  would take minutes), then one drift run per tenant is timed, load from state.duckdb and commit
  included;
- RSS: this process's peak resident memory (lake builder, judging, drift), and the sampler's.

Targets (issue 6): sampling ≤ 5 s, drift ≤ 5 s, throughput ≥ 80 % of ideal, RSS ≤ 600 MB; the sampler
≤ 500 MB at 1 M traces and flat beyond (issue 31). The
machine is shared: read the ratios, and rerun when a figure is close.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from verdict.tenancy import TenantId

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NOW = datetime(2026, 11, 30, 0, tzinfo=UTC)
TENANTS = ("acme", "globex")
CLUSTERS = 20
DAYS = 9
ANSWER = "Open the settings page, choose Billing, then press Save. The change applies at once."


def build_lake(data_dir: Path, traces: int, two_dialects: bool = False) -> None:
    import numpy as np
    import pyarrow as pa

    from collector import lake
    from collector.schema import arrow_schema

    schema = arrow_schema()
    rng = np.random.default_rng(0)
    per_tenant = traces // len(TENANTS)
    now_ns = int(NOW.timestamp() * 1e9)
    inputs = json.dumps([{"role": "system", "parts": [{"type": "text", "content": "Billing is under Settings."}]},
                         {"role": "user", "parts": [{"type": "text", "content": "How do I update billing?"}]}])
    outputs = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}],
                           "finish_reason": "stop"}])
    lake.prepare(data_dir)
    for t, tenant in enumerate(TENANTS):
        start = now_ns - rng.integers(1, DAYS * 86_400 * 10**9, size=per_tenant)
        intent = rng.integers(0, CLUSTERS, size=per_tenant)
        day = start // (86_400 * 10**9)
        for d in np.unique(day):  # one day's rows at a time: the builder's memory is a day's, not the lake's
            rows = np.flatnonzero(day == d)
            n = len(rows)
            ids = [f"{t:02x}{i:030x}" for i in rows]
            columns = {name: pa.nulls(n, schema.field(name).type) for name in schema.names}
            columns.update(
                trace_id=pa.array(ids), span_id=pa.array([i[16:] for i in ids]), name=pa.array(["chat"] * n),
                kind=pa.array(["CLIENT"] * n), start_time=pa.array(start[rows], pa.timestamp("ns")),
                end_time=pa.array(start[rows] + 50_000_000, pa.timestamp("ns")), status_code=pa.array(["UNSET"] * n),
                operation=pa.array(["chat"] * n),
                intent_key=pa.array([f"intent-{c:02d}.v1" for c in intent[rows]]),
                input_messages=pa.array([inputs] * n), output_messages=pa.array([outputs] * n),
                received_at=pa.array(start[rows] + 60_000_000, pa.timestamp("ns")))
            if two_dialects:
                columns["dialect"] = pa.array(np.where(rows % 2 == 0, "verdict", "openllmetry").tolist())
            date = datetime.fromtimestamp(int(d) * 86_400, UTC).date().isoformat()
            lake.write_segment(data_dir, tenant, date, pa.table([columns[n] for n in schema.names], schema=schema))


# Sampling runs in a child process of its own, so its peak RSS is the sampler's alone; `--baseline` runs the
# same child on another checkout's code (argv: code dir or "", lake dir, state dir).
_SAMPLE_CHILD = """
import hashlib, json, sys, time
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
from datetime import datetime
from pathlib import Path
import duckdb
from verdict.tenancy import TenantId
from verdict_daemon.config import Sampling
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.state import StateStore
store = StateStore(Path(sys.argv[3]))
store.schema_version()
started, cpu_started = time.perf_counter(), time.process_time()
sampled = sum(sample(store, Path(sys.argv[2]), TenantId(t), Sampling(), datetime.fromisoformat(sys.argv[4])).sampled
              for t in sys.argv[5:])
seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu_started  # CPU: every thread's
# This process's own peak, not ru_maxrss (the lake builder's, ~1 GiB at 10M traces, hid the sampler's own ~480 MiB).
import os, runpy
rss = runpy.run_path(os.environ["VERDICT_BENCH_OWN_PEAK"])["own_peak_mib"]()
con = duckdb.connect(str(store.path), read_only=True)
picks = con.execute("SELECT string_agg(tenant_id || trace_id, ',' ORDER BY tenant_id, trace_id) FROM sampled_traces")
print(json.dumps({"sampled": sampled, "seconds": seconds, "cpu_s": cpu_s, "peak_rss_mib": rss,
                  "picks_md5": hashlib.md5((picks.fetchone()[0] or "").encode()).hexdigest()}))
"""


def sample_in_child(code: Path | None, data_dir: Path, state_dir: Path) -> dict:
    """Both tenants sampled by a fresh interpreter (`code`: another checkout to import the sampler from)."""
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(code or Path(__file__).resolve().parents[1]),
           "VERDICT_BENCH_OWN_PEAK": str(Path(__file__).with_name("own_peak.py"))}  # this checkout's, by path
    done = subprocess.run([sys.executable, "-c", _SAMPLE_CHILD, str(code or ""), str(data_dir), str(state_dir),
                           NOW.isoformat(), *TENANTS], env=env, capture_output=True, text=True, check=True)
    last = done.stdout.splitlines()[-1]
    return json.loads(last[last.rindex("{"):])  # after DuckDB's progress bar, if it drew one


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def _same_picks(before: list[dict], after: list[dict]) -> bool:
    return len({run["picks_md5"] for run in before + after}) == 1


def _sampling_figures(runs: list[dict]) -> str:
    """Medians, then each run: wall and CPU seconds (the child's threads), peak RSS of the child."""
    return (f"{runs[0]['sampled']} traces sampled in {_median(runs, 'seconds'):.2f} s, "
            f"{_median(runs, 'cpu_s'):.2f} s CPU, peak RSS {_median(runs, 'peak_rss_mib'):.0f} MiB (own process; "
            f"median of {len(runs)}: " + "; ".join(f"{r['seconds']:.1f} s, {r['cpu_s']:.1f} s CPU, "
                                                    f"{r['peak_rss_mib']:.0f} MiB" for r in runs) + ")")


def _reply(request) -> str:
    text = request.messages[0].content
    asked = text.split("with exactly the keys ", 1)[1].split(":", 1)[0].split(", ")
    return json.dumps({d: {"rationale": "ok", "evidence": [], "verdict": "PASS"} for d in asked})


def fill_judgments(store, tenant: str, fingerprint: str) -> int:
    """One OK attempt with 5 verdicts for every sampled trace that has none (vectorised in DuckDB)."""
    with store.transaction() as con:
        con.execute("""
            INSERT OR IGNORE INTO judgment_attempts
            SELECT tenant_id, md5(trace_id || $fp), trace_id, $fp, 1, 'OK', NULL, NULL, now()::TIMESTAMP,
                   100, 50, 0.0, 'bench', 1
            FROM sampled_traces WHERE tenant_id = $t""", {"t": tenant, "fp": fingerprint})
        con.execute("""
            INSERT OR IGNORE INTO dimension_verdicts (tenant_id, attempt_id, dimension, value, score, reason)
            SELECT a.tenant_id, a.attempt_id, d.name,
                   CASE WHEN hash(a.trace_id || d.name) % 10 = 0 THEN 'FAIL' ELSE 'PASS' END, NULL, 'bench'
            FROM judgment_attempts a,
                 (VALUES ('groundedness'), ('relevance'), ('completeness'), ('safety'),
                         ('instruction_following')) d(name)
            WHERE a.tenant_id = $t AND a.fingerprint = $fp""", {"t": tenant, "fp": fingerprint})
        return con.execute("SELECT count(*) FROM judgment_attempts WHERE tenant_id = ?", [tenant]).fetchone()[0]


def _sampling_runs(args: argparse.Namespace, work: Path) -> tuple[list[dict], list[dict]]:
    """Alternating sampler runs of the baseline and this code, each into a fresh state (a second run into one
    state would find its picks taken); the first run of this code samples into `work`, the state judging and
    drift read. Prints their figures; returns (baseline runs, this code's runs)."""
    before: list[dict] = []
    after: list[dict] = []
    for i in range(args.runs):
        if args.baseline:
            before.append(sample_in_child(args.baseline, work, work / f"baseline-state-{i}"))
        after.append(sample_in_child(None, work, work / f"state-{i}" if i else work))
    if args.baseline:
        print(f"sampling, baseline ({args.baseline}): {_sampling_figures(before)}")
    print(f"sampling: {_sampling_figures(after)} (targets at 100k traces: <= 5 s, <= 500 MB)"
          + (f"; same picks as the baseline: {_same_picks(before, after)}" if args.baseline else ""))
    if args.baseline:
        print(f"sampling, this code / baseline (medians of {args.runs}): "
              + ", ".join(f"{key} {_median(after, key) / _median(before, key):.2f}x"
                          for key in ("seconds", "cpu_s", "peak_rss_mib")))
    return before, after


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--judged", type=int, default=3000, help="traces judged in the throughput run")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--two-dialects", action="store_true", help="sample with the duplicate rules active")
    parser.add_argument("--baseline", type=Path, help="a checkout (e.g. a `git worktree` of main) whose sampler "
                        "runs first on the same lake: its peak RSS and time, and whether the picks are the same")
    parser.add_argument("--runs", type=int, default=1, help="sampler runs of each checkout (alternating); medians")
    parser.add_argument("--sampling-only", action="store_true", help="stop after sampling (no judging, no drift)")
    args = parser.parse_args()
    print(f"machine: load average {os.getloadavg()[0]:.1f} at start")

    from verdict.judges.judge import Judge
    from verdict.models.scripted import ScriptedModel
    from verdict_daemon.clustering.assign_step import IntentKeyAssigner, assign
    from verdict_daemon.config import Drift, Judging
    from verdict_daemon.service.drift_runs import run_drift
    from verdict_daemon.service.judge_evaluators import JudgeEvaluator
    from verdict_daemon.service.judging import judge
    from verdict_daemon.store.state import StateStore

    work = Path(tempfile.mkdtemp(prefix="verdict-bench-"))
    try:
        started = time.perf_counter()
        build_lake(work, args.traces, args.two_dialects)
        print(f"lake: {args.traces} traces, {CLUSTERS} clusters, {len(TENANTS)} tenants, {DAYS} days "
              f"(built in {time.perf_counter() - started:.1f} s)")
        store = StateStore(work)
        store.schema_version()

        before, after = _sampling_runs(args, work)
        sampling_s, sampler_rss = _median(after, "seconds"), _median(after, "peak_rss_mib")
        if args.sampling_only:
            return 0

        model = ScriptedModel(_reply, name="scripted/bench", latency=args.latency)
        evaluator = JudgeEvaluator("bench", Judge(model, retries=0), {"kind": "rubric"})
        config = Judging(concurrency=args.concurrency, budget={"max_calls": args.judged})
        started = time.perf_counter()
        report = judge(store, TenantId(TENANTS[0]), evaluator, config, "bench")
        judge_s = time.perf_counter() - started
        ideal = args.concurrency / args.latency
        rate = report.judged / judge_s
        print(f"judging: {report.judged} traces x 5 dimensions in {judge_s:.2f} s = {rate:.0f}/s; ideal "
              f"{ideal:.0f}/s; ratio {rate / ideal:.2f} (target >= 0.80)")

        drift_times = []
        for tenant in TENANTS:
            fill_judgments(store, tenant, evaluator.fingerprint)
            assign(store, TenantId(tenant), IntentKeyAssigner())
            started = time.perf_counter()
            (run,) = run_drift(store, TenantId(tenant), evaluator.fingerprint, Drift(), NOW + timedelta(seconds=1))
            drift_times.append(time.perf_counter() - started)
            print(f"drift {tenant}: {run.judgments} judgments, {run.cells} cells, {run.tested} tested, "
                  f"{len(run.signals)} signals in {drift_times[-1]:.2f} s (target <= 5 s)")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS: {rss:.0f} MiB (lake builder, judging, drift; target <= 600 MB)")
        print(json.dumps({"traces": args.traces, "sampling_s": round(sampling_s, 3), "judged_per_s": round(rate, 1),
                          "ideal_per_s": ideal, "throughput_ratio": round(rate / ideal, 3),
                          "drift_s_max": round(max(drift_times), 3), "peak_rss_mib": round(rss),
                          "sampler_peak_rss_mib": round(sampler_rss)}
                         | ({"baseline_sampler_peak_rss_mib": round(_median(before, "peak_rss_mib")),
                             "baseline_sampling_s": round(_median(before, "seconds"), 3),
                             "same_picks": _same_picks(before, after)} if args.baseline else {})))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
