"""The span lake on object storage: read and ingest figures next to their local baselines (no assertions).

    .venv/bin/python bench/lake_read.py                          # 10M spans, 30 s ingest phases
    .venv/bin/python bench/lake_read.py --rows 2000000 --seconds 10   # quick look

1. `verdict sql` "calls per intent per day" (bench/collector_ingest.py's query and lake: 30 compacted days
   plus fresh segments with retries) over --rows spans on local disk, then the same files shipped to an
   S3-compatible server on loopback (moto's, a Python process on the same cores) and read with
   `--lake-url` only; target: object store within 3x local disk.
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

TARGET_READ_RATIO = 3.0


def _sql_seconds(args: list[str], runs: int = 3) -> tuple[float, str]:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "sql", SQL_QUERY, "--tenant", "bench",
                              "--format", "csv", *args], capture_output=True, text=True)
        timings.append(time.perf_counter() - started)
        if out.returncode != 0:
            raise SystemExit(f"verdict sql {' '.join(args)} failed: {out.stderr}")
    return statistics.median(timings), out.stdout


def read_phase(rows: int, server) -> None:
    with tempfile.TemporaryDirectory(prefix="verdict-bench-lake-") as tmp:
        data_dir = Path(tmp) / "data"
        stored = build_sql_lake(data_dir, rows)
        local_s, local_out = _sql_seconds(["--data-dir", str(data_dir)])
        lake_url = f"s3://{server.new_bucket()}/lake"
        remote = ObjectLake(lake_url)
        started = time.perf_counter()
        files = sorted(data_dir.rglob("*.parquet"))
        size = sum(remote.upload(f, f.relative_to(data_dir).as_posix()).size for f in files)
        upload_s = time.perf_counter() - started
        remote_s, remote_out = _sql_seconds(["--lake-url", lake_url, "--data-dir", str(Path(tmp) / "absent")])
    assert remote_out == local_out, "the object store answered differently"
    print(f"[read] {stored:,} spans in {len(files)} files, {size / 1e6:.0f} MB (uploaded in {upload_s:.1f} s)")
    print(f"[read] verdict sql calls per intent per day: local disk {local_s:.2f} s; object store (loopback) "
          f"{remote_s:.2f} s; ratio {remote_s / local_s:.2f}x (target <= {TARGET_READ_RATIO:.0f}x)")


def ingest_phases(seconds: float, clients: int, server) -> None:
    rng = random.Random(7)
    now = time.time_ns()
    bodies = [("/v1/traces", export_request(rng, BATCH, now + i * 10**9).SerializeToString(), BATCH)
              for i in range(64)]
    figures = {}
    for label, extra in (("shipping off", []), ("shipping on", [
            "--lake-url", f"s3://{server.new_bucket()}/lake", "--ship-seal-after-s", "5"])):
        args = argparse.Namespace(clients=clients, collector_args=extra)
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
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    server = start_s3_server()
    os.environ.update(server.env)  # for the collector and `verdict sql` started below
    try:
        if args.rows:
            read_phase(args.rows, server)
        if args.seconds:
            ingest_phases(args.seconds, args.clients, server)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
