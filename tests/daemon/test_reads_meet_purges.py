"""The daemon's readers of the lake (the sample step, the analysis index, imported evaluations, the signal events of
`review correlate`) over a snapshot whose segments compaction replaced and a purge deleted after it listed them:
read again from a fresh listing, with the answer a fresh read gives (collector.lake_reads)."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from collector.lake_union import LakeUnion
from collector.loadgen import export_request
from collector.sql import execute
from tests.collector.conftest import land_request
from tests.collector.test_reads_meet_purges import TENANT, fresh_lake, stale_snapshot
from verdict.tenancy import LOCAL_TENANT
from verdict_daemon.clustering.analysis_index import index_traces, normalize, pending
from verdict_daemon.config import Drift, ImportedEvaluation, Sampling
from verdict_daemon.review.correlation import lake_signals
from verdict_daemon.service.imported_evaluations import ImportedSeries, imported_table
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.samples import picks_since
from verdict_daemon.store.state import StateStore


def test_the_sample_step_over_a_purged_snapshot_samples_as_a_fresh_read(tmp_path):
    data_dir = tmp_path / "data"
    fresh_lake(data_dir)
    now, config = datetime.now(UTC), Sampling(per_cluster_per_window=1000)
    stale, fresh = StateStore(tmp_path / "stale"), StateStore(tmp_path / "fresh")
    got = sample(stale, stale_snapshot(data_dir), TENANT, config, now)
    expected = sample(fresh, data_dir, TENANT, config, now)
    assert got.eligible > 0
    assert got == expected
    start = datetime(2000, 1, 1)
    assert picks_since(stale, TENANT, start).sort_by("trace_id") == picks_since(fresh, TENANT, start).sort_by("trace_id")


def test_the_analysis_index_over_a_purged_snapshot_reads_as_a_fresh_read(tmp_path):
    data_dir = tmp_path / "data"
    fresh_lake(data_dir)
    stale, fresh = StateStore(tmp_path / "stale"), StateStore(tmp_path / "fresh")
    cutoff = datetime.now(UTC).replace(tzinfo=None) + timedelta(days=1)
    assert pending(stale, stale_snapshot(data_dir), TENANT, cutoff) == pending(fresh, data_dir, TENANT, cutoff) > 0
    got = normalize(stale, stale_snapshot_again(data_dir), TENANT, 1000)
    assert got == normalize(fresh, data_dir, TENANT, 1000) and got.indexed > 0


def test_indexing_sampled_traces_over_a_purged_snapshot_reads_as_a_fresh_read(tmp_path):
    data_dir = tmp_path / "data"
    fresh_lake(data_dir)
    _columns, traces = execute(data_dir, LOCAL_TENANT, "SELECT trace_id, min(start_time) FROM llm_calls GROUP BY 1")
    stale, fresh = StateStore(tmp_path / "stale"), StateStore(tmp_path / "fresh")
    got = index_traces(stale, stale_snapshot(data_dir), TENANT, traces)
    assert got == index_traces(fresh, data_dir, TENANT, traces) == len(traces) > 0


def test_imported_evaluations_over_a_purged_snapshot_read_as_a_fresh_read(tmp_path):
    data_dir = tmp_path / "data"
    fresh_lake(data_dir)
    series = ImportedSeries(ImportedEvaluation(name="imported", evaluator="x", evaluations=("relevance",)))
    now = datetime.now(UTC)
    got = imported_table(stale_snapshot(data_dir), TENANT, series, Drift(), now)
    assert got.equals(imported_table(LakeUnion.of(data_dir), TENANT, series, Drift(), now))


def test_signal_events_over_a_purged_snapshot_read_as_a_fresh_read(tmp_path):
    data_dir = tmp_path / "data"
    fresh_lake(data_dir)
    assert lake_signals(stale_snapshot(data_dir), TENANT) == lake_signals(data_dir, TENANT)


def stale_snapshot_again(data_dir: Path) -> LakeUnion:
    """stale_snapshot once more: a new segment landed, listed, then compacted and purged."""
    land_request(data_dir, export_request(random.Random(7), 10, time.time_ns()))
    return stale_snapshot(data_dir)
