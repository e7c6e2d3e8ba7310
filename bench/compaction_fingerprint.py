"""What storing the input fingerprint adds to compaction (no assertions).

    nice .venv/bin/python bench/compaction_fingerprint.py [--spans 200000] [--rounds 3]

bench/lake_read.py --two-dialects's spans (each with its user message) as fresh segments of 5,000 spans, compacted
by the real `compact_partition`, with and without the derived fingerprint column (collector/call_input.py),
alternating round for round on copies of one partition; process CPU (DuckDB's threads included), medians.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from bench.collector_ingest import _SQL_ROW, _TWO_DIALECTS  # noqa: E402
from collector import compaction, lake  # noqa: E402

FRESH_ROWS = 5_000


def fresh_lake(data_dir: Path, spans: int) -> Path:
    part = lake.partition_dir(data_dir, "bench", "2026-10-01", "spans")
    part.mkdir(parents=True)
    lake.prepare(data_dir)
    with duckdb.connect() as con:
        for k in range(spans // FRESH_ROWS):
            select = _TWO_DIALECTS.format(select=_SQL_ROW.format(offset=k * FRESH_ROWS, date="2026-10-01", step_us=1000,
                                                                 n=FRESH_ROWS), question="span_id")
            con.execute(f"COPY ({select}) TO '{part}/{k + 1}-fresh.parquet' (FORMAT parquet, COMPRESSION zstd)")
    return part


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    stored = compaction._TABLES["spans"]
    without = dataclasses.replace(stored, derived="")
    cpu: dict[str, list[float]] = {"with the fingerprint": [], "without": []}
    with tempfile.TemporaryDirectory(prefix="verdict-bench-compaction-") as tmp:
        source = Path(tmp) / "source"
        fresh_lake(source, args.spans)
        for _ in range(args.rounds):
            for label, table in (("without", without), ("with the fingerprint", stored)):
                data = Path(tmp) / "run"
                shutil.copytree(source, data)
                compaction._TABLES["spans"] = table
                started = time.process_time()
                compaction.compact_partition(data, lake.partition_dir(data, "bench", "2026-10-01", "spans"), 1)
                cpu[label].append(time.process_time() - started)
                shutil.rmtree(data)
        compaction._TABLES["spans"] = stored
    base, now = (statistics.median(cpu[k]) for k in ("without", "with the fingerprint"))
    print(f"compaction of {args.spans:,} spans ({args.spans // FRESH_ROWS} fresh segments), medians of {args.rounds}: "
          f"{now:.2f} s CPU with the fingerprint vs {base:.2f} s without: {now / base:.2f}x "
          f"({(now - base) / args.spans * 1e6:.1f} us per span)")
    for label, seconds in cpu.items():
        print(f"  {label}: {' '.join(f'{s:.2f}' for s in seconds)} s")
    print(f"machine: load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
