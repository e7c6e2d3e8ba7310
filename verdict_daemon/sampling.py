"""Sampling: pick traces from the span lake for judging, stratified per cluster and window.

A trace's graded call is its last LLM call (by end time) that is neither judge workload nor an
error. Within each (stratum, window) the traces are ranked by md5(seed:trace_id), so the same lake
always yields the same picks; a stratum already holding k sampled traces gets its next
`per_cluster_per_window - k` by rank. The global budget (`max_traces_per_run`) is shared fairly:
every stratum's first pick comes before any stratum's second. The stratum is the intent key for
now (`unassigned` when a call carries none); the cluster registry will take over this seam.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from collector import lake
from collector.views import NOT_INFERENCE, tenant_dir
from verdict.tenancy import validate_tenant_id
from verdict_daemon.config import Sampling
from verdict_daemon.errors import DaemonError
from verdict_daemon.evaluators import JUDGE_WORKLOAD
from verdict_daemon.material import graded_texts
from verdict_daemon.state import StateStore, insert_rows

log = logging.getLogger("verdict.daemon")

UNASSIGNED = "unassigned"
_SAMPLED_COLUMNS = ("tenant_id", "trace_id", "span_id", "intent_key", "stratum", "window_start", "started_at",
                    "query", "response", "context", "sampled_at")


@dataclass(frozen=True)
class SampleReport:
    eligible: int  # unsampled eligible traces seen in the lookback
    sampled: int  # newly sampled by this run
    strata: int  # (stratum, window) cells that received traces
    budget_limited: bool  # the global budget cut this run short


def _naive_utc(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo else at


def _segment_files(data_dir: Path, tenant: str, start: datetime, end: datetime) -> list[str]:
    """Segments of the date partitions overlapping [start, end): partition pruning by hand."""
    root = tenant_dir(data_dir, tenant)
    files: list[str] = []
    day = start.date()
    while day <= end.date():
        files += [str(p) for p in sorted((root / f"date={day.isoformat()}").glob(f"*{lake.SEGMENT_SUFFIX}"))]
        day += timedelta(days=1)
    return files


def sample(store: StateStore, data_dir: Path, tenant: str, config: Sampling, as_of: datetime) -> SampleReport:
    import duckdb

    tenant = validate_tenant_id(tenant)
    end = _naive_utc(as_of)
    start = end - timedelta(days=config.lookback_days)
    files = _segment_files(data_dir, tenant, start, end)
    if not files:
        return SampleReport(0, 0, 0, False)
    with store.transaction() as con:
        done = con.sql(
            "SELECT trace_id, stratum, window_start FROM sampled_traces WHERE tenant_id = ? AND window_start >= ?",
            params=[tenant, start - timedelta(hours=config.window_hours)]).to_arrow_table()
    window_s = int(config.window_hours * 3600)
    lake_con = duckdb.connect(config={"threads": 2})
    try:
        rows, eligible = _pick(lake_con, done, files, start, end, window_s, config)
    except duckdb.Error as exc:  # an unreadable segment: this tenant waits, the others carry on
        raise DaemonError("storage_error", f"span lake of tenant {tenant}: {str(exc).splitlines()[0][:300]}") from None
    finally:
        lake_con.close()
    now = datetime.now(UTC).replace(tzinfo=None)
    records = [(tenant, trace_id, span_id, intent, stratum, window_start, started_at,
                *graded_texts(inputs, outputs, system), now)
               for trace_id, span_id, intent, stratum, window_start, started_at, inputs, outputs, system in rows]
    if records:
        with store.transaction() as con:
            insert_rows(con, "sampled_traces", _SAMPLED_COLUMNS, records)
    strata = len({(r[4], r[5]) for r in records})
    log.info("sample tenant=%s eligible=%d sampled=%d strata=%d", tenant, eligible, len(records), strata)
    return SampleReport(eligible, len(records), strata, eligible > len(records))


def _pick(lake_con, done, files: list[str], start: datetime, end: datetime, window_s: int,
          config: Sampling) -> tuple[list[tuple], int]:
    """The new picks with their content, and how many unsampled eligible traces there were."""
    lake_con.register("done", done)
    quoted = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    not_inference = ", ".join(f"'{op}'" for op in NOT_INFERENCE)
    lake_con.execute(f"""
        CREATE TEMP TABLE picked AS
        WITH calls AS (
            SELECT trace_id, span_id, start_time, end_time, intent_key
            FROM read_parquet([{quoted}], union_by_name = true)
            WHERE start_time >= $start AND start_time < $end
              AND operation IS NOT NULL AND operation NOT IN ({not_inference})
              AND coalesce(workload, '') <> '{JUDGE_WORKLOAD}'
              AND status_code <> 'ERROR' AND error_type IS NULL
            QUALIFY row_number() OVER (PARTITION BY trace_id, span_id ORDER BY received_at) = 1
        ),
        traces AS (
            SELECT trace_id, arg_max(span_id, end_time) AS span_id, min(start_time) AS started_at,
                   arg_max(intent_key, end_time) AS intent_key
            FROM calls GROUP BY trace_id
        ),
        candidates AS (
            SELECT t.*, coalesce(t.intent_key, '{UNASSIGNED}') AS stratum,
                   to_timestamp(floor(epoch(t.started_at) / $w) * $w)::TIMESTAMP AS window_start,
                   md5($seed || ':' || t.trace_id) AS draw
            FROM traces t ANTI JOIN done d ON d.trace_id = t.trace_id
        ),
        held AS (SELECT stratum, window_start, count(*) AS n FROM done GROUP BY ALL),
        ranked AS (
            SELECT c.*, row_number() OVER (PARTITION BY c.stratum, c.window_start ORDER BY c.draw) AS pick,
                   coalesce(h.n, 0) AS held
            FROM candidates c LEFT JOIN held h USING (stratum, window_start)
        )
        SELECT trace_id, span_id, started_at::TIMESTAMP AS started_at, intent_key, stratum, window_start,
               pick, draw
        FROM ranked WHERE pick + held <= $target
        """, {"start": start, "end": end, "w": window_s, "seed": str(config.seed),
              "target": config.per_cluster_per_window})
    eligible = lake_con.execute("SELECT count(*) FROM picked").fetchone()[0]
    rows = lake_con.execute(f"""
        WITH chosen AS (SELECT * FROM picked ORDER BY pick, draw LIMIT {config.max_traces_per_run}),
        content AS (
            SELECT trace_id, span_id, input_messages, output_messages, system_instructions
            FROM read_parquet([{quoted}], union_by_name = true)
            WHERE start_time >= $start AND start_time < $end
              AND span_id IN (SELECT span_id FROM chosen)
            QUALIFY row_number() OVER (PARTITION BY trace_id, span_id ORDER BY received_at) = 1
        )
        SELECT c.trace_id, c.span_id, c.intent_key, c.stratum, c.window_start, c.started_at,
               x.input_messages, x.output_messages, x.system_instructions
        FROM chosen c JOIN content x USING (trace_id, span_id)
        ORDER BY c.pick, c.draw
        """, {"start": start, "end": end}).fetchall()
    return rows, eligible
