"""Which requests a group-commit batch waits for: the real SegmentWriter over a real lake directory.

Decoding is represented by holding `SegmentWriter.arriving()` open (what IngestService.export
does around decode + submit), so the order of events is exact instead of timed.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import TimeoutError as FutureTimeout

import pytest

from collector import lake
from collector.columns import encode_rows, record_batch
from collector.flatten import IngestPolicy, flatten
from collector.loadgen import export_request
from collector.redaction import ServerRedaction
from collector.stats import Stats
from collector.writer import SegmentWriter, WriterLimits

TENANT = "__verdict_local__"
DELAY_S = 120.0  # far beyond every wait below: a batch that waits for the delay shows as a timeout


def _batches(seed: int) -> tuple[list, int]:
    policy = IngestPolicy(TENANT, False, False, 10_000, ServerRedaction.create("off"))
    result = flatten(export_request(random.Random(seed), 5, time.time_ns()), policy)
    return [("spans", p.tenant, p.date, record_batch(encode_rows(p.rows))) for p in result.partitions.values()], result.accepted


@pytest.fixture
def writer(tmp_path):
    lake.prepare(tmp_path)
    stats = Stats()
    w = SegmentWriter(tmp_path, WriterLimits(DELAY_S, 50_000, 1 << 30, 0), stats)
    w.start()
    yield w, stats
    w.close(timeout=10)


def test_batch_waits_for_a_request_that_was_already_decoding(writer):
    w, stats = writer
    with w.arriving():  # request A: still decoding when B is queued
        with w.arriving():
            durable_b = w.submit(*_batches(1))
        with pytest.raises(FutureTimeout):
            durable_b.result(timeout=1.0)  # B holds for A (the delay is two minutes away)
        durable_a = w.submit(*_batches(2))
    durable_a.result(timeout=30)
    durable_b.result(timeout=30)
    assert stats.snapshot()["segments_written"] == 1  # one write for both


def test_batch_does_not_wait_for_a_request_that_started_later(writer):
    w, stats = writer
    with w.arriving():
        durable_b = w.submit(*_batches(3))
    with w.arriving():  # request C starts decoding only after B was queued
        durable_b.result(timeout=30)  # B is written without waiting for C (or for the delay)
        durable_c = w.submit(*_batches(4))
    durable_c.result(timeout=30)
    assert stats.snapshot()["segments_written"] == 2
