"""A read slower than the delete grace meets a segment purged after it listed the lake (collector.lake_reads): it is
read again from a fresh listing, each span once; a genuinely unreadable lake still fails at once.

Deterministic: the reader's snapshot is taken first (a LakeUnion keeps its listing), then the real compaction retires
what it replaced and a purge with no grace deletes it, then the read runs on that snapshot; or a `prepare` hook,
which runs after the views named their files and before the query, purges.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from collector import compaction, lake, retire
from collector.lake_reads import ATTEMPTS
from collector.lake_union import LakeUnion
from collector.loadgen import export_request
from collector.sql import SqlCommandError, execute, query_result
from tests.collector import test_objectstore
from tests.collector.conftest import land_request
from verdict.tenancy import LOCAL_TENANT, TenantId

TENANT = TenantId(LOCAL_TENANT)
COUNT = "SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans"
s3 = test_objectstore.s3  # the S3-compatible server on loopback (one per module)


def fresh_lake(data_dir: Path, requests: int = 4) -> set[tuple]:
    """`requests` requests of 10 spans, each landed twice (an exporter retry): fresh segments only."""
    lake.prepare(data_dir)
    ids: set[tuple] = set()
    for n in range(requests):
        request = export_request(random.Random(n), 10, time.time_ns())
        for _ in range(2):
            ids |= land_request(data_dir, request)
    return ids


def stale_snapshot(data_dir: Path) -> LakeUnion:
    """A snapshot listed before compaction replaced its segments and a purge deleted them."""
    snapshot = LakeUnion.of(data_dir)
    for table in lake.TABLES:
        snapshot.files(table, TENANT, "*", None)  # the listing a reader takes first, kept by the snapshot
    compaction.compact_all(data_dir, 1)
    assert retire.purge(data_dir, grace_s=0) > 0  # the listed fresh segments are gone
    return snapshot


def purge_each_time(data_dir: Path):
    """A `prepare` hook deleting one listed segment each time it runs (after the views listed the files), as a
    purge does when a read outlasts the grace; how many times it ran."""
    calls: list[Path] = []

    def prepare(_con) -> None:
        victim = sorted(data_dir.rglob(f"*{lake.SEGMENT_SUFFIX}"))[0]
        victim.unlink()
        calls.append(victim)

    return prepare, calls


def test_sql_over_a_snapshot_whose_segments_were_purged_reads_each_span_once(tmp_path):
    ids = fresh_lake(tmp_path)
    _columns, rows = execute(stale_snapshot(tmp_path), LOCAL_TENANT, COUNT)
    assert rows == [(len(ids), len(ids))]


def test_streamed_sql_over_a_purged_snapshot_reads_each_span_once(tmp_path):
    ids = fresh_lake(tmp_path)
    with query_result(stale_snapshot(tmp_path), LOCAL_TENANT, "SELECT trace_id, span_id FROM spans") as result:
        got = [tuple(row) for rows in result.batches for row in rows]
    assert sorted(got) == sorted(ids)


def test_a_read_that_meets_a_purge_every_time_stops_with_a_precise_error(tmp_path):
    fresh_lake(tmp_path)
    prepare, calls = purge_each_time(tmp_path)
    with pytest.raises(SqlCommandError) as failed:
        execute(tmp_path, LOCAL_TENANT, COUNT, prepare=prepare)
    assert failed.value.code == "query_error"
    assert "segments it listed were deleted before it read them" in failed.value.message
    assert "--delete-grace-s" in failed.value.message
    assert len(calls) == ATTEMPTS


def test_a_purge_met_once_is_read_again_each_span_once(tmp_path):
    ids = fresh_lake(tmp_path)
    purged: list[int] = []

    def compact_and_purge_once(_con) -> None:  # the views have named the fresh segments
        if not purged:
            compaction.compact_all(tmp_path, 1)
            purged.append(retire.purge(tmp_path, grace_s=0))

    _columns, rows = execute(tmp_path, LOCAL_TENANT, COUNT, prepare=compact_and_purge_once)
    assert rows == [(len(ids), len(ids))]
    assert purged[0] > 0


def test_a_corrupt_segment_fails_at_once_without_a_retry(tmp_path, monkeypatch):
    fresh_lake(tmp_path, requests=1)
    bad = next((tmp_path / "spans").rglob(f"*{lake.SEGMENT_SUFFIX}"))
    bad.write_bytes(b"not parquet")
    fresh: list[LakeUnion] = []
    original = LakeUnion.fresh

    def counted(self: LakeUnion) -> LakeUnion:
        fresh.append(self)
        return original(self)

    monkeypatch.setattr(LakeUnion, "fresh", counted)
    with pytest.raises(SqlCommandError) as failed:
        execute(tmp_path, LOCAL_TENANT, COUNT)
    assert failed.value.code == "query_error" and "too small to be a Parquet file" in failed.value.message
    assert fresh == []


@pytest.mark.objectstore
def test_sql_over_a_bucket_snapshot_whose_objects_the_lake_compactor_deleted_reads_each_span_once(s3, tmp_path):
    """The object-store path: shipped objects listed by a reader, then merged by the lake compactor and deleted
    after its grace (0 here) before the reader opens them."""
    from collector.lake_compactor import LakeCompactor
    from collector.lake_source import LakeSource
    from collector.objectstore import ObjectLake
    from collector.shipping import Shipper
    from collector.stats import Stats

    remote = ObjectLake(f"s3://{s3.new_bucket()}/lake")
    ids: set[tuple] = set()
    for writer in ("a", "b"):  # two collectors shipping to one lake: the compactor merges their objects
        data_dir = tmp_path / writer
        ids |= fresh_lake(data_dir, requests=2)
        compaction.compact_all(data_dir, 1)
        assert Shipper(data_dir, remote, 0.0, Stats()).ship_once() > 0
    snapshot = LakeUnion.of(LakeSource(None, remote))
    listed = snapshot.files("spans", TENANT, "*", None)
    compactor = LakeCompactor(tmp_path / "compactor", remote, 1.0, 0.0, 0, Stats())
    for _ in range(2):  # merge, then delete the absorbed inputs (no grace)
        compactor.run_once()
    assert not set(listed) & {remote.object_url(r) for r in remote.list("spans/")}  # every listed object is gone
    _columns, rows = execute(snapshot, LOCAL_TENANT, COUNT)
    assert rows == [(len(ids), len(ids))]


def test_the_call_audit_over_a_purged_snapshot_reads_as_a_fresh_read(tmp_path):
    from collector.call_audit import audit_recent

    fresh_lake(tmp_path)
    got = audit_recent(tmp_path, stale_snapshot(tmp_path))
    assert TENANT in got.tenants and got.tenants == audit_recent(tmp_path).tenants
