"""The span lake on object storage (issue 19, items 1 and 3), against a real S3-compatible server on loopback
(moto's standalone server): verified uploads, the real collector shipping what the real OTLP exporter sent,
kill -9 while shipping, `verdict sql --lake-url` reading each segment once, tenant isolation on `s3://`."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

from collector.loadgen import export_request, span_ids
from tests.collector.conftest import land_request
from tests.collector.s3_server import start_s3_server
from tests.collector.test_sql import verdict

pytestmark = pytest.mark.objectstore


@pytest.fixture(scope="module")
def s3():
    server = start_s3_server()
    with pytest.MonkeyPatch.context() as mp:
        for name, value in server.env.items():  # for this process and the `verdict sql` it starts
            mp.setenv(name, value)
        yield server
    server.stop()


def _objects(lake_url: str) -> dict[str, bytes]:
    import obstore

    from collector.objectstore import ObjectLake

    remote = ObjectLake(lake_url)
    return {relative: bytes(obstore.get(remote._store, remote.key(relative)).bytes())
            for relative in remote.list("")}


def _segments(lake_url: str) -> dict[str, bytes]:
    """The lake's Parquet objects (not the manifest)."""
    return {name: body for name, body in _objects(lake_url).items() if name.endswith(".parquet")}


def _sql(*args: str) -> list[dict]:
    out = verdict("sql", *args, "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_upload_is_verified_single_put_and_multipart(s3, tmp_path, monkeypatch):
    from collector import objectstore

    lake_url = f"s3://{s3.new_bucket()}/lake"
    remote = objectstore.ObjectLake(lake_url)
    small, large = tmp_path / "small.bin", tmp_path / "large.bin"
    small.write_bytes(os.urandom(300_000))
    large.write_bytes(os.urandom(12 * 1024 * 1024))
    monkeypatch.setattr(objectstore, "SINGLE_PUT_MAX_BYTES", 8 * 1024 * 1024)  # large goes in 3 parts of 5 MiB
    monkeypatch.setattr(objectstore, "PART_BYTES", 5 * 1024 * 1024)
    up_small = remote.upload(small, "spans/tenant=a/date=2026-01-01/c-1-x.parquet")
    up_large = remote.upload(large, "logs/tenant=a/date=2026-01-01/2-y.parquet")
    assert up_small.size == 300_000 and "-" not in up_small.etag
    assert up_large.etag.endswith("-3")
    stored = _objects(lake_url)
    assert stored == {"spans/tenant=a/date=2026-01-01/c-1-x.parquet": small.read_bytes(),
                      "logs/tenant=a/date=2026-01-01/2-y.parquet": large.read_bytes()}


def test_read_filesystem_refuses_writes(s3):
    from collector.objectstore import ObjectLake

    bucket = s3.new_bucket()
    fs = ObjectLake(f"s3://{bucket}/lake").read_filesystem()
    for write in (lambda: fs.pipe(f"{bucket}/lake/x", b"1"), lambda: fs.open(f"{bucket}/lake/x", "wb"),
                  lambda: fs.rm(f"{bucket}/lake/x")):
        with pytest.raises(PermissionError):
            write()
    assert _objects(f"s3://{bucket}") == {}


def test_read_filesystem_answers_from_the_listing(s3, tmp_path):
    """DuckDB globs each file name and asks its size and modified time on every open: for listed objects the
    filesystem answers from the listing, with no request (the object is gone from the bucket here, and the
    answers are still the listing's)."""
    import obstore

    from collector.objectstore import ObjectLake

    remote = ObjectLake(f"s3://{s3.new_bucket()}/lake")
    body = tmp_path / "seg.parquet"
    body.write_bytes(os.urandom(1000))
    relative = "spans/tenant=a/date=2026-01-01/seg.parquet"
    remote.upload(body, relative)
    listing = remote.listing("spans/")
    url = remote.object_url(relative)
    fs = remote.read_filesystem({url: listing[relative]})
    obstore.delete(remote._store, remote.key(relative))
    assert (fs.size(url), fs.modified(url), fs.glob(url)) == (1000, listing[relative].modified, [url])
    with pytest.raises(FileNotFoundError):
        fs.size(url + ".other")


def test_cached_reads_fetch_each_block_once_and_a_read_in_one_get():
    """Projection pushdown survives the cache (a read fetches its own blocks, not the object), a read over
    several blocks is one ranged GET, and threads reading the same blocks at once share one fetch."""
    import threading

    from collector.objectstore import BLOCK_BYTES, _BlockCache, _CachedObjectFile

    body = os.urandom(10 * BLOCK_BYTES + 123)
    gets: list[tuple[int, int]] = []
    gate = threading.Event()

    def fetch_range(start: int, end: int) -> bytes:
        gets.append((start, end))
        gate.wait(5)  # every reader is waiting on the same blocks before the first GET answers
        return body[start:end]

    f = _CachedObjectFile("b/seg.parquet", len(body), _BlockCache(1 << 30), fetch_range)
    start, size = 3 * BLOCK_BYTES + 10, 2 * BLOCK_BYTES  # three blocks: 3, 4, 5
    out: list[bytes] = []

    def read() -> None:
        buffer = bytearray(size)
        f.seek(start)
        f.readinto(buffer)
        out.append(bytes(buffer))

    readers = [threading.Thread(target=read) for _ in range(4)]
    for t in readers:
        t.start()
    time.sleep(0.3)
    gate.set()
    for t in readers:
        t.join()
    assert out == [body[start:start + size]] * 4
    assert gets == [(3 * BLOCK_BYTES, 6 * BLOCK_BYTES)]
    f.seek(len(body) - 50)
    assert f.read(100) == body[-50:] and gets[-1] == (10 * BLOCK_BYTES, len(body))


def _provider_spans(n: int, batch_seed: int):
    """`n` finished SDK spans (GenAI chat spans with an intent), ready for the real OTLP exporter."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": f"shipper-{batch_seed}"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("verdict.tracing", "0.1.0")
    for i in range(n):
        with tracer.start_as_current_span("chat gpt-4o-mini", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                "verdict.intent_key": f"intent.{i % 3}", "gen_ai.usage.input_tokens": i}):
            pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def _export(port: int, spans, per_request: int = 25) -> set[str]:
    """Send with the real OTLP/HTTP exporter; returns the span ids the collector acknowledged."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=5)
    acked = set()
    for start in range(0, len(spans), per_request):
        batch = spans[start:start + per_request]
        if exporter.export(batch) == SpanExportResult.SUCCESS:
            acked |= {format(s.context.span_id, "016x") for s in batch}
    exporter.shutdown()
    return acked


def _wait(predicate, timeout: float = 60.0, what="") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.1)


# One collector here: the lake compactor (tests/collector/test_many_writers.py) stays off, so the bucket holds what
# this collector shipped, each span once.
SHIP_FLAGS = ("--ship-seal-after-s", "0.3", "--lake-compact-interval-s", "0", "--delete-grace-s", "0")


def _shipped_all(collector) -> bool:
    stats = collector.stats()
    return stats["outbox_segments"] == 0 and stats["segments_shipped"] > 0


def test_collector_ships_what_it_acknowledged_and_sql_reads_it_once(s3, collector_factory, tmp_path):
    lake_url = f"s3://{s3.new_bucket()}/lake"
    collector = collector_factory("--lake-url", lake_url, *SHIP_FLAGS, env=s3.env)
    acked = _export(collector.http_port, _provider_spans(120, 1))
    assert len(acked) == 120
    _wait(lambda: _shipped_all(collector), what="the outbox to empty")
    stats = collector.stats()
    assert stats["outbox_oldest_age_s"] is None and stats["ship_errors"] == 0
    assert collector.stop() == 0

    local = sorted(p.relative_to(collector.data_dir).as_posix()
                   for p in (collector.data_dir / "spans").rglob("*.parquet"))
    stored = _segments(lake_url)
    assert local and set(local) <= set(stored)  # shipped, kept locally for --ship-delete-after-s
    assert all(name.split("/")[-1].startswith("c-") for name in stored)  # only compacted segments travel
    query = "SELECT span_id, count(*) AS n FROM spans GROUP BY span_id"
    both = _sql(query, "--data-dir", str(collector.data_dir), "--lake-url", lake_url)
    remote_only = _sql(query, "--data-dir", str(tmp_path / "absent"), "--lake-url", lake_url)
    for rows in (both, remote_only):
        assert {r["span_id"] for r in rows} == acked and {r["n"] for r in rows} == {1}
    calls = _sql("SELECT intent_key, count(*) AS n FROM llm_calls GROUP BY 1 ORDER BY 1", "--lake-url", lake_url,
                 "--data-dir", str(tmp_path / "absent"))
    assert calls == [{"intent_key": f"intent.{k}", "n": 40} for k in range(3)]


def test_kill9_while_shipping_loses_nothing_and_duplicates_nothing(s3, collector_factory, tmp_path):
    """Crash after the PUT (before the record), after the record, after the local delete (before the record
    is removed), and kill -9 at random moments; then every acknowledged span is in the bucket once."""
    lake_url = f"s3://{s3.new_bucket()}/lake"
    data_dir = tmp_path / "data"
    flags = ("--lake-url", lake_url, *SHIP_FLAGS, "--ship-delete-after-s", "0")
    rng = random.Random(19)
    acked: set[str] = set()
    sent: set[str] = set()
    plan = ["ship-uploaded", "ship-recorded", "ship-deleted", None, None, None]
    for round_, crash_at in enumerate(plan):
        env = {**s3.env, **({"VERDICT_COLLECTOR_TEST_CRASH_AT": crash_at} if crash_at else {})}
        collector = collector_factory(*flags, data_dir=data_dir, env=env)
        spans = _provider_spans(60, round_)
        sent |= {format(s.context.span_id, "016x") for s in spans}
        acked |= _export(collector.http_port, spans)
        if crash_at:
            assert collector.proc.wait(180) == 137, "".join(collector.log)  # the crash point was reached
        else:
            time.sleep(rng.uniform(0.0, 1.0))  # sealing + shipping run every few hundred ms
            collector.kill9()
    final = collector_factory(*flags, data_dir=data_dir, env=s3.env)
    # (the last killed round may have shipped everything already: then this run has nothing to do)
    _wait(lambda: final.stats()["outbox_segments"] == 0 and not list((data_dir / "spans").rglob("*.parquet"))
          and not list((data_dir / "outbox").rglob("*.json")), timeout=180,
          what=lambda: f"everything shipped and deleted locally: {sorted(p.name for p in data_dir.rglob('*.*'))}, "
                       f"{final.stats()}, {''.join(final.log[-20:])}")
    assert final.stop() == 0

    # Rounds that crash at a step may refuse their last requests (the process is gone); the others ack all.
    assert len(acked) >= 60 * 3, len(acked)
    stored = _segments(lake_url)
    import io

    import pyarrow.parquet as pq

    stored_ids = []
    for name, body in stored.items():  # whole objects only: every one is a complete Parquet file
        table = pq.read_table(io.BytesIO(body), columns=["span_id"])
        assert table.num_rows > 0, name
        stored_ids += table.column("span_id").to_pylist()
    assert len(stored_ids) == len(set(stored_ids))  # each span is stored once: no read-time deduplication needed
    assert acked <= set(stored_ids) <= sent
    rows = _sql("SELECT span_id, count(*) AS n FROM spans GROUP BY span_id", "--lake-url", lake_url,
                "--data-dir", str(tmp_path / "absent"))
    assert {r["span_id"] for r in rows} == set(stored_ids) and {r["n"] for r in rows} == {1}


@pytest.fixture(scope="module")
def two_tenants_on_s3(s3, tmp_path_factory):
    """test_sql's two tenants (each span sent twice), compacted, shipped and deleted locally."""
    from collector import compaction, lake, retire
    from collector.objectstore import ObjectLake
    from collector.shipping import Shipper
    from collector.stats import Stats

    data_dir = tmp_path_factory.mktemp("s3sql") / "data"
    lake.prepare(data_dir)
    requests = {"acme": export_request(random.Random(1), 30, time.time_ns()),
                "globex": export_request(random.Random(2), 12, time.time_ns())}
    for tenant, request in requests.items():
        for _ in range(2):
            land_request(data_dir, request, tenant)
    compaction.compact_all(data_dir, 1)
    lake_url = f"s3://{s3.new_bucket()}/lake"
    shipper = Shipper(data_dir, ObjectLake(lake_url), 0.0, Stats())
    assert shipper.ship_once() == 2
    retire.purge(data_dir, grace_s=0)  # replaced and shipped segments were retired: deleted after the grace
    assert not list((data_dir / "spans").rglob("*.parquet"))
    return lake_url, tmp_path_factory.mktemp("none") / "absent", {t: set(span_ids(r)) for t, r in requests.items()}


@pytest.fixture(scope="module")
def two_tenants_in_a_union(s3, tmp_path_factory):
    """The same two tenants split over two lakes: zone A, a local dir, and zone B, compacted and shipped to a
    bucket. Each tenant has one request in A only, one in B only, and one in both (an exporter retry routed to
    the other collector). Returns (`verdict sql` lake options, zone A, lake URL, span ids per tenant)."""
    from collector import compaction, lake
    from collector.objectstore import ObjectLake
    from collector.shipping import Shipper
    from collector.stats import Stats

    root = tmp_path_factory.mktemp("s3union")
    zone_a, zone_b = root / "zone-a", root / "zone-b"
    ids: dict[str, set[str]] = {}
    for zone in (zone_a, zone_b):
        lake.prepare(zone)
    for tenant, seed in (("acme", 10), ("globex", 20)):
        only_a, only_b, both = (export_request(random.Random(seed + k), 8, time.time_ns()) for k in range(3))
        for zone, request in ((zone_a, only_a), (zone_b, only_b), (zone_a, both), (zone_b, both)):
            land_request(zone, request, tenant)
        ids[tenant] = {i for r in (only_a, only_b, both) for i in span_ids(r)}
    compaction.compact_all(zone_b, 1)
    lake_url = f"s3://{s3.new_bucket()}/lake"
    assert Shipper(zone_b, ObjectLake(lake_url), 0.0, Stats()).ship_once() == 2
    options = ("--data-dir", str(root / "state"), "--lake-dir", str(zone_a), "--lake-url", lake_url)
    return options, zone_a, lake_url, ids


@pytest.fixture(params=["s3", "union"])
def two_tenants_read(request) -> tuple[tuple[str, ...], str, str, dict[str, set[str]]]:
    """(`verdict sql` lake options, a local lake dir the query may name, lake URL, span ids per tenant): the
    shipped lake alone, or the union of a local dir and a bucket."""
    if request.param == "s3":
        lake_url, absent, ids = request.getfixturevalue("two_tenants_on_s3")
        return ("--lake-url", lake_url, "--data-dir", str(absent)), str(absent), lake_url, ids
    options, zone_a, lake_url, ids = request.getfixturevalue("two_tenants_in_a_union")
    return options, str(zone_a), lake_url, ids


def test_sql_on_s3_sees_only_its_tenant_once(two_tenants_read):
    options, _local, _lake_url, ids = two_tenants_read
    for tenant in ("acme", "globex"):
        rows = _sql("SELECT tenant_id, span_id FROM spans", *options, "--tenant", tenant)
        assert {r["tenant_id"] for r in rows} == {tenant}
        assert sorted(r["span_id"] for r in rows) == sorted(ids[tenant])
    assert _sql("SELECT count(*) AS n FROM llm_calls", *options, "--tenant", "nobody") == [{"n": 0}]


@pytest.mark.parametrize("query", [
    "SELECT * FROM read_parquet('{lake}/spans/tenant=globex/*/*.parquet')",
    "SELECT * FROM read_parquet('{lake}/spans/tenant=acme/../tenant=globex/*/*.parquet')",
    "SELECT * FROM read_parquet('{lake}/spans/*/*/*.parquet')",
    "SELECT * FROM read_parquet('{local}/spans/tenant=globex/*/*.parquet')",
    "SELECT * FROM read_parquet('{local}/spans/tenant=acme/../tenant=globex/*/*.parquet')",
    "COPY (SELECT 1) TO '{lake}/spans/tenant=acme/leak.csv'",
    "COPY (SELECT 1) TO '{local}/spans/tenant=acme/leak.csv'",  # readable, yet never writable
    "ATTACH '{local}/../other.duckdb'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SET enable_external_access = true",
])
def test_external_access_on_s3_is_refused(two_tenants_read, query):
    options, local, lake_url, _ = two_tenants_read
    before = _objects(lake_url)
    out = verdict("sql", query.format(lake=lake_url, local=local), *options, "--tenant", "acme")
    assert out.returncode in (5, 6), out.stdout
    assert json.loads(out.stderr)["error"]["code"] in ("query_error", "access_denied")
    assert "Traceback" not in out.stderr
    assert _objects(lake_url) == before
    assert not list(Path(local).parent.glob("**/leak.csv")) and not (Path(local).parent / "other.duckdb").exists()


def test_a_bad_lake_url_or_dir_is_a_closed_error(tmp_path):
    for lake in (("--lake-url", "ftp://bucket/x"), ("--lake-url", "s3://"), ("--lake-dir", str(tmp_path / "typo"))):
        out = verdict("sql", "SELECT 1", *lake, "--data-dir", str(tmp_path), "--format", "json")
        assert out.returncode == 2 and json.loads(out.stderr)["error"]["code"] == "invalid_config", out.stderr
    out = verdict("sql", "SELECT count(*) AS n FROM spans", "--lake-dir", str(tmp_path), "--data-dir",
                  str(tmp_path / "absent"), "--format", "json")  # another lake is named: no no_data_dir
    assert out.returncode == 0 and json.loads(out.stdout) == [{"n": 0}], out.stderr


def test_collector_refuses_a_bad_lake_url(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "collector", "--data-dir", str(tmp_path), "--lake-url",
                          "http://not-a-bucket"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and json.loads(out.stderr)["error"]["code"] == "invalid_config", out.stderr



def test_segments_with_many_row_groups_read_the_same_remote_and_local(s3, tmp_path, monkeypatch):
    """Row groups scanned in parallel through the block cache (small blocks here, so reads cross blocks):
    the remote answer equals the local one, repeatedly."""
    import pyarrow.parquet as pq

    from collector import lake, objectstore, sql
    from collector.lake_source import LakeSource

    monkeypatch.setattr(objectstore, "BLOCK_BYTES", 16 * 1024)
    data_dir = tmp_path / "data"
    lake.prepare(data_dir)
    land_request(data_dir, export_request(random.Random(5), 4000, time.time_ns()), "acme")
    (segment,) = data_dir.glob("spans/tenant=acme/date=*/*.parquet")
    table = pq.read_table(segment)
    segment.unlink()
    compacted = segment.with_name("c-" + segment.name)
    pq.write_table(table, compacted, row_group_size=250)  # 16 row groups
    remote = objectstore.ObjectLake(f"s3://{s3.new_bucket()}/lake")
    remote.upload(compacted, compacted.relative_to(data_dir).as_posix())
    query = ("SELECT count(*), count(DISTINCT span_id), sum(input_tokens), sum(length(attributes)), "
             "min(start_time), max(end_time) FROM spans")
    for _ in range(5):
        assert sql.execute(LakeSource(None, remote), "acme", query) == sql.execute(data_dir, "acme", query)


def test_a_compaction_interrupted_after_its_rename_is_shipped_once(s3, tmp_path):
    """The state a crash between compaction's rename and its input deletion leaves (journal, output and
    inputs on disk): the output is not shipped (nor deleted locally) until recovery has settled the journal,
    else recovery would roll back and the inputs would be compacted and shipped a second time."""
    import io
    import shutil

    import pyarrow.parquet as pq

    from collector import compaction, lake, retire
    from collector.objectstore import ObjectLake
    from collector.shipping import Shipper
    from collector.stats import Stats

    data_dir = tmp_path / "data"
    lake.prepare(data_dir)
    request = export_request(random.Random(8), 40, time.time_ns())
    for _ in range(2):
        land_request(data_dir, request, "acme")
    (part,) = [d for _t, _d, d in lake.partitions(data_dir)]
    inputs = lake.segments(part)
    shutil.copytree(part, tmp_path / "inputs")
    assert compaction.compact_all(data_dir, 1) == 1
    retire.purge(data_dir, grace_s=0)  # the inputs and their record, as if the step had not retired them yet
    (output,) = lake.segments(part)
    for seg in inputs:
        shutil.copy(tmp_path / "inputs" / seg.name, seg)
    lake.ensure_dir(compaction.journal_dir(data_dir))
    (compaction.journal_dir(data_dir) / "interrupted.json").write_text(json.dumps(
        {"partition": str(part.relative_to(data_dir)), "inputs": [s.name for s in inputs], "output": output.name}))

    lake_url = f"s3://{s3.new_bucket()}/lake"
    shipper = Shipper(data_dir, ObjectLake(lake_url), 0.0, Stats())
    shipper.ship_once()  # before recovery (e.g. compaction is still running in the other thread)
    compaction.compact_all(data_dir, 1)  # recovery, then compaction of whatever is left
    shipper.ship_once()
    stored = [str(sid) for body in _segments(lake_url).values()
              for sid in pq.read_table(io.BytesIO(body), columns=["span_id"]).column("span_id").to_pylist()]
    assert sorted(stored) == sorted(span_ids(request))


def test_an_unreachable_store_delays_shipping_never_ingest(s3, collector_factory, tmp_path):
    """No bucket yet: spans are still acknowledged, /healthz says why shipping fails, /stats shows the outbox
    growing old; once the bucket exists the backoff retry ships everything."""
    import urllib.error
    import urllib.request

    bucket = f"late-{random.Random().getrandbits(40):x}"
    lake_url = f"s3://{bucket}/lake"
    collector = collector_factory("--lake-url", lake_url, *SHIP_FLAGS, env=s3.env)
    acked = _export(collector.http_port, _provider_spans(50, 7))
    assert len(acked) == 50

    def degraded() -> dict | None:
        try:
            urllib.request.urlopen(f"{collector.url}/healthz", timeout=10)
        except urllib.error.HTTPError as exc:
            return json.loads(exc.read())
        return None

    _wait(lambda: collector.stats()["ship_errors"] > 0 and degraded() is not None, what="shipping to fail")
    report = degraded()
    assert report is not None and any("object store" in reason for reason in report["reasons"])
    stats = collector.stats()
    assert stats["outbox_segments"] >= 1 and stats["outbox_oldest_age_s"] >= 0
    urllib.request.urlopen(urllib.request.Request(f"{s3.endpoint}/{bucket}", method="PUT"), timeout=10).read()
    _wait(lambda: _shipped_all(collector) and degraded() is None, what="shipping to recover")
    rows = _sql("SELECT span_id FROM spans", "--lake-url", lake_url, "--data-dir", str(tmp_path / "absent"))
    assert {r["span_id"] for r in rows} == acked and len(rows) == 50


def test_sql_on_a_missing_bucket_or_a_dead_endpoint_is_storage_error(s3, tmp_path):
    import socket
    import subprocess
    import sys

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}"
    for env in ({}, {"AWS_ENDPOINT_URL": dead, "AWS_MAX_ATTEMPTS": "1"}):
        out = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "sql", "SELECT 1", "--lake-url",
                              "s3://no-such-bucket-here/lake", "--data-dir", str(tmp_path / "absent"), "--format",
                              "json"], capture_output=True, text=True, timeout=300, env={**os.environ, **env})
        assert (out.returncode, out.stdout) == (2, ""), out.stderr
        assert json.loads(out.stderr)["error"]["code"] == "storage_error" and "Traceback" not in out.stderr
