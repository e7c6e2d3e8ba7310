"""bench/daemon_cycle.py reports the sampler child's own peak RSS, not its parent's.

Linux carries a process's peak into its child's ru_maxrss when the child execs: the bench's lake builder (about
1 GiB at 10 M traces) showed as the sampler's peak (936-1063 MiB reported, 478 MiB its own). Here the parent holds
MiB well above what a sampler of a small lake needs, and the child's figure must stay below them.
"""

from __future__ import annotations

from pathlib import Path

from bench.daemon_cycle import build_lake, sample_in_child

PARENT_MIB = 768


def test_sampler_peak_is_the_childs_own(tmp_path: Path) -> None:
    build_lake(tmp_path, 2_000, two_dialects=True)
    held = bytearray(PARENT_MIB * 2**20)
    held[::4096] = b"\1" * len(held[::4096])  # touched: resident in this process when the child is spawned
    run = sample_in_child(None, tmp_path, tmp_path / "state")
    assert run["sampled"] > 0
    assert run["peak_rss_mib"] < PARENT_MIB / 2, run  # a sampler of 2,000 traces: DuckDB and imports, ~150 MiB
    del held
