"""Benchmark: the intent rule's cost in the three steps that read it — sampling, the daemon's index step and
`normalize` — against a baseline checkout, on one lake, in one run.

    nice .venv/bin/python bench/intent_rule.py [--traces 100000] [--parent-share 0.2] [--repeats 3] --baseline DIR

The lake is bench/daemon_cycle.py's (`--traces` over 9 days, 20 intent keys, 2 tenants) where `--parent-share` of
the traces carry their key on an app span around the call instead of on the call (the shape `intent_context` gives a
foreign instrumentation's call). Each repeat runs, in fresh interpreters alternating baseline and this checkout
(`git archive main | tar -x -C DIR` into an empty DIR gives a baseline), on a fresh state.duckdb: the sampler over both tenants, the
index step (`index_traces`) over the sampled traces, then `normalize` of the rest. Printed per step: the median
process CPU seconds (DuckDB's threads included) of each and their ratio, and what each indexed or sampled without
a key (the baseline's index misses the parent-keyed traces: the defect the rule fixes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.daemon_cycle import NOW, TENANTS, build_lake  # noqa: E402

# argv: code dir, lake dir, state dir, as_of, tenants...; prints one JSON line.
_CHILD = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from datetime import datetime
from pathlib import Path
import duckdb
from verdict.tenancy import TenantId
from verdict_daemon.clustering.analysis_index import index_traces, normalize
from verdict_daemon.config import Sampling
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.state import StateStore

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

store = StateStore(Path(sys.argv[3]))
store.schema_version()
lake, tenants = Path(sys.argv[2]), [TenantId(t) for t in sys.argv[5:]]
out = {}
t0 = cpu()
for t in tenants:
    sample(store, lake, t, Sampling(), datetime.fromisoformat(sys.argv[4]))
t1 = cpu()
con = duckdb.connect(str(store.path), read_only=True)
picks = {t: con.execute("SELECT trace_id, started_at FROM sampled_traces WHERE tenant_id = ?", [t]).fetchall()
         for t in tenants}
out["sampled_unassigned"] = con.execute("SELECT count(*) FROM sampled_traces WHERE stratum = 'unassigned'").fetchone()[0]
con.close()
t2 = cpu()
for t in tenants:
    index_traces(store, lake, t, picks[t])
t3 = cpu()
for t in tenants:
    while not normalize(store, lake, t, 50_000).complete:
        pass
t4 = cpu()
con = duckdb.connect(str(store.path), read_only=True)
out["indexed"], out["index_missing"] = con.execute(
    "SELECT count(*), count(*) FILTER (WHERE key_status = 'missing') FROM analysis_index").fetchone()
con.close()
out |= {"sample_cpu_s": t1 - t0, "index_step_cpu_s": t3 - t2, "normalize_cpu_s": t4 - t3}
print(json.dumps(out))
"""


def add_parent_spans(data_dir: Path, share: float) -> None:
    """Move the intent key of `share` of the calls (by trace id hash) onto a new app span around each."""
    import duckdb

    con = duckdb.connect()
    for segment in sorted(data_dir.glob("spans/tenant=*/date=*/*.parquet")):
        path = str(segment).replace("'", "''")
        moved = f"hash(trace_id) % 1000 < {int(share * 1000)}"
        con.execute(f"""
            COPY (SELECT * REPLACE (CASE WHEN {moved} THEN NULL ELSE intent_key END AS intent_key,
                                    CASE WHEN {moved} THEN 'app0000000000000' END AS parent_span_id)
                  FROM read_parquet('{path}')
                  UNION ALL BY NAME
                  SELECT * REPLACE ('app0000000000000' AS span_id, NULL AS parent_span_id, NULL AS operation,
                                    'handle' AS name, 'INTERNAL' AS kind, NULL AS input_messages,
                                    NULL AS output_messages, start_time - INTERVAL 1 SECOND AS start_time)
                  FROM read_parquet('{path}') WHERE {moved})
            TO '{path}.tmp' (FORMAT parquet)""")
        os.replace(f"{segment}.tmp", segment)
    con.close()


def run_child(code: Path, lake: Path, state: Path, child: str = _CHILD) -> dict:
    """`child` run on `code` in a fresh interpreter (argv: code dir, lake dir, state dir, as_of, tenants...); the
    JSON line it prints last."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run([sys.executable, "-c", child, str(code), str(lake), str(state), NOW.isoformat(), *TENANTS],
                          env=env, capture_output=True, text=True, check=True)
    last = done.stdout.splitlines()[-1]
    return json.loads(last[last.rindex("{"):])  # after DuckDB's progress bar, if it drew one


def arguments(doc: str, *extra: tuple[str, float]) -> argparse.Namespace:
    """The lake's and the comparison's options (`extra`: more float options and their defaults)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--parent-share", type=float, default=0.2)
    for option, default in extra:
        parser.add_argument(option, type=float, default=default)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the code to compare with")
    return parser.parse_args()


def alternate(args: argparse.Namespace, lake: Path, states: Path, child: str = _CHILD) -> dict[str, list[dict]]:
    """`child`'s outputs per checkout ("baseline", "this"), `args.repeats` each, the order alternating; each run on
    a fresh state dir under `states`."""
    here = Path(__file__).resolve().parents[1]
    runs: dict[str, list[dict]] = {"baseline": [], "this": []}
    for n in range(args.repeats):
        for name, code in (("baseline", args.baseline), ("this", here)) if n % 2 == 0 else \
                (("this", here), ("baseline", args.baseline)):
            runs[name].append(run_child(code.resolve(), lake, states / f"state-{name}-{n}", child))
    return runs


def main() -> int:
    args = arguments(__doc__)
    with tempfile.TemporaryDirectory(prefix="verdict-intent-bench-") as tmp:
        lake = Path(tmp) / "lake"
        build_lake(lake, args.traces)
        add_parent_spans(lake, args.parent_share)
        runs = alternate(args, lake, Path(tmp))
    print(f"lake: {args.traces} traces, {args.parent_share:.0%} keyed on a parent span; {args.repeats} repeats "
          f"alternating; load average {os.getloadavg()[0]:.1f}")
    for step in ("sample_cpu_s", "index_step_cpu_s", "normalize_cpu_s"):
        old, new = (statistics.median(r[step] for r in runs[k]) for k in ("baseline", "this"))
        print(f"{step:18} baseline {old:7.3f}  this {new:7.3f}  ratio {new / old:.2f}")
    for outcome in ("sampled_unassigned", "indexed", "index_missing"):
        print(f"{outcome:18} baseline {runs['baseline'][0][outcome]:7d}  this {runs['this'][0][outcome]:7d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
