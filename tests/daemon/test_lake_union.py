"""The daemon's reads over the union of a tenant's lakes (issue 19, items 3 and 4): local data dirs and an
S3-compatible server on loopback (moto). Sampling over a split tenant picks what it picks over one lake and
never another tenant's traces; the scoped views over a union refuse other tenants' prefixes and writes to
the store (a local COPY is `verdict sql`'s SELECT-only check, not the views');
`verdict report` finds a tenant in any of its lakes; bad lake options are closed errors."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import pytest

from collector.lake_union import LakeUnion
from collector.objectstore import ObjectLake
from collector.views import open_scoped
from tests.collector.s3_server import start_s3_server
from tests.daemon.cli import closed_error, env, pipeline, write_config
from tests.daemon.conftest import INTENTS, NOW
from tests.daemon.lakes import synthetic_days, write_rows
from verdict.tenancy import TenantId
from verdict_daemon.config import Sampling
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.state import StateStore

ALL = Sampling(per_cluster_per_window=1000)  # every eligible trace is picked: the picks are the tenant's traces


@pytest.fixture(scope="module")
def s3():
    server = start_s3_server()
    with pytest.MonkeyPatch.context() as mp:
        for name, value in server.env.items():  # for this process and the commands it starts
            mp.setenv(name, value)
        yield server
    server.stop()


def _ship(data_dir, lake_url: str) -> None:
    """Upload every segment of `data_dir` under its relative path (what the collector's shipper does)."""
    remote = ObjectLake(lake_url)
    for f in sorted(data_dir.rglob("*.parquet")):
        remote.upload(f, f.relative_to(data_dir).as_posix())


@pytest.fixture(scope="module")
def split(s3, tmp_path_factory):
    """acme's traces split by trace between zone A (a local dir) and zone B (shipped to a bucket, and still on
    B's disk); globex's in both zones too. Returns (zone A, zone B, lake URL, one dir holding everything,
    trace ids per tenant)."""
    root = tmp_path_factory.mktemp("union")
    zone_a, zone_b, whole = root / "zone-a", root / "zone-b", root / "whole"
    ids = {}
    for tenant, seed in (("acme", 0), ("globex", 1)):
        rows = synthetic_days(NOW, intents=INTENTS[:2], per_day=6, days=3, seed=seed)
        ids[tenant] = {r["trace_id"] for r in rows}
        write_rows(whole, tenant, rows)
        write_rows(zone_a, tenant, rows[::2])
        write_rows(zone_b, tenant, rows[1::2])
    lake_url = f"s3://{s3.new_bucket()}/lake"
    _ship(zone_b, lake_url)
    return zone_a, zone_b, lake_url, whole, ids


def _picks(store: StateStore, tenant: str) -> set[str]:
    with store.transaction() as con:
        return {t for (t,) in con.execute("SELECT trace_id FROM sampled_traces WHERE tenant_id = ?", [tenant]).fetchall()}


@pytest.mark.objectstore
def test_sampling_over_the_union_picks_the_whole_tenant_and_nothing_else(split, tmp_path):
    zone_a, zone_b, lake_url, whole, ids = split
    for tenant in ("acme", "globex"):
        union, alone = StateStore(tmp_path / f"union-{tenant}"), StateStore(tmp_path / f"alone-{tenant}")
        report = sample(union, LakeUnion.open([zone_a, zone_b], [lake_url]), TenantId(tenant), ALL, NOW)
        sample(alone, whole, TenantId(tenant), ALL, NOW)
        assert _picks(union, tenant) == _picks(alone, tenant) == ids[tenant]
        assert report.sampled == len(ids[tenant])  # zone B's segments, on disk and in the bucket, read once
        with union.transaction() as con:
            assert con.execute("SELECT DISTINCT tenant_id FROM sampled_traces").fetchall() == [(tenant,)]
    bucket_only = StateStore(tmp_path / "bucket-only")
    sample(bucket_only, LakeUnion.open([], [lake_url]), TenantId("acme"), ALL, NOW)
    assert _picks(bucket_only, "acme") and _picks(bucket_only, "acme") < ids["acme"]


@pytest.mark.objectstore
@pytest.mark.parametrize("query", [
    "SELECT * FROM read_parquet('{lake}/spans/tenant=globex/*/*.parquet')",
    "SELECT * FROM read_parquet('{globex_object}')",  # no glob: the object exists and is readable but for scope
    "SELECT * FROM read_parquet('{zone_a}/spans/tenant=globex/*/*.parquet')",
    "SELECT * FROM read_parquet('{lake}/spans/tenant=acme/../tenant=globex/*/*.parquet')",
    "COPY (SELECT 1) TO '{lake}/spans/tenant=acme/leak.csv'",
])
def test_scoped_views_over_a_union_refuse_other_tenants_and_writes(split, query):
    zone_a, zone_b, lake_url, _whole, ids = split
    remote = ObjectLake(lake_url)
    before = set(remote.list(""))
    globex_object = remote.object_url(next(r for r in sorted(before) if "tenant=globex" in r))
    con = open_scoped(LakeUnion.open([zone_a, zone_b], [lake_url]), TenantId("acme"))
    try:
        assert {t for (t,) in con.execute("SELECT DISTINCT trace_id FROM spans").fetchall()} == ids["acme"]
        with pytest.raises(duckdb.Error):
            con.execute(query.format(lake=lake_url, zone_a=zone_a, globex_object=globex_object))
    finally:
        con.close()
    assert set(remote.list("")) == before


def _report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "report", "--json", *args],
                          capture_output=True, text=True, env=env(), timeout=120)


@pytest.mark.objectstore
def test_report_finds_its_tenant_in_any_of_its_lakes(split, tmp_path):
    zone_a, _zone_b, lake_url, _whole, _ids = split
    state = tmp_path / "state"
    state.mkdir()
    common = ("--data-dir", str(state), "--tenant", "acme", "--out", str(tmp_path / "r.html"))
    alone = _report(*common)
    assert alone.returncode == 2 and closed_error(alone.stderr)["code"] == "unknown_tenant"
    for lakes in (("--lake-dir", str(zone_a)), ("--lake-url", lake_url)):
        done = _report(*common, *lakes)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["tenant"] == "acme"


def test_bad_lake_options_are_closed_errors(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    config = write_config(tmp_path / "bad.toml", data, '[lake]\nurls = ["ftp://bucket/x"]\n')
    code, out, _ = pipeline("--config", str(config), "--tenant", "acme")
    assert code == 2 and out["error"]["code"] == "invalid_config" and "lake.urls" in out["error"]["message"]
    code, out, _ = pipeline("--config", str(write_config(tmp_path / "ok.toml", data)), "--tenant", "acme",
                            "--lake-url", "s3://")
    assert code == 2 and out["error"]["code"] == "invalid_config" and "--lake-url" in out["error"]["message"]
    done = _report("--data-dir", str(data), "--tenant", "acme", "--lake-url", "gs:/x")
    assert done.returncode == 2 and closed_error(done.stderr)["code"] == "invalid_config"
    code, out, _ = pipeline("--config", str(write_config(tmp_path / "ok.toml", data)), "--tenant", "acme",
                            "--lake-dir", str(tmp_path / "typo"))
    assert code == 2 and out["error"]["code"] == "invalid_config" and "typo" in out["error"]["message"]


def test_a_trace_compacted_into_two_lakes_is_sampled_and_counted_once(tmp_path):
    """Exporter retries routed to two collectors leave two compacted copies, which the union reads both of."""
    rows = synthetic_days(NOW, intents=INTENTS[:2], per_day=5, days=3)
    for zone in ("zone-a", "zone-b"):
        write_rows(tmp_path / zone, "acme", rows)
        for f in (tmp_path / zone / "spans").rglob("*.parquet"):
            f.rename(f.with_name(f"c-{f.name}"))  # as compaction names them; a name per lake
    store = StateStore(tmp_path / "state")
    report = sample(store, LakeUnion.open([tmp_path / "zone-a", tmp_path / "zone-b"]), TenantId("acme"), ALL, NOW)
    assert report.sampled == report.eligible == len(rows)
    assert _picks(store, "acme") == {r["trace_id"] for r in rows}


@pytest.mark.objectstore
def test_cluster_normalize_indexes_the_tenant_from_every_lake(split, tmp_path):
    zone_a, zone_b, lake_url, _whole, ids = split
    state = tmp_path / "state"
    state.mkdir()

    def normalize(*lakes: str) -> dict:
        done = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "cluster", "--data-dir", str(state),
                               "--tenant", "acme", "--actor", "test", *lakes, "normalize"],
                              capture_output=True, text=True, env=env(), timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["result"]

    assert normalize("--lake-dir", str(zone_a))["total_indexed"] < len(ids["acme"])
    result = normalize("--lake-dir", str(zone_b), "--lake-url", lake_url)  # zone A's traces already indexed
    assert result["complete"] and result["total_indexed"] == len(ids["acme"])
    with StateStore(state).transaction() as con:
        indexed = {t for (t,) in con.execute("SELECT trace_id FROM analysis_index WHERE tenant_id = 'acme'").fetchall()}
    assert indexed == ids["acme"]


@pytest.mark.objectstore
def test_an_unreachable_lake_is_a_storage_error(s3, tmp_path, lake):
    """A bucket that does not exist: the cycle stops with storage_error before judging, no traceback."""
    config = write_config(tmp_path / "pipeline.toml", lake)
    code, out, stderr = pipeline("--config", str(config), "--tenant", "acme", "--as-of", NOW.isoformat(),
                                 "--lake-url", "s3://no-such-bucket-verdict/lake")
    assert code == 2 and out["error"]["code"] == "storage_error", stderr
    assert "span lake of tenant acme" in out["error"]["message"] and "Traceback" not in stderr
    assert _picks(StateStore(lake), "acme") == set()


@pytest.mark.objectstore
def test_a_segment_shipped_to_a_store_of_the_union_is_read_there_only(s3, tmp_path):
    """Zone B's local copy of a shipped segment stays on disk for --ship-delete-after-s; once the store has
    replaced the object (several writers: the lake compactor merges and deletes it) the local copy must not
    reappear beside the merged object. Without the store in the union, the local copy is the one to read."""
    from collector.shipping import outbox_dir

    rows = synthetic_days(NOW, intents=INTENTS[:1], per_day=4, days=2)
    zone_b = tmp_path / "zone-b"
    write_rows(zone_b, "acme", rows)
    lake_url = f"s3://{s3.new_bucket()}/lake"
    remote = ObjectLake(lake_url)
    for f in sorted((zone_b / "spans").rglob("*.parquet")):
        relative = f.relative_to(zone_b).as_posix()
        record = outbox_dir(zone_b) / f"{relative}.json"  # what the collector's shipper records after its PUT
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"key": remote.key(relative), "size": f.stat().st_size, "etag": "x",
                                      "shipped_at": 0}))
    # the store holds the merged object only (one for all of B's segments), not the shipped ones
    merged = tmp_path / "merged"
    write_rows(merged, "acme", rows)
    for f in sorted((merged / "spans").rglob("*.parquet")):
        remote.upload(f, f.relative_to(merged).with_name(f"c-merged-{f.name}").as_posix())

    def traces(lake: LakeUnion) -> list[str]:
        files = lake.files("spans", TenantId("acme"), "*.parquet", None)
        con = lake.connect()
        try:
            return sorted(t for (t,) in con.execute("SELECT trace_id FROM read_parquet(?)", [files]).fetchall())
        finally:
            con.close()

    expected = sorted(r["trace_id"] for r in rows)
    assert traces(LakeUnion.open([zone_b], [lake_url])) == expected  # each span once: the merged object
    assert traces(LakeUnion.open([zone_b])) == expected  # no store read: B's own copies
