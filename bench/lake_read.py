"""The span lake on object storage: read and ingest figures next to their local baselines (no assertions).

    .venv/bin/python bench/lake_read.py                          # 10M spans, 30 s ingest phases
    .venv/bin/python bench/lake_read.py --rows 2000000 --seconds 10   # quick look
    .venv/bin/python bench/lake_read.py --rows 2000000 --seconds 0 --engines 0 --two-dialects   # identity rule on
    .venv/bin/python bench/lake_read.py --rows 1000000 --seconds 0 --engines 0 --two-dialects --baseline /tmp/main
    .venv/bin/python bench/lake_read.py --rows 1000000 --seconds 0 --engines 0 --two-dialects --call-s 30 --baseline /tmp/main
    .venv/bin/python bench/lake_read.py --rows 1000000 --seconds 0 --engines 0 --two-dialects --same-question --baseline /tmp/main
    .venv/bin/python bench/lake_read.py --rows 1000000 --seconds 0 --engines 0 --twinned --baseline /tmp/main --no-object-store
    .venv/bin/python bench/lake_read.py --rows 10000000 --seconds 0 --engines 0 --two-dialects --baseline /tmp/before --runs 3 --no-object-store

1. `verdict sql` "calls per intent per day" (bench/collector_ingest.py's query and lake: 30 compacted days
   plus fresh segments with retries) over --rows spans on local disk, then the same files shipped to an
   S3-compatible server on loopback (moto's, a Python process on the same cores) and read with
   `--lake-url` only; target: object store within 3x local disk. Next to it, the same question asked by
   docs/scaling.md's Spark (s3a, `make spark-s3a`) and ClickHouse (chDB `s3()`) recipes on the same bucket
   (tests/engines runs them for their answers; Spark's session start is printed apart). --engines 0 skips.
   With --two-dialects, the same spans written by one instrumentation (llm_calls' identity rule off) are timed
   first: the rule's cost is the ratio of the two local-disk medians. With --baseline DIR (a checkout of another
   revision, e.g. `git archive main | tar -x -C /tmp/main`), `verdict sql` from DIR's code is timed on the same
   lake, run for run alternating with this code's, and must give the same answer (CPU and peak RSS
   of each `verdict sql` process; --runs each), then `verdict sql "SELECT 1"` likewise: the fixed cost every
   query pays (process start, listing, footers, creating the views). With --call-s S, every call lasts S
   seconds (0.9 otherwise): 30 makes each call overlap the next of its own model and service all day (the
   overlap sweep the identity rule used before could then prune no call). With --same-question every call's user
   message is the same text (one prompt sent all day by both instrumentations: every key is shared). With
   --twinned every call is described twice (two spans of two instrumentations in one trace, one response id, the
   question and the answer in both): the identity rule merges every call, where --two-dialects merges none. The compacted
   days hold the input fingerprint as compaction stores it; --unstored-fingerprints leaves it out (a lake
   compacted before it was stored: every call's user messages are parsed when read).
2. Ingest throughput of the real collector with shipping off, then on (`--lake-url` to the same server,
   sealing every 5 s); target: shipping on stays at or above 25,000 spans/s (bench/collector_ingest.py).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.collector_ingest import (  # noqa: E402
    BATCH,
    SQL_QUERY,
    TARGET_SPANS_PER_S,
    build_sql_lake,
    ingest_phase,
)
from collector.loadgen import export_request  # noqa: E402
from collector.objectstore import ObjectLake  # noqa: E402
from tests.collector.s3_server import start_s3_server  # noqa: E402
from tests.engines import recipes  # noqa: E402

TARGET_READ_RATIO = 3.0


def _sql_seconds(args: list[str], runs: int = 3, cpu: list[float] | None = None,
                 code: Path = ROOT, rss: list[float] | None = None, query: str = SQL_QUERY) -> tuple[float, str]:
    """Median wall seconds of `verdict sql` (the checkout `code`'s) and its output; each run's CPU seconds (user +
    system, the figure a busy machine disturbs least) are appended to `cpu` and its peak RSS (MiB) to `rss`
    when given. CPU comes from wait4 on that one child (RUSAGE_CHILDREN sums every child), the peak from the child
    itself (bench/own_peak.py: wait4's ru_maxrss would be this process's peak, the lake builder's, when larger)."""
    timings = []
    for _ in range(runs):
        with (tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr,
              tempfile.NamedTemporaryFile("r") as peak):
            started = time.perf_counter()
            child = subprocess.Popen([sys.executable, str(ROOT / "bench" / "own_peak.py"), peak.name,
                                      "-m", "verdict_daemon.cli", "sql", query, "--tenant", "bench",
                                      "--format", "csv", *args], stdout=stdout, stderr=stderr, text=True, cwd=code,
                                     env={**os.environ, "PYTHONPATH": str(code)})
            _, status, usage = os.wait4(child.pid, 0)
            timings.append(time.perf_counter() - started)
            child.returncode = os.waitstatus_to_exitcode(status)  # reaped here; Popen must not wait again
            stdout.seek(0), stderr.seek(0)
            out = stdout.read()
            if child.returncode != 0:
                raise SystemExit(f"verdict sql {' '.join(args)} failed: {stderr.read()}")
            if rss is not None:
                rss.append(float(peak.read()))
        if cpu is not None:
            cpu.append(usage.ru_utime + usage.ru_stime)
    return statistics.median(timings), out


def _median_s(run, runs: int = 3) -> float:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def engines_on_s3(lake: recipes.S3Lake, duckdb_s: float) -> None:
    """docs/scaling.md's Spark and ClickHouse recipes over the bucket, medians next to `verdict sql`'s."""
    import chdb

    ch_sql = recipes.clickhouse_sql(lake)
    figures = {"ClickHouse (chDB s3())": _median_s(lambda: chdb.query(ch_sql, "JSONCompact"))}
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--conf spark.ui.showConsoleProgress=false pyspark-shell")
    started = time.perf_counter()
    exec(recipes.spark_session_code(lake), {})  # the docs' s3a session; the recipe's getOrCreate() reuses it
    session_s = time.perf_counter() - started
    query = recipes.spark_query_code(lake, dirs=("a",))

    def spark_run() -> None:
        namespace: dict = {}
        exec(query, namespace)
        namespace["calls_per_intent_per_day"].collect()

    figures["Spark (s3a, local[*])"] = _median_s(spark_run)
    SparkSession.builder.getOrCreate().stop()
    for engine, seconds in figures.items():
        print(f"[read] {engine:<24} {seconds:6.2f} s  ({seconds / duckdb_s:.1f}x verdict sql on the object store)")
    print(f"[read] (Spark session start with the s3a jars, once: {session_s:.1f} s)")


def identity_rule_baseline(rows: int, cpu: list[float], call_s: float | None) -> float:
    """Median `verdict sql` seconds over the same spans from one instrumentation (the identity rule off)."""
    with tempfile.TemporaryDirectory(prefix="verdict-bench-lake-") as tmp:
        build_sql_lake(Path(tmp), rows, call_s=call_s)
        return _sql_seconds(["--data-dir", tmp], cpu=cpu)[0]


def compare_with(baseline: Path, args: list[str], runs: int = 4) -> None:
    """`verdict sql` of this code and of `baseline`'s on one lake, alternating run for run: medians side by side."""
    cpu: dict[Path, list[float]] = {ROOT: [], baseline: []}
    wall: dict[Path, list[float]] = {ROOT: [], baseline: []}
    rss: dict[Path, list[float]] = {ROOT: [], baseline: []}
    answers = set()
    for _ in range(runs):
        for code in (baseline, ROOT):
            seconds, out = _sql_seconds(args, runs=1, cpu=cpu[code], code=code, rss=rss[code])
            wall[code].append(seconds)
            answers.add(out)
    assert len(answers) == 1, "the baseline answered differently"
    now_s, now_cpu, now_rss, base_s, base_cpu, base_rss = (
        statistics.median(figures[c]) for c in (ROOT, baseline) for figures in (wall, cpu, rss))
    print(f"[read] against {baseline} (same lake, alternating, medians of {runs}): {now_s:.2f} s ({now_cpu:.2f} s CPU, "
          f"peak RSS {now_rss:.0f} MiB) vs {base_s:.2f} s ({base_cpu:.2f} s CPU, peak RSS {base_rss:.0f} MiB); "
          f"ratio {now_s / base_s:.2f}x ({now_cpu / base_cpu:.2f}x CPU, {now_rss / base_rss:.2f}x RSS)")
    for c, label in ((baseline, "baseline"), (ROOT, "this code")):
        print(f"[read]   {label} per run: CPU {' '.join(f'{x:.2f}' for x in cpu[c])} s; "
              f"peak RSS {' '.join(f'{x:.0f}' for x in rss[c])} MiB")
    # What every query pays before it runs: the process, the listing, the footers and creating the views.
    fixed: dict[Path, list[float]] = {ROOT: [], baseline: []}
    for _ in range(2 * runs + 1):
        for code in (baseline, ROOT):
            _sql_seconds(args, runs=1, cpu=fixed[code], code=code, query="SELECT 1")
    now_fixed, base_fixed = (statistics.median(fixed[c]) for c in (ROOT, baseline))
    print(f"[read] fixed cost, `verdict sql \"SELECT 1\"` (alternating, medians of {2 * runs + 1}): {now_fixed:.2f} s CPU "
          f"vs {base_fixed:.2f} s CPU; ratio {now_fixed / base_fixed:.2f}x")


def read_object_store(server, data_dir: Path, files: list[Path], local_s: float, local_out: str,
                      engines: bool) -> None:
    """The lake's files shipped to the S3 server and read with `--lake-url` only (and by the other engines)."""
    bucket = server.new_bucket()
    lake_url = f"s3://{bucket}/lake/a"  # one collector's dir, as the engines' recipes lay a lake out
    remote = ObjectLake(lake_url)
    started = time.perf_counter()
    size = sum(remote.upload(f, f.relative_to(data_dir).as_posix()).size for f in files)
    upload_s = time.perf_counter() - started
    remote_s, remote_out = _sql_seconds(["--lake-url", lake_url, "--data-dir", str(data_dir.parent / "absent")])
    assert remote_out == local_out, "the object store answered differently"
    print(f"[read] {len(files)} files, {size / 1e6:.0f} MB (uploaded in {upload_s:.1f} s)")
    print(f"[read] verdict sql calls per intent per day (median of 3): local disk {local_s:.2f} s; object store "
          f"(loopback) {remote_s:.2f} s; ratio {remote_s / local_s:.2f}x (target <= {TARGET_READ_RATIO:.0f}x)")
    if engines:
        env = server.env
        engines_on_s3(recipes.S3Lake(server.endpoint, bucket, "lake", env["AWS_ACCESS_KEY_ID"],
                                     env["AWS_SECRET_ACCESS_KEY"]), remote_s)


def read_phase(rows: int, server, engines: bool, two_dialects: bool = False, baseline: Path | None = None,
               call_s: float | None = None, same_question: bool = False, runs: int = 4,
               object_store: bool = True, stored_fingerprints: bool = True, twinned: bool = False) -> None:
    baseline_cpu: list[float] = []
    local_cpu: list[float] = []
    baseline_s = identity_rule_baseline(rows, baseline_cpu, call_s) if two_dialects else None
    with tempfile.TemporaryDirectory(prefix="verdict-bench-lake-") as tmp:
        data_dir = Path(tmp) / "data"
        stored = build_sql_lake(data_dir, rows, two_dialects=two_dialects, call_s=call_s, same_question=same_question,
                                stored_fingerprints=stored_fingerprints, twinned=twinned)
        local_s, local_out = _sql_seconds(["--data-dir", str(data_dir)], cpu=local_cpu)
        files = sorted(data_dir.rglob("*.parquet"))
        print(f"[read] {stored:,} spans in {len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.0f} MB; "
              f"verdict sql on local disk {local_s:.2f} s (median of 3)")
        if baseline is not None:
            compare_with(baseline, ["--data-dir", str(data_dir)], runs)
        if object_store:
            read_object_store(server, data_dir, files, local_s, local_out, engines)
    if baseline_s is not None:
        cpu_s, baseline_cpu_s = statistics.median(local_cpu), statistics.median(baseline_cpu)
        print(f"[read] identity rule (half the calls from a second instrumentation, none twinned), local disk, "
              f"medians of 3: {local_s:.2f} s ({cpu_s:.2f} s CPU) vs {baseline_s:.2f} s ({baseline_cpu_s:.2f} s CPU) "
              f"from one instrumentation (rule off); ratio {local_s / baseline_s:.2f}x ({cpu_s / baseline_cpu_s:.2f}x CPU)")


def ingest_phases(seconds: float, clients: int, server) -> None:
    rng = random.Random(7)
    now = time.time_ns()
    bodies = [("/v1/traces", export_request(rng, BATCH, now + i * 10**9).SerializeToString(), BATCH)
              for i in range(64)]
    figures = {}
    for label, extra in (("shipping off", []), ("shipping on", [
            "--lake-url", f"s3://{server.new_bucket()}/lake", "--ship-seal-after-s", "5"])):
        args = argparse.Namespace(clients=clients, collector_args=extra, transport="http")
        result = ingest_phase(args, bodies, seconds, None, label, True)
        figures[label] = result["spans_per_s"]
        print(f"[ingest, {label}] {result['spans_per_s']:,.0f} spans/s; ack p99 {result['p99_ms']:.0f} ms; "
              f"collector CPU {result['cpu_us_per_span']:.1f} us/span; refused {result['errors'] or 'none'}")
    print(f"[ingest] shipping on / off: {figures['shipping on'] / figures['shipping off']:.2f} "
          f"(target: on >= {TARGET_SPANS_PER_S:,} spans/s; the S3 server shares these cores)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000, help="spans for the read phase (0: skip)")
    parser.add_argument("--seconds", type=float, default=30.0, help="each ingest phase (0: skip)")
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--engines", type=int, default=1, help="1: time Spark and ClickHouse too (0: skip)")
    parser.add_argument("--two-dialects", action="store_true",
                        help="half the calls from a second instrumentation: llm_calls' identity rule runs on all")
    parser.add_argument("--call-s", type=float, help="every call lasts this long (default 0.9; 30: dense overlap)")
    parser.add_argument("--same-question", action="store_true",
                        help="with --two-dialects: every call asks the same question (every key shared)")
    parser.add_argument("--baseline", type=Path, help="a checkout whose `verdict sql` is timed on the same lake")
    parser.add_argument("--runs", type=int, default=4, help="with --baseline: alternating runs of each checkout")
    parser.add_argument("--unstored-fingerprints", action="store_true",
                        help="compacted days without the input fingerprint compaction stores (compacted before it)")
    parser.add_argument("--twinned", action="store_true",
                        help="every call described by two instrumentations (two spans, one response id, both "
                             "messages): the identity rule merges every call")
    parser.add_argument("--no-object-store", action="store_true",
                        help="read phase on local disk only (no upload to the S3 server, no other engines)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    server = start_s3_server()
    os.environ.update(server.env)  # for the collector and `verdict sql` started below
    try:
        if args.rows:
            read_phase(args.rows, server, bool(args.engines), args.two_dialects,
                       args.baseline.resolve() if args.baseline else None, args.call_s, args.same_question,
                       args.runs, not args.no_object_store, not args.unstored_fingerprints, args.twinned)
        if args.seconds:
            ingest_phases(args.seconds, args.clients, server)
    finally:
        server.stop()
        print(f"machine: load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
