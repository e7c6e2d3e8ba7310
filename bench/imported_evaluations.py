"""Benchmark: one drift look's read of an imported evaluation series (`imported_table`, `--registry-mode off`)
against a baseline checkout, on one lake, in one run.

    nice .venv/bin/python bench/imported_evaluations.py [--traces 100000] [--parent-share 0.2] [--evaluated 0.2] \
        [--repeats 3] --baseline DIR

The lake is bench/intent_rule.py's (bench/daemon_cycle.py's `--traces` over 9 days, 2 tenants, `--parent-share` of
the traces keyed on an app span around the call) plus one `gen_ai.evaluation.result` record for `--evaluated` of the
traces (an offline suite's). Each repeat reads both tenants' series in fresh interpreters alternating baseline and
this checkout (`git archive main | tar -x -C DIR` into an empty DIR gives a baseline). Printed: the median process
CPU seconds (DuckDB's threads included) of each and their ratio, the rows read, and how many rows each puts in
another cluster than the sampler's key for the trace (the baseline files parent-keyed traces by their app span's
key, which is the same here: the rows differ where the earliest keyed span is not the call's nearest).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.daemon_cycle import NOW, TENANTS, build_lake  # noqa: E402
from bench.intent_rule import add_parent_spans, alternate, arguments  # noqa: E402

EVALUATOR = "offline-suite"

# argv as bench/intent_rule.run_child passes it; prints one JSON line.
_CHILD = f"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from datetime import datetime
from pathlib import Path
from collector.lake_union import LakeUnion
from verdict.tenancy import TenantId
from verdict_daemon.config import Drift, ImportedEvaluation
from verdict_daemon.service.imported_evaluations import ImportedSeries, imported_table

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

series = ImportedSeries(ImportedEvaluation(name="suite", evaluator="{EVALUATOR}", evaluations=("resolved",)))
as_of = datetime.fromisoformat(sys.argv[4])
t0 = cpu()
tables = [imported_table(LakeUnion.of(Path(sys.argv[2])), TenantId(t), series, Drift(), as_of) for t in sys.argv[5:]]
t1 = cpu()
rows = [(r, c) for t in tables for r, c in zip(t.column("trace_id").to_pylist(), t.column("cluster").to_pylist())]
print(json.dumps({{"cpu_s": t1 - t0, "clusters": rows}}))  # pairs, not an object: run_child reads the last brace
"""


def add_records(data_dir: Path, share: float) -> None:
    """One `resolved` record of EVALUATOR for `share` of each tenant's traces (by trace id hash), landed an hour
    before NOW with the collector's writer."""
    import duckdb
    import pyarrow as pa

    from collector import lake
    from collector.schema import arrow_schema
    from verdict import semconv as sc

    at = NOW.replace(tzinfo=None).isoformat()
    con = duckdb.connect()
    for tenant in TENANTS:
        spans = str(data_dir / "spans" / f"tenant={tenant}" / "date=*" / "*.parquet").replace("'", "''")
        table = con.sql(f"""
            SELECT md5(trace_id) AS record_id, trace_id, TIMESTAMP '{at}' - INTERVAL 1 HOUR AS time, 0 AS sequence,
                   TIMESTAMP '{at}' - INTERVAL 1 HOUR AS received_at, '{sc.EVENT_EVALUATION_RESULT}' AS event_name,
                   json_object('{sc.EVALUATION_NAME}', 'resolved', '{sc.EVALUATION_SCORE_LABEL}', 'pass',
                               '{sc.EVALUATOR_NAME}', '{EVALUATOR}')::VARCHAR AS attributes
            FROM (SELECT DISTINCT trace_id FROM read_parquet('{spans}') WHERE hash(trace_id) % 1000 < {int(share * 1000)})
            """).to_arrow_table()
        schema = arrow_schema("logs")
        columns = {f.name: table.column(f.name).cast(f.type) if f.name in table.column_names
                   else pa.nulls(table.num_rows, f.type) for f in schema}
        day = (NOW.replace(tzinfo=None)).date().isoformat()
        lake.write_segment(data_dir, tenant, day, pa.table(columns, schema=schema), table_name="logs")
    con.close()


def main() -> int:
    args = arguments(__doc__, ("--evaluated", 0.2))
    with tempfile.TemporaryDirectory(prefix="verdict-imported-bench-") as tmp:
        lake = Path(tmp) / "lake"
        build_lake(lake, args.traces)
        add_parent_spans(lake, args.parent_share)
        add_records(lake, args.evaluated)
        runs = alternate(args, lake, Path(tmp), _CHILD)
    print(f"lake: {args.traces} traces, {args.parent_share:.0%} keyed on a parent span, {args.evaluated:.0%} "
          f"evaluated; {args.repeats} repeats alternating; load average {os.getloadavg()[0]:.1f}")
    old, new = (statistics.median(r["cpu_s"] for r in runs[k]) for k in ("baseline", "this"))
    print(f"imported_table cpu_s  baseline {old:7.3f}  this {new:7.3f}  ratio {new / old:.2f}")
    before, after = (dict(runs[k][0]["clusters"]) for k in ("baseline", "this"))
    print(f"rows                  baseline {len(before):7d}  this {len(after):7d}  "
          f"in another cluster {sum(before.get(t) != c for t, c in after.items())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
