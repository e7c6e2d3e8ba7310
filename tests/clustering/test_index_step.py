"""The daemon's index step (`analysis_index.index_traces`) reads only the date partitions from the
earliest wanted trace on, yet indexes exactly what a full `normalize` would, even with exporter-retry
copies of segments on disk and a trace that crosses midnight."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta

import duckdb
import pytest

from tests.clustering.lakes import NOW, build, rows_for
from tests.daemon.lakes import span_row, write_rows
from verdict.tenancy import TenantId
from verdict_daemon.clustering.analysis_index import index_traces, normalize
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.store.state import StateStore

MIDNIGHT = NOW - timedelta(days=1)  # the start of the last day


def _lake(path):
    data = build(path, tenants=("acme",))
    # a trace whose first call starts before midnight and whose graded call starts after it
    trace = "f" * 32
    write_rows(data, "acme", [
        span_row(trace, MIDNIGHT - timedelta(seconds=30), intent="billing.v1", query="first call", answer="a",
                 span_id="1" * 16),
        span_row(trace, MIDNIGHT + timedelta(seconds=30), intent="billing.v1", query="second call", answer="b",
                 span_id="2" * 16)])
    return data


def _index(data) -> list[tuple]:
    con = duckdb.connect(str(data / "state.duckdb"), read_only=True)
    try:
        return con.execute("SELECT * EXCLUDE (indexed_at) FROM analysis_index ORDER BY trace_id").fetchall()
    finally:
        con.close()


def _wanted(since: datetime) -> list[tuple[str, datetime]]:
    """(trace_id, start) of the lake's candidate traces started at or after `since` (naive UTC)."""
    starts: dict[str, datetime] = {}
    for row in rows_for("acme"):
        if row["workload"] != "judge" and row["status_code"] != "ERROR":
            start = datetime.fromtimestamp(row["start_time"] / 1e9, UTC).replace(tzinfo=None)
            starts[row["trace_id"]] = min(start, starts.get(row["trace_id"], start))
    starts["f" * 32] = (MIDNIGHT - timedelta(seconds=30)).replace(tzinfo=None)
    return sorted((t, s) for t, s in starts.items() if s >= since)


def test_index_step_reads_only_recent_partitions_and_matches_normalize(tmp_path):
    reference = _lake(tmp_path / "reference")
    assert normalize(StateStore(reference), reference, TenantId("acme"), 50_000).complete

    data = _lake(tmp_path / "daemon")
    partitions = sorted((data / "spans" / "tenant=acme").glob("date=*"))
    for partition in partitions[-2:]:  # exporter retries: an exact copy of every segment of the last two days
        for segment in list(partition.glob("*.parquet")):
            shutil.copy(segment, partition / f"9{segment.name}")
    (partitions[0] / "0-corrupt.parquet").write_bytes(b"not parquet")  # an old partition the step must not read

    wanted = _wanted((MIDNIGHT - timedelta(hours=1)).replace(tzinfo=None))
    store = StateStore(data)
    assert index_traces(store, data, TenantId("acme"), wanted) == len(wanted)
    assert index_traces(store, data, TenantId("acme"), wanted) == 0  # rows are written once; the count says what was added
    expected = [row for row in _index(reference) if row[1] in {t for t, _ in wanted}]
    assert _index(data) == expected and len(expected) == len(wanted)
    crossing = next(row for row in expected if row[1] == "f" * 32)
    assert crossing[2] == "2" * 16 and crossing[8] == "second call"  # the graded (last) call, after midnight

    # a wanted trace from the old partition makes the step read it: the broken file is reported
    old = [min(_wanted(datetime(2000, 1, 1)), key=lambda trace: trace[1])]
    with pytest.raises(ClusterError) as caught:
        index_traces(store, data, TenantId("acme"), old)
    assert caught.value.code == "storage_error"
    assert index_traces(store, data, TenantId("acme"), []) == 0
