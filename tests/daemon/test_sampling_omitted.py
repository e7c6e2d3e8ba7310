"""Traces the SDK exported without content under overload (`verdict.content_omitted`, docs/tracing.md "Under
overload") are left out of the draw, counted per (stratum, window) and reason, and a window whose omitted share
exceeds OMITTED_SHARE_WARNING is named in a warning. End to end (the real SDK shedding a backlog, the real OTLP
exporter, the real collector process), and on lake rows written with the collector's own writer, carrying the
mark as the collector stores it (its own `content_omitted` column, the attribute kept in `attributes`, messages
NULL). Segments written before the column still sample: the sampler reads the column only, never `attributes`."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime, timedelta

import duckdb
import pyarrow as pa
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

import verdict.tracing as vt
from collector import lake
from collector.schema import arrow_schema
from tests.collector.conftest import Collector
from tests.daemon.conftest import NOW
from tests.daemon.lakes import span_row, write_rows
from tests.tracing.conftest import _global_provider, stop
from verdict.semconv import CONTENT_OMITTED
from verdict.tenancy import TenantId
from verdict_daemon.config import Sampling
from verdict_daemon.service.sampling import OMITTED_SHARE_WARNING, sample
from verdict_daemon.store.state import StateStore


class _HeldOtlp(SpanExporter):
    """The real OTLP/HTTP exporter to the collector, its first export held until released (a slow collector)."""

    def __init__(self, url: str) -> None:
        self.otlp = OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=30)
        self.entered, self.release = threading.Event(), threading.Event()

    def export(self, spans) -> SpanExportResult:
        self.entered.set()
        self.release.wait(10)
        return self.otlp.export(spans)

    def shutdown(self) -> None:
        self.release.set()
        self.otlp.shutdown()


def test_the_sdk_s_shed_calls_reach_the_sampler_counted_and_not_drawn(tmp_path, fake_openai):
    # As tests/tracing/test_export.py::test_a_backlog_sheds_content_not_spans_and_says_so: queue 8, batches of 2,
    # the first export held while six more calls queue up; the batch popped with four waiting is shed.
    collector = Collector(tmp_path / "lake", ("--allow-claimed-tenant",)).start()
    exporter = _HeldOtlp(collector.url)
    _global_provider()
    vt.init(service_name="busy-app", tenant_id="acme", exporter=exporter, capture_content=True, max_queue_size=8,
            max_export_batch_size=2, schedule_delay_millis=60_000)
    vt.instrument()
    try:
        client = fake_openai.client()
        for _ in range(2):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        assert exporter.entered.wait(10)
        for _ in range(6):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        exporter.release.set()
        assert vt.flush(timeout_seconds=10)
        assert vt.stats().content_omitted == {"export_backlog": 2}
    finally:
        exporter.release.set()
        stop()
        assert collector.stop() == 0
    store = StateStore(tmp_path / "s")  # the day closed: every trace with content is drawn
    report = sample(store, tmp_path / "lake", TenantId("acme"), Sampling(lookback_days=2),
                    datetime.now(UTC) + timedelta(days=1))
    assert (report.sampled, report.content_omitted) == (6, {"export_backlog": 2})
    assert [(c.traces, c.share) for c in report.incomplete()] == [(8, 0.25)]
    con = duckdb.connect()  # the collector wrote the mark into its own column
    marks = con.execute("SELECT content_omitted, count(*) FROM read_parquet(?) GROUP BY ALL ORDER BY ALL",
                        [str(tmp_path / "lake" / "spans" / "**" / "*.parquet")]).fetchall()
    assert marks == [("export_backlog", 2), (None, 6)]


def _omitted(trace_id: str, start, reason: str, span_id: str | None = None) -> dict:
    row = span_row(trace_id, start, intent="billing.v1", query="", answer="", span_id=span_id)
    row.update(input_messages=None, output_messages=None, attributes=json.dumps({CONTENT_OMITTED: reason}),
               content_omitted=reason)
    return row


def _picked(store: StateStore) -> set[str]:
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        return {t for (t,) in con.execute("SELECT trace_id FROM sampled_traces").fetchall()}
    finally:
        con.close()


def test_calls_without_content_are_counted_not_drawn_and_a_spike_window_is_named(tmp_path, caplog):
    data = tmp_path / "data"
    quiet, spike = NOW - timedelta(days=2, hours=12), NOW - timedelta(days=1, hours=12)  # two closed daily windows
    kept = [span_row(f"a{i:031x}", quiet + timedelta(minutes=i), intent="billing.v1", query=f"q{i}", answer="a.")
            for i in range(20)]
    kept += [span_row(f"b{i:031x}", spike + timedelta(minutes=i), intent="billing.v1", query=f"q{i}", answer="a.")
             for i in range(10)]
    shed = [_omitted(f"c{i:031x}", spike + timedelta(minutes=i), "export_backlog") for i in range(30)]
    shed.append(_omitted(f"d{0:031x}", quiet + timedelta(minutes=30), "content_error"))  # 1 of 21: under the bar
    # A trace whose earlier call lost its content but whose graded (last) call kept it is still drawn.
    early = _omitted(f"e{0:031x}", quiet + timedelta(minutes=40), "export_backlog", span_id="e" * 16)
    late = span_row(f"e{0:031x}", quiet + timedelta(minutes=41), intent="billing.v1", query="q", answer="a.",
                    span_id="f" * 16)
    write_rows(data, "acme", kept + shed + [early, late])
    store = StateStore(tmp_path / "s")

    with caplog.at_level(logging.INFO, logger="verdict.daemon"):
        report = sample(store, data, TenantId("acme"), Sampling(per_cluster_per_window=100, lookback_days=3), NOW)

    picked = _picked(store)
    assert picked == {r["trace_id"] for r in kept} | {late["trace_id"]}  # every trace with content, none without
    assert report.content_omitted == {"export_backlog": 30, "content_error": 1}
    assert [(c.window_start.date(), c.traces, c.omitted) for c in report.omitted_cells] == [
        (quiet.date(), 22, (("content_error", 1),)), (spike.date(), 40, (("export_backlog", 30),))]
    assert 1 / 22 < OMITTED_SHARE_WARNING < 30 / 40
    assert [c.window_start.date() for c in report.incomplete()] == [spike.date()]
    (warning,) = report.warnings()
    assert "1 window(s) incomplete" in warning and "billing.v1" in warning and "75% of 40" in warning, warning
    assert warning in caplog.text and "content_omitted={'content_error': 1, 'export_backlog': 30}" in caplog.text


def test_a_window_whose_every_trace_lost_its_content_draws_nothing_and_says_so(tmp_path):
    data = tmp_path / "data"
    start = NOW - timedelta(days=1, hours=12)
    write_rows(data, "acme", [_omitted(f"c{i:031x}", start + timedelta(minutes=i), "export_backlog")
                              for i in range(5)])
    report = sample(StateStore(tmp_path / "s"), data, TenantId("acme"), Sampling(lookback_days=3), NOW)
    assert (report.sampled, report.content_omitted) == (0, {"export_backlog": 5})
    assert [c.share for c in report.incomplete()] == [1.0]


def test_segments_written_before_the_column_still_sample_and_their_marks_are_not_read(tmp_path):
    # A segment of the layout before `content_omitted` (the collector then kept the mark in `attributes` only),
    # and a current one in the same date partition. The old segment reads with the column NULL: its traces are
    # drawn, the shed one included (judged no_content downstream, as before the column): the sampler does not
    # parse `attributes` for the mark, whose reading ran it out of its memory limit at volume.
    data = tmp_path / "data"
    start = NOW - timedelta(days=1, hours=12)
    old = [span_row(f"a{i:031x}", start + timedelta(minutes=i), intent="billing.v1", query=f"q{i}", answer="a.")
           for i in range(4)]
    shed_before = _omitted(f"b{0:031x}", start + timedelta(minutes=5), "export_backlog")
    del shed_before["content_omitted"]
    layout = pa.schema([f for f in arrow_schema() if f.name != "content_omitted"])
    lake.prepare(data)
    old_path = lake.write_segment(data, "acme", start.date().isoformat(),
                                  pa.Table.from_pylist([*old, shed_before], schema=layout))
    columns = {name for (name,) in duckdb.execute("SELECT name FROM parquet_schema(?)", [str(old_path)]).fetchall()}
    assert "attributes" in columns and "content_omitted" not in columns
    new = [span_row(f"c{0:031x}", start + timedelta(minutes=6), intent="billing.v1", query="q", answer="a."),
           _omitted(f"d{0:031x}", start + timedelta(minutes=7), "export_backlog")]
    write_rows(data, "acme", new)
    store = StateStore(tmp_path / "s")

    report = sample(store, data, TenantId("acme"), Sampling(lookback_days=3), NOW)

    assert _picked(store) == {r["trace_id"] for r in (*old, shed_before, new[0])}
    assert report.content_omitted == {"export_backlog": 1}
    assert [(c.traces, c.share) for c in report.omitted_cells] == [(7, 1 / 7)]
