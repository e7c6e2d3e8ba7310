"""Many collectors, one lake: what each design costs, side by side (no assertions; issue 19, item 2).

    .venv/bin/python bench/many_writers.py                       # 1M spans over 10 days, 3 writers
    .venv/bin/python bench/many_writers.py --rows 3000000 --commits 30

On an S3-compatible server on loopback (moto's, a Python process on the same cores):

1. Read: `verdict sql` "calls per intent per day" (bench/collector_ingest.py's query) over the same spans
   a. shipped by one writer (item 1's layout: each span in one object, read as it is) — the baseline;
   b. shipped by three writers, ~2 % of spans acknowledged by two of them, nothing merged: every object is
      fresh, deduplicated at read time (option "dedupe on read");
   c. the same after the lake compactor merged them (option "one compactor with a lease"); also its merge
      throughput.
2. Commits with three concurrent writers: the manifest's conditional PUT (read-modify-write, retried on
   conflict), and Delta Lake (`deltalake`, if importable: append, and MERGE on (trace_id, span_id), which a
   Delta lake needs to hold each span once) — median latency per commit and conflicts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.collector_ingest import _SQL_ROW, SQL_QUERY  # noqa: E402
from bench.lake_read import _sql_seconds  # noqa: E402
from collector import lake_manifest  # noqa: E402
from collector.lake_compactor import LakeCompactor  # noqa: E402
from collector.objectstore import ObjectLake  # noqa: E402
from collector.stats import Stats  # noqa: E402
from tests.collector.s3_server import start_s3_server  # noqa: E402

WRITERS = 3
DAYS = 10


def _day_table(con, day: int, per_day: int) -> str:
    date = f"2026-10-{day + 1:02d}"
    select = _SQL_ROW.format(offset=day * per_day, date=date, step_us=86_400_000_000 // per_day, n=per_day)
    con.execute(f"CREATE OR REPLACE TABLE day AS {select.replace('SELECT ', 'SELECT i AS _i, ', 1)}")
    return date


def build(root: Path, rows: int) -> tuple[int, int]:
    """`root/one/…`: one writer's objects (one per day); `root/many/…`: three writers' (a writer's spans are
    i % 3 == w, plus the 2 % of the others' it also acknowledged). Returns (unique spans, stored rows)."""
    import duckdb

    con = duckdb.connect()
    per_day = rows // DAYS
    stored = 0
    for d in range(DAYS):
        date = _day_table(con, d, per_day)
        for layout, writers in (("one", [None]), ("many", range(WRITERS))):
            part = root / layout / "spans" / "tenant=bench" / f"date={date}"
            part.mkdir(parents=True, exist_ok=True)
            for w in writers:
                where = "true" if w is None else f"_i % 3 = {w} OR _i % 50 = {(w + 1) % WRITERS}"
                con.execute(f"COPY (SELECT * EXCLUDE (_i) FROM day WHERE {where} ORDER BY start_time) TO "
                            f"'{part}/c-{d}{w or 0}00-w{w}.parquet' (FORMAT parquet, COMPRESSION zstd, "
                            "ROW_GROUP_SIZE 131072)")
                if w is not None:
                    stored += con.execute(f"SELECT count(*) FROM day WHERE {where}").fetchall()[0][0]
    return per_day * DAYS, stored


def upload(remote: ObjectLake, root: Path) -> int:
    return len([remote.upload(f, f.relative_to(root).as_posix()) for f in sorted(root.rglob("*.parquet"))])


def read_phase(server, rows: int) -> None:
    with tempfile.TemporaryDirectory(prefix="verdict-bench-writers-") as tmp:
        root = Path(tmp)
        unique, stored = build(root, rows)
        absent = ["--data-dir", str(root / "absent")]
        one = ObjectLake(f"s3://{server.new_bucket()}/lake")
        upload(one, root / "one")
        many = ObjectLake(f"s3://{server.new_bucket()}/lake")
        lake_manifest.ensure(many, "spans", "bench")  # what a collector does before its first upload
        objects = upload(many, root / "many")
        base_s, base_out = _sql_seconds(["--lake-url", one.url, *absent])
        dedupe_s, dedupe_out = _sql_seconds(["--lake-url", many.url, *absent])
        started = time.perf_counter()
        LakeCompactor(root / "compactor", many, 60.0, 0.0, 0, Stats()).run_once()
        merge_s = time.perf_counter() - started
        merged_s, merged_out = _sql_seconds(["--lake-url", many.url, *absent])
    assert base_out == dedupe_out == merged_out, "the three layouts answered differently"
    print(f"[read] {unique:,} spans; three writers stored {stored:,} rows ({stored / unique - 1:.1%} "
          f"duplicates across writers) in {objects} objects")
    print("[read] verdict sql calls per intent per day, median of 3 (object store on loopback):")
    print(f"       one writer, no dedupe (baseline)         {base_s:6.2f} s  1.00x")
    print(f"       three writers, dedupe on read           {dedupe_s:6.2f} s  {dedupe_s / base_s:.2f}x")
    print(f"       three writers, after the lake compactor {merged_s:6.2f} s  {merged_s / base_s:.2f}x")
    print(f"[merge] lake compactor: {stored:,} rows in {merge_s:.1f} s ({stored / merge_s:,.0f} rows/s, "
          f"one thread)")


def _latencies(label: str, writer, commits: int) -> None:
    timings: list[float] = []
    conflicts = [0]
    lock = threading.Lock()

    def run(w: int) -> None:
        for k in range(commits):
            started = time.perf_counter()
            retries = writer(w, k)
            with lock:
                timings.append(time.perf_counter() - started)
                conflicts[0] += retries

    threads = [threading.Thread(target=run, args=(w,)) for w in range(WRITERS)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    print(f"[commit] {label:<38} median {statistics.median(timings) * 1000:6.0f} ms, p90 "
          f"{statistics.quantiles(timings, n=10)[-1] * 1000:6.0f} ms; {len(timings) / wall:5.1f} commits/s; "
          f"{conflicts[0]} conflicts retried")


def commit_phase(server, commits: int) -> None:
    remote = ObjectLake(f"s3://{server.new_bucket()}/lake")
    lake_manifest.ensure(remote, "spans", "bench")

    def manifest_commit(w: int, k: int) -> int:
        retries = 0
        while True:
            current = lake_manifest.read(remote, "spans", "bench")
            assert current is not None  # created before the writers start
            entry = f"spans/tenant=bench/date=2026-10-01/m-{w}-{k}.parquet"
            try:
                lake_manifest.commit(remote, "spans", "bench", lake_manifest.Manifest(
                    {**current.merged, entry: 1}, current.absorbed, current.expired, current.generation, current.etag))
                return retries
            except lake_manifest.ManifestConflict:
                retries += 1

    _latencies("manifest, conditional PUT", manifest_commit, commits)
    try:
        import deltalake  # type: ignore[import-not-found]  # optional: only this comparison needs it
    except ImportError:
        print("[commit] Delta Lake: `deltalake` is not installed (pip install deltalake): not measured")
        return
    delta_phase(server, commits, deltalake)


def delta_phase(server, commits: int, deltalake) -> None:
    import duckdb

    url = f"s3://{server.new_bucket()}/delta"
    options = {"AWS_ENDPOINT_URL": server.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
               "AWS_ACCESS_KEY_ID": "verdict-test", "AWS_SECRET_ACCESS_KEY": "verdict-test-secret",
               "conditional_put": "etag"}  # commits by put-if-absent on the log: no external lock
    batch = 1_000

    def spans(w: int, k: int):
        """A collector's batch; Delta has no nanosecond timestamps, so the times are cast to microseconds."""
        select = _SQL_ROW.format(offset=w * 1_000_000 + k * batch, date="2026-10-01", step_us=1, n=batch)
        micros = ", ".join(f"{c}::TIMESTAMP AS {c}" for c in ("start_time", "end_time", "received_at"))
        return duckdb.connect().sql(f"SELECT * REPLACE ({micros}) FROM ({select})").to_arrow_table()

    deltalake.write_deltalake(url, spans(9, 0), storage_options=options)

    def with_retries(commit) -> int:
        retries = 0
        while True:
            try:
                commit()
                return retries
            except (deltalake.exceptions.CommitFailedError, OSError) as exc:
                if "conflict" not in str(exc).lower() and not isinstance(exc, deltalake.exceptions.CommitFailedError):
                    raise
                retries += 1

    def append(w: int, k: int) -> int:
        return with_retries(lambda: deltalake.write_deltalake(url, spans(w, k), mode="append",
                                                              storage_options=options))

    def merge(w: int, k: int) -> int:
        def run() -> None:
            (deltalake.DeltaTable(url, storage_options=options)
             .merge(spans(w, k + 10_000), "t.trace_id = s.trace_id AND t.span_id = s.span_id", source_alias="s",
                    target_alias="t").when_not_matched_insert_all().execute())
        return with_retries(run)

    _latencies("Delta append", append, commits)
    _latencies("Delta MERGE on (trace_id, span_id)", merge, max(3, commits // 3))
    table = deltalake.DeltaTable(url, storage_options=options)
    started = time.perf_counter()
    dataset = table.to_pyarrow_dataset()  # noqa: F841  (read by DuckDB below, by name)
    rows = duckdb.connect().execute("SELECT count(*) FROM dataset").fetchall()[0][0]
    print(f"[delta] {rows:,} rows in {len(table.file_uris())} files after {table.version()} versions; a full scan "
          f"took {time.perf_counter() - started:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="spans for the read phase (0: skip)")
    parser.add_argument("--commits", type=int, default=20, help="commits per writer (0: skip)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; query: {SQL_QUERY}")
    server = start_s3_server()
    os.environ.update(server.env)  # for `verdict sql` and the stores opened below
    try:
        if args.rows:
            read_phase(server, args.rows)
        if args.commits:
            commit_phase(server, args.commits)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
