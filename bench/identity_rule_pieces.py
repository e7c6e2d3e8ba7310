"""Where `llm_calls`' identity rule spends its CPU: pieces of the view timed apart (no assertions).

    nice .venv/bin/python bench/identity_rule_pieces.py --rows 10000000 --baseline /tmp/before [--data-dir LAKE]

bench/lake_read.py --two-dialects's lake (half the calls from a second instrumentation, each with its own
question, none twinned), then in one DuckDB session per checkout (views from `verdict sql --print-views` of this
code and of --baseline DIR, e.g. `git archive <rev> | tar -x -C DIR`): the bench's query over `llm_calls` in both,
the same query over `llm_call_rows` (the rule off), and the rule's steps one on top of the other (read the
messages, validate them, parse the user text, normalise the model, hash and count the keys), and the rejected
TRY(from_json) in place of the json_valid guard, also with some messages not JSON; over the compacted days' files,
the stored input fingerprint read three ways (collector/call_input.py: only the views' guard skips the parse). Process CPU
(DuckDB's threads included), rounds interleaved, medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from bench.collector_ingest import SQL_QUERY, build_sql_lake  # noqa: E402
from collector import call_input  # noqa: E402
from collector.views import _CALL_MODEL  # noqa: E402

_USER_TEXT = call_input.user_text()
QUERY_OF = SQL_QUERY.replace(" ORDER BY day, intent_key", "")  # the order is 150 rows: not what is measured
_GUARD = "CASE WHEN json_valid(input_messages) THEN input_messages END"
# The alternative to the json_valid guard (rejected, docs/collector.md): TRY turns from_json's error into NULL.
TRY_TEXT = _USER_TEXT.replace(_GUARD, "input_messages").replace("from_json(", "TRY(from_json(", 1).replace(
    "), lambda m: m.role", ")), lambda m: m.role", 1)
assert _GUARD in _USER_TEXT and TRY_TEXT.count("TRY(") == 1
# One message in 500 not JSON: TRY re-evaluates a vector holding an error row by row.
SOME_INVALID = ("(SELECT CASE WHEN hash(span_id) % 500 = 0 THEN 'not json' ELSE input_messages END AS input_messages "
                "FROM llm_call_rows)")


def session(code: Path, data_dir: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB session holding the views `verdict sql` of the checkout `code` creates over `data_dir`."""
    views = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "sql", "--print-views", "--tenant", "bench",
                            "--data-dir", str(data_dir)], capture_output=True, text=True, check=True, cwd=code,
                           env={**os.environ, "PYTHONPATH": str(code)}).stdout
    con = duckdb.connect()
    con.execute("SET memory_limit = '4GB'")
    con.execute(views)
    return con


def pieces(now: duckdb.DuckDBPyConnection, before: duckdb.DuckDBPyConnection, data_dir: Path) -> dict[str, tuple]:
    rows = "FROM llm_call_rows"
    # The compacted days as files (their stored fingerprint is not a column of the views): how it is read.
    compacted = f"FROM read_parquet('{data_dir}/spans/*/*/c-*.parquet')"
    stored, computed = call_input.FINGERPRINT_COLUMN, call_input.fingerprint(_USER_TEXT)
    return {
        "the query, this code (rule on)": (now, QUERY_OF),
        "the query, baseline": (before, QUERY_OF),
        "the query over llm_call_rows (rule off)": (now, QUERY_OF.replace("llm_calls", "llm_call_rows")),
        "baseline's shared traces (GROUP BY trace_id)": (before, "SELECT count(*) FROM (SELECT trace_id FROM spans "
                                                         "WHERE operation IS NOT NULL GROUP BY 1 HAVING count(*) > 1)"),
        "read input_messages": (now, f"SELECT sum(length(input_messages)) {rows}"),
        "+ json_valid": (now, f"SELECT count(*) {rows} WHERE json_valid(input_messages)"),
        "+ user text (from_json, role filter, flatten, join)": (now, f"SELECT count({_USER_TEXT}) {rows}"),
        "user text, TRY(from_json) instead of json_valid": (now, f"SELECT count({TRY_TEXT}) {rows}"),
        "user text, 1 in 500 messages not JSON: json_valid": (now, f"SELECT count({_USER_TEXT}) FROM {SOME_INVALID}"),
        "user text, 1 in 500 messages not JSON: TRY": (now, f"SELECT count({TRY_TEXT}) FROM {SOME_INVALID}"),
        "compacted days: stored fingerprint, parse guarded in the json_valid CASE (the views')": (
            now, f"SELECT count({call_input.stored_or_computed()}) {compacted}"),
        "compacted days: coalesce(stored, computed), unguarded": (now, f"SELECT count(coalesce({stored}, {computed})) {compacted}"),
        "compacted days: CASE WHEN stored IS NULL THEN computed": (
            now, f"SELECT count(CASE WHEN {stored} IS NULL THEN {computed} ELSE {stored} END) {compacted}"),
        "compacted days: fingerprint computed (none stored)": (now, f"SELECT count({computed}) {compacted}"),
        "model normalisation + instrumentation (apart)": (
            now, f"SELECT count({_CALL_MODEL}), sum(length(coalesce(dialect, '') || '|' || coalesce(scope_name, ''))) {rows}"),
        "+ key hash, GROUP BY key HAVING count(*) > 1": (
            now, f"SELECT count(*) FROM (SELECT hash(coalesce(service_name, ''), {_CALL_MODEL}, {_USER_TEXT}) AS k {rows} "
                 "GROUP BY k HAVING count(*) > 1)"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the code before")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, help="a lake this bench (or lake_read's builder) wrote: reused, kept")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="verdict-bench-pieces-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        if not args.data_dir:
            build_sql_lake(data_dir, args.rows, two_dialects=True)
        timed = pieces(session(ROOT, data_dir), session(args.baseline.resolve(), data_dir), data_dir)
        cpu: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(args.rounds):
            for name, (con, sql) in timed.items():
                started = time.process_time()
                con.execute(sql).fetchall()
                cpu[name].append(time.process_time() - started)
    print(f"{args.data_dir or f'{args.rows:,} spans'}: process CPU, medians of {args.rounds} interleaved rounds:")
    for name, seconds in cpu.items():
        print(f"{statistics.median(seconds):7.2f} s  {name}  ({' '.join(f'{s:.2f}' for s in seconds)})")
    print(f"machine: load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
