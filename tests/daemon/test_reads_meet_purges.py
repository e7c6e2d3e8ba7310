"""The daemon's readers of the lake (the sample step, the analysis index, imported evaluations, the signal events of
`review correlate`) over a snapshot whose segments compaction replaced and a purge deleted after it listed them:
read again from a fresh listing, with the answer a fresh read gives (collector.lake_reads)."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.collector.test_reads_meet_purges import TENANT, fresh_lake, stale_snapshot
from verdict_daemon.config import Sampling
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
