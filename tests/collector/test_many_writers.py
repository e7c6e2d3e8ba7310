"""Many collectors, one lake (issue 19, item 2), on a real S3-compatible server on loopback: every collector
ships its own compacted segments, one lake compactor (a lease) merges them, retention expires dates; a reader
sees every span once, at every step. First in-process with a reader after every store operation, then with
real collector processes under load, kill -9 included."""

from __future__ import annotations

import io
import json
import random
import threading
import time

import pytest

from collector.loadgen import export_request
from tests.collector import test_objectstore
from tests.collector.conftest import land_request
from tests.collector.test_objectstore import _export, _objects, _provider_spans, _sql, _wait

s3 = test_objectstore.s3  # the S3-compatible server on loopback (one per module)

pytestmark = pytest.mark.objectstore

DAY_NS = 86_400 * 10**9


def _read(remote, tenant: str = "acme") -> list[str]:
    """Every span id a `verdict sql` reader of the bucket sees, with repeats."""
    from collector import sql
    from collector.lake_source import LakeSource

    _columns, rows = sql.execute(LakeSource(None, remote), tenant, "SELECT span_id FROM spans")
    return [r[0] for r in rows]


def _writers(tmp_path, remote, n: int):
    from collector import lake
    from collector.shipping import Shipper
    from collector.stats import Stats

    out = []
    for i in range(n):
        data_dir = tmp_path / f"writer{i}"
        lake.prepare(data_dir)
        out.append((data_dir, Shipper(data_dir, remote, 0.0, Stats())))
    return out


def test_compaction_and_retention_racing_writers_show_each_span_once_at_every_step(s3, tmp_path, monkeypatch):
    """Three writers (some spans sent to two of them: an exporter retrying elsewhere) ship rounds of segments;
    the lake compactor merges them and expires an old date while they ship. After every PUT, commit and delete
    the store sees, a reader of the bucket finds exactly the spans shipped so far (not expired), each once."""
    from collector import compaction, lake_manifest
    from collector.lake_compactor import LakeCompactor
    from collector.objectstore import ObjectLake
    from collector.stats import Stats

    remote = ObjectLake(f"s3://{s3.new_bucket()}/lake")
    writers = _writers(tmp_path, remote, 3)
    compactor = LakeCompactor(tmp_path / "compactor", remote, 1.0, 0.0, 2, Stats())
    expected: set[str] = set()  # spans whose segment some writer has uploaded
    old: set[str] = set()  # spans of a date retention expires
    checks = []

    def check(step: str) -> None:
        seen = _read(remote)
        checks.append(step)
        assert len(seen) == len(set(seen)), f"a duplicate is visible after {step}"
        assert set(seen) == expected - old if compactor_expired[0] else set(seen) == expected, \
            f"after {step}: missing {sorted(expected - set(seen))[:5]}, extra {sorted(set(seen) - expected)[:5]}"

    compactor_expired = [False]
    real_commit, real_delete, real_upload = lake_manifest.commit, ObjectLake.delete, ObjectLake.upload

    def commit(*args, **kwargs):
        out = real_commit(*args, **kwargs)
        compactor_expired[0] = compactor_expired[0] or bool(out.expired)
        check("a manifest commit")
        return out

    def delete(self, relative):
        real_delete(self, relative)
        check(f"deleting {relative}")

    def upload(self, local, relative):
        import pyarrow.parquet as pq

        out = real_upload(self, local, relative)
        if not relative.split("/")[-1].startswith("m-"):  # a writer's segment: its spans are readable from now on
            expected.update(str(s) for s in pq.read_table(local, columns=["span_id"]).column("span_id").to_pylist())
        check(f"uploading {relative}")
        return out

    monkeypatch.setattr(lake_manifest, "commit", commit)
    monkeypatch.setattr(ObjectLake, "delete", delete)
    monkeypatch.setattr(ObjectLake, "upload", upload)

    rng = random.Random(19)
    now_ns = time.time_ns()
    for round_ in range(4):
        for i, (data_dir, shipper) in enumerate(writers):
            start = now_ns - 5 * DAY_NS if round_ == 0 else now_ns  # round 0 lands a date retention drops
            request = export_request(random.Random(100 * round_ + i), 20, start)
            ids = {span for _trace, span in land_request(data_dir, request, "acme")}
            if rng.random() < 0.7:  # the same request acknowledged by the next writer too
                land_request(writers[(i + 1) % 3][0], request, "acme")
            compaction.compact_all(data_dir, 1)
            shipper.ship_once()
            if round_ == 0:
                old |= ids
        if round_ == 0:
            for data_dir, shipper in writers:  # the duplicates landed on the next writer after it shipped
                compaction.compact_all(data_dir, 1)
                shipper.ship_once()
        result = compactor.run_once()
        assert result is not None and result.conflicts == 0
    for data_dir, shipper in writers:
        compaction.compact_all(data_dir, 1)
        shipper.ship_once()
    compactor.run_once()
    compactor.run_once()  # deletes what the previous pass absorbed or expired

    assert compactor_expired[0] and old and expected - old
    assert sorted(_read(remote)) == sorted(expected - old)
    manifest = lake_manifest.read(remote, "spans", "acme")
    assert manifest is not None
    segments = {r for r in remote.list("spans/") if r.endswith(".parquet")}
    assert segments == set(manifest.merged)  # everything merged, inputs and the expired date deleted
    assert sum(c.startswith("deleting") for c in checks) > 0 and sum(c == "a manifest commit" for c in checks) > 4


def test_a_second_compactor_waits_for_the_lease_and_takes_over_when_it_expires(s3, tmp_path):
    from collector import lake_manifest
    from collector.lake_compactor import LakeCompactor
    from collector.objectstore import ObjectLake
    from collector.stats import Stats

    remote = ObjectLake(f"s3://{s3.new_bucket()}/lake")
    (data_dir, shipper), = _writers(tmp_path, remote, 1)
    land_request(data_dir, export_request(random.Random(3), 10, time.time_ns()), "acme")
    from collector import compaction

    compaction.compact_all(data_dir, 1)
    shipper.ship_once()
    first = LakeCompactor(tmp_path / "a", remote, 1.0, 600.0, 0, Stats(), holder="a")
    second = LakeCompactor(tmp_path / "b", remote, 1.0, 600.0, 0, Stats(), holder="b")
    assert first.run_once() is not None
    assert second.run_once() is None  # a's lease (5 s) is still valid
    lease = json.loads(bytes(__import__("obstore").get(remote.store, remote.key(lake_manifest.LEASE_PATH)).bytes()))
    assert lease["holder"] == "a"
    first.stop()  # releases the lease: b takes over at once
    assert second.run_once() is not None
    # A stale manifest version cannot be committed (two compactors at once: only one step lands).
    manifest = lake_manifest.read(remote, "spans", "acme")
    assert manifest is not None
    lake_manifest.commit(remote, "spans", "acme", manifest)
    with pytest.raises(lake_manifest.ManifestConflict):
        lake_manifest.commit(remote, "spans", "acme", manifest)


class _Crash(Exception):
    pass


@pytest.mark.parametrize("step", ["lake-uploaded", "lake-committed", "lake-deleted"])
def test_a_compactor_dying_at_any_step_is_replaced_and_loses_nothing(s3, tmp_path, monkeypatch, step):
    """The lease holder dies after uploading a merged object (not committed: an orphan), after a commit (inputs
    not deleted yet) or after deleting one input; another collector takes the lease once it expires and
    finishes. The reader sees every shipped span once before, at the crash, and after."""
    from collector import compaction, lake_compactor
    from collector.lake_compactor import LakeCompactor
    from collector.objectstore import ObjectLake
    from collector.stats import Stats

    remote = ObjectLake(f"s3://{s3.new_bucket()}/lake")
    shipped: set[str] = set()
    for i, (data_dir, shipper) in enumerate(_writers(tmp_path, remote, 3)):
        for k in range(2):
            request = export_request(random.Random(10 * i + k), 15, time.time_ns())
            shipped |= {span for _t, span in land_request(data_dir, request, "acme")}
            land_request(tmp_path / f"writer{(i + 1) % 3}", request, "acme")  # also acknowledged by the next one
        compaction.compact_all(data_dir, 1)
        shipper.ship_once()
    for data_dir, shipper in _writers(tmp_path, remote, 3):  # the copies the next writers got
        compaction.compact_all(data_dir, 1)
        shipper.ship_once()
    assert sorted(_read(remote)) == sorted(shipped)

    def crash(name: str) -> None:
        if name == step:
            raise _Crash(name)

    monkeypatch.setattr(lake_compactor, "_crash_point", crash)
    dying = LakeCompactor(tmp_path / "a", remote, 0.1, 0.0, 0, Stats(), holder="a")
    with pytest.raises(_Crash):
        dying.run_once()
    assert sorted(_read(remote)) == sorted(shipped)
    monkeypatch.setattr(lake_compactor, "_crash_point", lambda name: None)
    successor = LakeCompactor(tmp_path / "b", remote, 0.1, 0.0, 0, Stats(), holder="b")
    assert successor.run_once() is None  # the dead holder's lease has not expired yet
    time.sleep(5.1)  # its TTL (at least 5 s)
    assert successor.run_once() is not None
    successor.run_once()  # deletes what the previous pass absorbed
    assert sorted(_read(remote)) == sorted(shipped)
    objects = _complete_parquet(remote.url)
    assert all(name.split("/")[-1].startswith("m-") for name in objects), sorted(objects)
    stored = [sid for ids in objects.values() for sid in ids]
    assert sorted(stored) == sorted(shipped)


def _complete_parquet(lake_url: str) -> dict[str, list[str]]:
    import pyarrow.parquet as pq

    return {name: [str(s) for s in pq.read_table(io.BytesIO(body), columns=["span_id"]).column("span_id").to_pylist()]
            for name, body in _objects(lake_url).items() if name.endswith(".parquet")}


def test_three_collectors_under_load_with_kill9_each_span_once(s3, collector_factory, tmp_path):
    """Three collector processes ship one tenant to one prefix while load runs, some requests acknowledged by two
    of them; each is killed (-9) at random moments (uploads and lake compaction run every few hundred ms, so
    kills land mid-upload, mid-merge and mid-commit) and restarted. A reader polling meanwhile never sees a
    duplicate; at the end every acknowledged span is read exactly once and every object is a whole Parquet file."""
    lake_url = f"s3://{s3.new_bucket()}/lake"
    flags = ("--lake-url", lake_url, "--ship-seal-after-s", "0.3", "--ship-delete-after-s", "1",
             "--lake-compact-interval-s", "0.5", "--lake-delete-grace-s", "1")
    dirs = [tmp_path / f"c{i}" for i in range(3)]
    collectors = [collector_factory(*flags, data_dir=d, env=s3.env) for d in dirs]
    acked: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()
    duplicates_seen: list[int] = []
    reads: list[int] = []  # spans seen by each successful read

    def reader() -> None:
        while not stop.is_set():
            out = _sql_raw("SELECT count(*) AS n, count(DISTINCT span_id) AS d FROM spans", lake_url, tmp_path)
            if out is not None:
                reads.append(out["n"])
                if out["n"] != out["d"]:
                    duplicates_seen.append(out["n"] - out["d"])
            time.sleep(0.5)

    poller = threading.Thread(target=reader, daemon=True)
    poller.start()
    rng = random.Random(1919)
    for round_ in range(6):
        spans = _provider_spans(60, round_)
        victim = round_ % 3
        senders = []
        for i, collector in enumerate(collectors):
            part = spans[i::3]
            if i == victim:  # also retried on the next collector: the same spans reach two writers
                part += spans[(i + 1) % 3::3][:10]

            def send(port=collector.http_port, part=part):
                got = _export(port, part, per_request=5)
                with lock:
                    acked.update(got)
            senders.append(threading.Thread(target=send))
        for t in senders:
            t.start()
        time.sleep(rng.uniform(0.2, 1.5))
        collectors[victim].kill9()
        for t in senders:
            t.join(120)
        collectors[victim] = collector_factory(*flags, data_dir=dirs[victim], env=s3.env)

    def settled() -> bool:
        if any(c.stats()["outbox_segments"] for c in collectors):
            return False
        try:
            objects = _complete_parquet(lake_url)
        except FileNotFoundError:  # listed, then deleted by the compactor (its grace ended) before the GET
            return False
        return bool(objects) and all(name.split("/")[-1].startswith("m-") for name in objects)

    _wait(settled, timeout=240, what=lambda: f"everything shipped and merged: {sorted(_objects(lake_url))}")
    stop.set()
    poller.join(60)
    for c in collectors:
        assert c.stop() == 0

    assert len(acked) >= 6 * 40, len(acked)
    stored = [sid for ids in _complete_parquet(lake_url).values() for sid in ids]  # whole objects only
    assert len(stored) == len(set(stored))  # merged objects hold each span once
    rows = _sql("SELECT span_id, count(*) AS n FROM spans GROUP BY span_id", "--lake-url", lake_url,
                "--data-dir", str(tmp_path / "absent"))
    assert acked <= {r["span_id"] for r in rows} and {r["n"] for r in rows} == {1}
    assert duplicates_seen == [] and len([n for n in reads if n]) >= 3, reads


def _sql_raw(query: str, lake_url: str, tmp_path) -> dict | None:
    from tests.collector.test_sql import verdict

    out = verdict("sql", query, "--lake-url", lake_url, "--data-dir", str(tmp_path / "absent"), "--format", "json")
    if out.returncode != 0:  # an object deleted between listing and reading (grace shorter than the query)
        return None
    return json.loads(out.stdout)[0]
