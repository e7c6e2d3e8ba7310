"""Compaction merges and dedupes crash-safely (real crashes via os._exit at each step); retention."""

from __future__ import annotations

import datetime as dt
import http.client
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collector import compaction, lake, retention, retire
from collector.lake_source import LakeSource
from collector.loadgen import export_request, span_ids
from collector.sql import execute
from tests.collector.conftest import land_request, read_spans
from verdict.tenancy import TenantId

TENANT = "__verdict_local__"


@pytest.fixture
def lake_with_duplicates(tmp_path):
    data_dir = tmp_path / "data"
    lake.prepare(data_dir)
    rng = random.Random(4)
    start = time.time_ns()
    expected: set = set()
    requests = [export_request(rng, 20, start) for _ in range(5)]
    for request in requests:
        expected |= land_request(data_dir, request)
    for request in requests[:3]:  # exporter retries: the same spans again, in new segments
        land_request(data_dir, request)
    return data_dir, expected


def _rows(data_dir: Path) -> list[tuple[str, str]]:
    import duckdb

    return duckdb.execute(
        f"SELECT trace_id, span_id FROM read_parquet('{data_dir}/spans/*/*/*.parquet')").fetchall()


def _run_maintenance(data_dir: Path, crash_at: str | None = None) -> int:
    env = {**os.environ}
    if crash_at:
        env[compaction.CRASH_ENV] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "collector", "--data-dir", str(data_dir), "--maintenance-once",
         "--compact-min-segments", "1", "--delete-grace-s", "0"], env=env, capture_output=True, text=True, timeout=120,
    ).returncode


def test_compaction_merges_and_dedupes(lake_with_duplicates):
    data_dir, expected = lake_with_duplicates
    (part,) = [d for _, _, d in lake.partitions(data_dir)]
    assert len(lake.segments(part)) == 8 and len(_rows(data_dir)) == 160
    assert _run_maintenance(data_dir) == 0
    assert len(lake.segments(part)) == 1
    rows = _rows(data_dir)
    assert len(rows) == len(set(rows)) and set(rows) == expected


@pytest.mark.parametrize(("bound", "value", "outputs"), [("STEP_MAX_SEGMENTS", 3, 3), ("STEP_MAX_BYTES", 1, 8)])
def test_large_partitions_compact_in_bounded_steps_each_span_once(lake_with_duplicates, monkeypatch, bound, value,
                                                                   outputs):
    # Memory is bounded by merging a few segments at a time; the retries' copies land in later steps
    # than their originals and must still be dropped against the earlier steps' compacted output.
    data_dir, expected = lake_with_duplicates
    monkeypatch.setattr(compaction, bound, value)
    (part,) = [d for _, _, d in lake.partitions(data_dir)]
    assert compaction.compact_partition(data_dir, part, min_segments=1)
    retire.purge(data_dir, grace_s=0)  # the inputs were retired: deleted once the grace period is over
    segments = lake.segments(part)
    assert len(segments) == outputs and all(p.name.startswith(compaction.COMPACTED_PREFIX) for p in segments)
    rows = _rows(data_dir)
    assert len(rows) == len(set(rows)) and set(rows) == expected


def test_log_segments_are_compacted_each_record_once(tmp_path, monkeypatch):
    from collector.loadgen import log_events_request

    data_dir = tmp_path / "data"
    lake.prepare(data_dir)
    rng = random.Random(8)
    requests = [log_events_request(rng, 3, time.time_ns()) for _ in range(6)]
    expected = set().union(*(land_request(data_dir, r, signal="logs") for r in requests))
    for request in requests[:4]:  # exporter retries: the same records again, in new segments
        land_request(data_dir, request, signal="logs")
    monkeypatch.setattr(compaction, "STEP_MAX_SEGMENTS", 4)  # copies meet their originals in later steps
    assert compaction.compact_all(data_dir, min_segments=2) == 1
    retire.purge(data_dir, grace_s=0)
    (part,) = [d for _, _, d in lake.partitions(data_dir, "logs")]
    assert all(p.name.startswith(compaction.COMPACTED_PREFIX) for p in lake.segments(part))
    import duckdb

    stored = duckdb.execute(f"SELECT record_id FROM read_parquet('{part}/*.parquet')").fetchall()
    assert len(stored) == len(set(stored)) and set(stored) == expected
    _, view_rows = execute(data_dir, TENANT, "SELECT record_id FROM logs")
    assert sorted(view_rows) == sorted(expected)


@pytest.mark.parametrize("step", ["journal-written", "merged", "renamed", "inputs-retired"])
def test_crash_at_any_step_loses_nothing_and_shows_no_duplicate(lake_with_duplicates, step):
    data_dir, expected = lake_with_duplicates
    assert _run_maintenance(data_dir, crash_at=step) == 137  # really crashed there
    # Readers during the crash window: the view never shows a span twice, and nothing is lost.
    columns, view_rows = execute(data_dir, TENANT, "SELECT trace_id, span_id FROM spans")
    assert len(view_rows) == len(set(view_rows)) and set(view_rows) == expected
    assert set(_rows(data_dir)) == expected
    # Restart: recovery finishes or rolls back, then compaction completes.
    assert _run_maintenance(data_dir) == 0
    rows = _rows(data_dir)
    assert len(rows) == len(set(rows)) and set(rows) == expected
    assert not list(lake.tmp_dir(data_dir).iterdir())
    assert not list(compaction.journal_dir(data_dir).iterdir())


def test_retention_drops_only_old_partitions(tmp_path):
    import pyarrow as pa

    from collector.schema import arrow_schema

    data_dir = tmp_path / "data"
    lake.prepare(data_dir)
    empty = pa.Table.from_batches([], schema=arrow_schema())
    today = dt.date(2026, 11, 30)
    for days_ago in (0, 6, 7, 8, 40):
        date = (today - dt.timedelta(days=days_ago)).isoformat()
        for tenant in ("acme", "globex"):
            lake.write_segment(data_dir, tenant, date, empty)
    removed = retention.expire(data_dir, 7, today=today)
    assert sorted(removed) == sorted(f"tenant={t}/date={d}" for t in ("acme", "globex")
                                     for d in ("2026-11-22", "2026-10-21"))
    kept = {(t, d) for t in ("acme", "globex") for d in ("2026-11-30", "2026-11-24", "2026-11-23")}
    # Hidden from readers at once; on disk until the grace period is over (a reader that listed them reads them).
    listed = {(t, f.split("/date=")[1][:10]) for t in ("acme", "globex")
              for f in LakeSource(data_dir).files("spans", TenantId(t), "*.parquet", None)}
    assert listed == kept and len(lake.partitions(data_dir)) == 10
    assert retention.expire(data_dir, 7, today=today) == []  # retired once
    assert retire.purge(data_dir, grace_s=600) == 0
    assert retire.purge(data_dir, grace_s=0) == 4
    assert {(t, d) for t, d, _ in lake.partitions(data_dir)} == kept
    assert retention.expire(data_dir, 0, today=today) == []  # 0 keeps everything


def test_late_retry_after_compaction_is_hidden_then_dropped(lake_with_duplicates):
    data_dir, expected = lake_with_duplicates
    assert _run_maintenance(data_dir) == 0
    retry = export_request(random.Random(4), 20, 0)  # regenerate the first request's ids
    ids = {(s.trace_id.hex(), s.span_id.hex()) for s in retry.resource_spans[0].scope_spans[0].spans}
    assert ids <= expected
    (part,) = [d for _, _, d in lake.partitions(data_dir)]
    # The retry lands as a fresh segment next to the compacted one (same partition, same ids).
    import pyarrow as pa
    import pyarrow.parquet as pq

    compacted = pq.read_table(lake.segments(part)[0])
    again = compacted.filter(pa.compute.is_in(compacted["span_id"], pa.array([s for _, s in ids])))
    lake.write_segment(data_dir, TENANT, part.name[len("date="):], again)
    assert len(_rows(data_dir)) == len(expected) + len(ids)
    _, view_rows = execute(data_dir, TENANT, "SELECT trace_id, span_id FROM spans")
    assert sorted(view_rows) == sorted(expected)
    assert _run_maintenance(data_dir) == 0  # folds the fresh segment in, dropping the copies
    rows = _rows(data_dir)
    assert len(rows) == len(set(rows)) and set(rows) == expected
    assert all(p.name.startswith(compaction.COMPACTED_PREFIX) for p in lake.segments(part))


def test_many_new_segments_trigger_compaction_before_the_interval(collector_factory):
    # Lone requests are each written as their own segment; the hour-long interval never comes.
    collector = collector_factory("--compact-interval-s", "3600", "--compact-after-segments", "4",
                                  "--compact-min-segments", "2")
    rng = random.Random(12)
    sent: set[str] = set()
    for _ in range(4):
        request = export_request(rng, 10, time.time_ns())
        conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
        conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                     headers={"Content-Type": "application/x-protobuf"})
        assert conn.getresponse().status == 200
        sent |= set(span_ids(request))
    deadline = time.monotonic() + 30
    while (stats := collector.stats())["compactions"] < 1:
        assert time.monotonic() < deadline, f"no compaction after {stats['segments_written']} segments: {stats}"
        time.sleep(0.1)
    listed = LakeSource(collector.data_dir).files("spans", TenantId(TENANT), "*.parquet", None)
    assert [f.rsplit("/", 1)[1][:2] for f in listed] == ["c-"]  # readers see the four segments as one
    assert {r["span_id"] for r in read_spans(collector.data_dir)} == sent
