"""The sampler's memory is bounded whatever the lookback's volume, and the draw is the same under the bound.

A lake of 600,000 traces (3 days x 4 intents, written the way the collector writes segments) is sampled in a
child process with `sampling.memory_limit_mb` = 128. The child's peak RSS during that run (the kernel's
high-water mark, reset after a warm-up run has loaded DuckDB) may exceed its RSS before the run by the limit
plus a fixed allowance for what DuckDB keeps outside its buffer pool (measured: +133 MiB). The sampler before
the limit and the shortlist grew with the volume: +384 MiB here, 915 MiB at 2 M traces in bench/daemon_cycle.py.
Under the limit the picks are still each (intent, day)'s bottom-k by md5(seed:trace_id), computed here
independently. One trace in SHED was exported without content (the lake's `content_omitted` column): it is
left out of the draw and counted, under the same bound.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa

from collector import lake
from collector.schema import arrow_schema

NOW = datetime(2026, 11, 20, tzinfo=UTC)
INTENTS = ("billing.v1", "search.v1", "returns.v1", "account.v1")
DAYS = 3
K = 50
LIMIT_MB = 128
ALLOWANCE_MB = 64  # DuckDB's allocations outside its buffer pool, allocator slack
SHED = 100  # every SHED-th trace lost its content under overload

_CHILD = """
import json, sys
from datetime import datetime
from pathlib import Path
from verdict.tenancy import TenantId
from verdict_daemon.config import Sampling
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.state import StateStore

def kib(key):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key + ":"))

small, large, states, now, k, limit = sys.argv[1:]
config = Sampling(per_cluster_per_window=int(k), memory_limit_mb=int(limit))
now = datetime.fromisoformat(now)
sample(StateStore(Path(states) / "warm-up"), Path(small), TenantId("acme"), config, now)  # DuckDB loaded
with open("/proc/self/clear_refs", "w") as f:  # the high-water mark restarts from the current RSS
    f.write("5")
before = kib("VmRSS")
report = sample(StateStore(Path(states) / "run"), Path(large), TenantId("acme"), config, now)
print(json.dumps({"growth_mib": (kib("VmHWM") - before) / 1024, "sampled": report.sampled,
                  "omitted": report.content_omitted}))
"""


def _build(data: Path, per_day: int) -> list[tuple[str, str, str]]:
    """`per_day` one-call traces on each of DAYS days, intents round robin, every SHED-th without content; returns
    (trace_id, intent, day) of the others."""
    schema = arrow_schema()
    lake.prepare(data)
    con = duckdb.connect()
    message = '[{"role": "user", "parts": [{"type": "text", "content": "How do I update billing?"}]}]'
    traces = []
    for d in range(DAYS):
        day = (NOW - timedelta(days=DAYS - d)).replace(tzinfo=None)
        table = con.sql(f"""
            SELECT printf('%032x', {d} * $n + i) AS trace_id, printf('%016x', {d} * $n + i) AS span_id,
                   'chat' AS name, 'CLIENT' AS kind, 'UNSET' AS status_code, 'chat' AS operation,
                   ($day + to_microseconds((i * 86399000000 // $n)::BIGINT))::TIMESTAMP_NS AS start_time,
                   start_time + INTERVAL 50 MILLISECOND AS end_time, start_time + INTERVAL 60 MILLISECOND AS received_at,
                   $intents[1 + i % {len(INTENTS)}] AS intent_key, $message AS input_messages,
                   $message AS output_messages,
                   CASE WHEN i % {SHED} = 0 THEN 'export_backlog' END AS content_omitted
            FROM range($n) t(i)""", params={"n": per_day, "day": day, "intents": list(INTENTS),
                                            "message": message}).to_arrow_table()
        table = table.cast(pa.schema([schema.field(name) for name in table.column_names]))
        lake.write_segment(data, "acme", day.date().isoformat(), table)
        traces += [(t, i, day.date().isoformat()) for t, i, shed in zip(
            table["trace_id"].to_pylist(), table["intent_key"].to_pylist(), table["content_omitted"].to_pylist(),
            strict=True) if shed is None]
    return traces


def test_sampling_300k_traces_stays_within_the_memory_limit_and_draws_the_bottom_k(tmp_path):
    _build(tmp_path / "small", per_day=100)
    traces = _build(tmp_path / "large", per_day=200_000)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "small"), str(tmp_path / "large"),
                           str(tmp_path / "states"), NOW.isoformat(), str(K), str(LIMIT_MB)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.splitlines()[-1]
    result = json.loads(last[last.rindex('{"growth_mib"'):])  # after DuckDB's progress bar, if it drew one
    assert result["growth_mib"] <= LIMIT_MB + ALLOWANCE_MB, result
    assert result["sampled"] == DAYS * len(INTENTS) * K
    assert result["omitted"] == {"export_backlog": DAYS * 200_000 // SHED}

    cells: dict[tuple[str, str], list[str]] = {}
    for trace_id, intent, day in traces:
        cells.setdefault((intent, day), []).append(trace_id)
    expected = {t for ids in cells.values()
                for t in sorted(ids, key=lambda t: hashlib.md5(f"0:{t}".encode()).hexdigest())[:K]}
    con = duckdb.connect(str(tmp_path / "states" / "run" / "state.duckdb"), read_only=True)
    try:
        picked = {t for (t,) in con.execute("SELECT trace_id FROM sampled_traces").fetchall()}
    finally:
        con.close()
    assert picked == expected
