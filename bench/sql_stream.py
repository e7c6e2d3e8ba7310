"""`verdict sql` output memory: the streamed writer against fetching the whole result first (issue 28).

    .venv/bin/python bench/sql_stream.py                    # 3M rows, every format
    .venv/bin/python bench/sql_stream.py --rows 10000000 --formats csv

Each run is a fresh process writing to /dev/null: `verdict sql` as shipped (rows fetched BATCH_ROWS at a
time, each batch written before the next), and the same query through the same writer after
`fetchall()` (one batch holding every row, as `verdict sql` did before). Prints peak RSS and wall time of
both, and their ratio. A child's peak RSS is read from a small wrapper's RUSAGE_CHILDREN (Linux keeps
the parent's high-water mark across exec, so this process's own size must not count).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERY = "SELECT i, i * 2 AS j, 'row ' || i AS s FROM range({rows}) t(i)"

_MEASURED = """\
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
sys.stderr.write(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n")
sys.exit(code)
"""
_FETCHALL = """\
import sys, duckdb
from collector import sql_output
cursor = duckdb.connect().execute(sys.argv[1])
columns = [d[0] for d in cursor.description]
sql_output.write(columns, sql_output.Counted(iter([cursor.fetchall()]), None), sys.argv[2], sys.stdout)
"""


def measure(argv: list[str]) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of one child process."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _MEASURED, *argv], capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed: {out.stderr[-500:]}")
    return int(out.stderr.splitlines()[-1]) / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--formats", nargs="+", default=["csv", "json", "table"])
    args = parser.parse_args()
    query = QUERY.format(rows=args.rows)
    print(f"{args.rows:,} rows (i BIGINT, j BIGINT, s VARCHAR) to /dev/null")
    print(f"{'format':<7} {'streamed MB':>12} {'s':>7} {'fetchall MB':>12} {'s':>7} {'RSS ratio':>10} {'time ratio':>11}")
    with tempfile.TemporaryDirectory() as data_dir:
        for fmt in args.formats:
            streamed = measure([sys.executable, "-m", "verdict_daemon.cli", "sql", query, "--data-dir", data_dir,
                                "--format", fmt])
            whole = measure([sys.executable, "-c", _FETCHALL, query, fmt])
            print(f"{fmt:<7} {streamed[0]:>12.0f} {streamed[1]:>7.1f} {whole[0]:>12.0f} {whole[1]:>7.1f} "
                  f"{whole[0] / streamed[0]:>9.1f}x {streamed[1] / whole[1]:>10.2f}x")


if __name__ == "__main__":
    main()
