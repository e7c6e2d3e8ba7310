"""Compaction: fold a partition's fresh segments into a *compacted* segment (`c-<ms>-<uuid>.parquet`).

Spans and log records alike (a log record is identified by its record_id instead).
Invariant: within a partition, compacted segments together hold each (trace_id, span_id) at
most once. A run merges the fresh segments, keeps the first-received copy of each span and
drops spans already present in the partition's compacted segments. Readers therefore only
deduplicate fresh segments (see collector.views), which keeps queries over millions of spans
fast.

Crash-safe by a journal in <data>/compaction/:
  1. journal {partition, inputs, output} is written durably;
  2. inputs are merged and deduplicated into tmp/, fsync'd;
  3. the merged file is renamed into the partition, directory fsync'd;
  4. inputs are retired (collector.retire: hidden from readers listing from now on, deleted after the
     grace period, so a reader that listed them before still reads them);  5. the journal is deleted.
`recover()` (at start and before every run) finishes step 4 for any journal whose output exists
and otherwise drops the journal (the temp output is removed with the other temp files). A crash
therefore loses nothing; between steps 3 and 4 the merged rows exist twice for a reader listing then,
which the `spans` view never shows (fresh rows already present in recent compacted rows are hidden).
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from collector import call_input, lake, retire

log = logging.getLogger("verdict.collector")

COMPACTED_PREFIX = "c-"
CRASH_ENV = "VERDICT_COLLECTOR_TEST_CRASH_AT"  # test-only: os._exit at a named step


def _crash_point(step: str) -> None:
    if os.environ.get(CRASH_ENV) == step:
        os._exit(137)


def journal_dir(data_dir: Path) -> Path:
    return data_dir / "compaction"


def recover(data_dir: Path) -> int:
    """Finish or roll back interrupted compactions; returns how many journals were resolved."""
    root = journal_dir(data_dir)
    if not root.exists():
        return 0
    resolved = 0
    for leftover in root.glob("*.tmp"):
        leftover.unlink()
    for journal in sorted(root.glob("*.json")):
        entry = json.loads(journal.read_text())
        part = data_dir / entry["partition"]
        if (part / entry["output"]).exists():
            retire.retire(data_dir, [part / name for name in entry["inputs"]])
            log.warning("finished interrupted compaction of %s", part)
        else:
            log.warning("rolled back interrupted compaction of %s", part)
        journal.unlink()
        lake.fsync_dir(root)
        resolved += 1
    return resolved


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _file_list(paths: Sequence[Path | str]) -> str:
    return "[" + ", ".join(_quote(str(p)) for p in paths) + "]"


# One merge step reads at most this many fresh segments / input bytes, whatever the partition's size:
# DuckDB holds a step's rows (about 10x their Parquet size) to deduplicate and sort them, so a day
# with millions of fresh spans is folded in several bounded steps rather than one unbounded one.
STEP_MAX_SEGMENTS = 64
STEP_MAX_BYTES = 16 * 1024 * 1024


def _steps(inputs: list[Path]) -> list[list[Path]]:
    """Consecutive runs of `inputs` (oldest first), each within the step bounds (at least one segment)."""
    steps: list[list[Path]] = []
    size = 0
    for path in inputs:
        nbytes = path.stat().st_size
        if not steps or len(steps[-1]) >= STEP_MAX_SEGMENTS or size + nbytes > STEP_MAX_BYTES:
            steps.append([])
            size = 0
        steps[-1].append(path)
        size += nbytes
    return steps


@dataclass(frozen=True)
class _Table:
    key: str  # what identifies a row: its copies (exporter retries) share it
    order: str  # the time column compacted segments are sorted by; a copy has its original's value
    derived: str = ""  # columns computed once here for every reader (", <expr> AS <name>")


# Log records' `time` is the received time when a record carries neither time nor observed time, so
# such a record's late copy can escape the pruned duplicate check; the `logs` view deduplicates every
# record by record_id anyway, compacted or not.
_TABLES = {"spans": _Table("trace_id, span_id", "start_time", f", {call_input.STORED}"),
           "logs": _Table("record_id", "time")}


def compact_partition(data_dir: Path, part: Path, min_segments: int, table: str = "spans",
                      seal_after_s: float | None = None) -> bool:
    """Fold the partition's fresh segments into compacted ones if there are at least `min_segments`, or
    (with `seal_after_s`) if the oldest has waited that long: only compacted segments are shipped."""
    retired = retire.read(data_dir)
    if retired.hides(part.relative_to(data_dir).as_posix()):
        return False  # expired by retention: deleted after the grace period
    segments = [p for p in lake.segments(part) if not retired.hides(p.relative_to(data_dir).as_posix())]
    inputs = [p for p in segments if not p.name.startswith(COMPACTED_PREFIX)]
    compacted = [p for p in segments if p.name.startswith(COMPACTED_PREFIX)]
    sealing = seal_after_s is not None and bool(inputs) and (
        time.time() * 1000 - lake.segment_written_ms(inputs[0].name) >= seal_after_s * 1000)
    if len(inputs) < max(min_segments, 1) and not sealing:
        return False
    for step in _steps(inputs):
        compacted.append(_merge(data_dir, part, step, compacted, _TABLES[table]))
    return True


def _merge(data_dir: Path, part: Path, inputs: list[Path], compacted: list[Path], table: _Table) -> Path:
    """One journaled step: `inputs` become one compacted segment without the rows `compacted` already hold."""
    import duckdb

    lake.ensure_dir(journal_dir(data_dir))
    output = lake.segment_name(COMPACTED_PREFIX)
    journal = journal_dir(data_dir) / f"{uuid.uuid4().hex}.json"
    entry = {"partition": str(part.relative_to(data_dir)), "inputs": [p.name for p in inputs], "output": output}
    lake.write_durably(journal, json.dumps(entry).encode())
    _crash_point("journal-written")

    tmp = lake.tmp_dir(data_dir) / f"{output}.tmp"
    con = duckdb.connect(config={"threads": 1, "memory_limit": "256MB"})
    try:
        fresh = f"read_parquet({_file_list(inputs)}, union_by_name=true, hive_partitioning=false)"
        already = ""
        # A copy has its original's time: only compacted row groups whose time range meets the
        # step's are read (compacted segments are sorted by it), so a step costs what it merges,
        # not the size of the day's partition.
        lo, hi = con.execute(f"SELECT min({table.order})::VARCHAR, max({table.order})::VARCHAR FROM {fresh}").fetchone()  # type: ignore[misc]  # an aggregate: one row
        if compacted and lo is not None:
            already = (
                f"ANTI JOIN (SELECT {table.key} FROM read_parquet({_file_list(compacted)}, hive_partitioning=false) "
                f"WHERE {table.order} BETWEEN TIMESTAMP_NS {_quote(lo)} AND TIMESTAMP_NS {_quote(hi)}) "
                f"USING ({table.key}) "
            )
        target = str(tmp).replace("'", "''")
        con.execute(
            f"COPY (SELECT *{table.derived} FROM {fresh} {already}"
            f"QUALIFY row_number() OVER (PARTITION BY {table.key} ORDER BY received_at) = 1 "
            f"ORDER BY {table.order}) TO {_quote(target)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)"
        )
    except BaseException:
        tmp.unlink(missing_ok=True)  # the journal is rolled back by the next recover()
        raise
    finally:
        con.close()
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    _crash_point("merged")
    os.rename(tmp, part / output)
    lake.fsync_dir(part)
    _crash_point("renamed")
    retire.retire(data_dir, inputs)
    _crash_point("inputs-retired")
    journal.unlink()
    lake.fsync_dir(journal.parent)
    log.info("compacted %d segments of %s into %s", len(inputs), part, output)
    return part / output


def compact_all(data_dir: Path, min_segments: int, seal_after_s: float | None = None) -> int:
    recover(data_dir)
    return sum(compact_partition(data_dir, d, min_segments, table, seal_after_s)
               for table in lake.TABLES for _t, _d, d in lake.partitions(data_dir, table))
