"""Benchmark: `verdict ui` server time on a large lake — trace table, trace detail, signals and app traffic.

    .venv/bin/python bench/ui.py [--spans 1000000] [--repeat 15]

The lake is bench/daemon_cycle.py's (`--spans` model-call spans over 9 days, 20 intents, 2 tenants,
one segment per tenant and day, as the collector writes them), then compacted by the collector's own
compaction (the steady state its maintenance job keeps: sorted by start time, each span once); the
daemon's real sampler picks its
default sample, and every sampled trace gets a 5-dimension judgment (daemon_cycle.fill_judgments).
Requests go through the real app (Starlette's TestClient, in process: no network in the figure)
with one snapshot taken up front, as a running server reuses it; the snapshot's cost is printed on
its own. Each figure is the median of `--repeat` requests after one warm-up.

Targets (issue 20): trace table first page ≤ 300 ms, trace detail ≤ 200 ms (median server time) on a
10 M-span lake. `/traffic` (issue 30) has the table's target (a page a user waits for), ≤ 300 ms, and a
baseline: unlike the table it aggregates every call of the days shown, so its figure is printed next to a
bare scan of those calls (count and sums of latency and tokens, on the snapshot's connection, no page):
the ratio is what the percentiles, grouping sets and the page cost on top of reading the days at all.
Generating 10 M spans takes long on this shared 2-core machine; the default is 1 M (pass --spans 10000000
for the target's size).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from verdict.tenancy import TenantId

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGETS = {"trace table, first page": 300.0, "trace detail": 200.0, "app traffic, 7 days": 300.0,
           "app traffic, 1 day": 300.0}
# The floor under /traffic: reading the columns it aggregates over the same date partitions.
SCAN = "SELECT count(*), sum(latency_ms), sum(input_tokens), sum(output_tokens) FROM llm_calls WHERE date IN ({days})"


def median_ms(client, urls: list[str], repeat: int) -> float:
    client.get(urls[0])  # warm-up
    times = []
    for i in range(repeat):
        started = time.perf_counter()
        response = client.get(urls[i % len(urls)])
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (urls[i % len(urls)], response.status_code, response.text[:300])
    return statistics.median(times)


def scan_ms(con, days, repeat: int) -> float:
    """Median of the bare scan of `days`' calls (SCAN), after one warm-up."""
    sql = SCAN.format(days=", ".join(f"DATE '{d.isoformat()}'" for d in days))
    con.execute(sql).fetchall()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        con.execute(sql).fetchall()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    from starlette.testclient import TestClient

    from bench.daemon_cycle import NOW, TENANTS, build_lake, fill_judgments
    from collector.compaction import compact_all
    from verdict_daemon.config import Sampling
    from verdict_daemon.service.sampling import sample
    from verdict_daemon.store.state import StateStore
    from verdict_ui.access import Access
    from verdict_ui.app import Settings, create_app
    from verdict_ui.snapshot import take
    from verdict_ui.traces import FACET_DAYS, facets

    work = Path(tempfile.mkdtemp(prefix="verdict-bench-ui-"))
    try:
        started = time.perf_counter()
        build_lake(work, args.spans)
        compact_all(work, 1)
        store = StateStore(work)
        judged = {}
        for tenant in TENANTS:
            sample(store, work, TenantId(tenant), Sampling(), NOW)
            judged[tenant] = fill_judgments(store, tenant, "f" * 64)
        print(f"lake: {args.spans:,} spans, {len(TENANTS)} tenants; judged traces {judged} "
              f"(built in {time.perf_counter() - started:.0f} s)")
        tenant = TENANTS[0]
        started = time.perf_counter()
        snapshot = take(work, TenantId(tenant), 10.0)
        print(f"snapshot of {tenant} (views + state copy): {(time.perf_counter() - started) * 1000:.0f} ms "
              "(once per --snapshot-ttl, not per request)")
        started = time.perf_counter()
        facets(snapshot.con, snapshot.days)
        print(f"trace filter lists (newest {FACET_DAYS} days' calls + judgments): "
              f"{(time.perf_counter() - started) * 1000:.0f} ms (once per snapshot, on its first trace page)")

        client = TestClient(create_app(Settings(work, Access.create(TenantId(tenant), None), ("testserver",),
                                                snapshot_ttl=3600.0)))
        with store.transaction() as con:
            traces = [(t, d) for t, d in con.execute(
                "SELECT trace_id, started_at::DATE FROM sampled_traces WHERE tenant_id = ? ORDER BY hash(trace_id) "
                "LIMIT 50", [tenant]).fetchall()]
        figures = {
            "trace table, first page": median_ms(client, ["/traces"], args.repeat),
            "trace detail": median_ms(client, [f"/traces/{t}?day={d}" for t, d in traces], args.repeat),
            "trace detail without the day hint": median_ms(client, [f"/traces/{t}" for t, _ in traces], args.repeat),
            "trace table, verdict=FAIL": median_ms(client, ["/traces?verdict=FAIL"], args.repeat),
            "trace table, one intent": median_ms(client, ["/traces?intent=intent-07.v1"], args.repeat),
            "trace table, text search": median_ms(client, ["/traces?q=billing"], args.repeat),
            "signals list": median_ms(client, ["/signals"], args.repeat),
            "app traffic, 7 days": median_ms(client, ["/traffic"], args.repeat),
            "app traffic, 1 day": median_ms(client, ["/traffic?days=1"], args.repeat),
        }
        scans = {"app traffic, 7 days": scan_ms(snapshot.con, snapshot.days[:7], args.repeat),  # after the pages
                 "app traffic, 1 day": scan_ms(snapshot.con, snapshot.days[:1], args.repeat)}
        snapshot.con.close()
        for name, ms in figures.items():
            target = TARGETS.get(name)
            versus = f"target <= {target:.0f} ms, ratio {ms / target:.2f}" if target else "no target"
            scan = scans.get(name)
            floor = f"; a bare scan of its calls {scan:.0f} ms, ratio {ms / scan:.1f}" if scan else ""
            print(f"{name}: median {ms:.0f} ms ({versus}{floor})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
