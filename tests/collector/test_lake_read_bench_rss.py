"""bench/lake_read.py reports the `verdict sql` child's own peak RSS, not its parent's.

Linux carries a process's peak into its child's ru_maxrss when the child execs: at 10 M spans the bench's lake
builder's peak showed as `verdict sql`'s. Here the parent holds MiB well above what `verdict sql` over a small lake
needs, and the child's figure must stay below them (as tests/daemon/test_sampling_bench_rss.py for the sampler).
"""

from __future__ import annotations

from pathlib import Path

from bench.collector_ingest import build_sql_lake
from bench.lake_read import _sql_seconds

PARENT_MIB = 768


def test_sql_peak_is_the_childs_own(tmp_path: Path) -> None:
    build_sql_lake(tmp_path, 130_000, two_dialects=True)
    held = bytearray(PARENT_MIB * 2**20)
    held[::4096] = b"\1" * len(held[::4096])  # touched: resident in this process when the child is spawned
    cpu: list[float] = []
    rss: list[float] = []
    _seconds, out = _sql_seconds(["--data-dir", str(tmp_path)], runs=1, cpu=cpu, rss=rss)
    assert out.count("\n") > 1 and cpu[0] > 0
    assert 20 < rss[0] < PARENT_MIB / 2, rss  # verdict sql over 130k spans: DuckDB and imports, ~200 MiB
    del held
