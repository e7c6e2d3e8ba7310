"""The analysis index: per-trace fields that clustering needs, derived once from the span lake.

One row per trace (in `state.duckdb`, table `analysis_index`): the graded call's span id, the trace
start, its workload, the intent key with its status (`valid`, `missing`, `invalid` + redacted
reason), the redacted first user message and its content hash (what semantic clustering embeds and
caches by). A trace is taken as the sampler sees it (collector `llm_calls` view: each span once;
judge workload and failed calls excluded; a call's intent key by the intent rule, service/intent_rule.py: its own,
else its nearest keyed ancestor span's). Rows are written once and never rewritten, so every
later fit and assignment reads the same fields for a trace.

`normalize` backfills in bounded pages (oldest traces first); `pending` counts lake traces before a
cutoff that the index does not hold yet (fit and assign refuse to run on a partial index).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TypeVar, cast

from collector.lake import SEGMENT_SUFFIX
from collector.lake_reads import LakeChanged, read_fresh
from collector.lake_union import LakeUnion, read_errors
from collector.views import INFERENCE_OPERATIONS, view_statements
from verdict.intent import validate_intent_key
from verdict.redact import redact_text
from verdict.tenancy import TenantId
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.service.evaluators import JUDGE_WORKLOAD
from verdict_daemon.service.intent_rule import WALK_PARENT, inherit_intents, with_intents
from verdict_daemon.service.material import message_text, parse_messages
from verdict_daemon.store.clusters import ClusterRepository, IndexRow
from verdict_daemon.store.state import StateStore

T = TypeVar("T")
MAX_PAGE = 50_000  # hard ceiling of one normalize page (bounded memory and transaction size)
MAX_MESSAGE_CHARS = 2_000  # the stored first user message is cut here before redaction and hashing


# An eligible call: model inference, not judge workload, not failed (the sampler's rule).
_ELIGIBLE = (f"operation IN ({', '.join(repr(op) for op in INFERENCE_OPERATIONS)}) "
             f"AND coalesce(workload, '') <> '{JUDGE_WORKLOAD}' AND status_code <> 'ERROR' AND error_type IS NULL")


def trace_rows(con, calls: str) -> None:
    """TEMP TABLE todo: one row per eligible trace of `llm_calls` whose calls `calls` keeps (a join on trace_id), its
    intent key and refusal by the intent rule the sampler reads (service/intent_rule.py). The calls are evaluated
    once, narrow: the walk and the aggregate both read them."""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE calls AS
        SELECT trace_id, span_id, start_time, end_time, workload, intent_key, intent_key_error,
               {WALK_PARENT} AS parent_span_id
        FROM llm_calls {calls} WHERE {_ELIGIBLE}""")
    inherit_intents(con, "calls")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE todo AS
        SELECT trace_id, arg_max(span_id, end_time) AS span_id, min(start_time)::TIMESTAMP AS started_at,
               arg_max(workload, end_time) AS workload, arg_max(intent_key, end_time) AS intent_key,
               arg_max(intent_key_error, end_time) AS key_error
        FROM ({with_intents("calls")}) GROUP BY trace_id""")


# The page's rows with the graded span's input messages (read only for the page's spans).
_PAGE_ROWS = """
    SELECT p.trace_id, p.span_id, p.started_at, p.workload, p.intent_key, p.key_error, c.input_messages
    FROM page p LEFT JOIN (SELECT trace_id, span_id, any_value(input_messages) AS input_messages
                           FROM llm_calls WHERE span_id IN (SELECT span_id FROM page) GROUP BY ALL) c
      USING (trace_id, span_id)
    ORDER BY p.started_at, p.trace_id"""


@dataclass(frozen=True)
class NormalizeReport:
    indexed: int  # rows this page added
    remaining: int  # lake traces still missing from the index after this page
    total_indexed: int  # rows the tenant's index holds now

    @property
    def complete(self) -> bool:
        return self.remaining == 0

    def to_dict(self) -> dict:
        return {"indexed": self.indexed, "remaining": self.remaining, "total_indexed": self.total_indexed,
                "complete": self.complete}


def first_user_message(input_messages: str | None) -> str | None:
    """The redacted text of the first user message (None when there is none)."""
    users = [m for m in parse_messages(input_messages) if m.get("role") == "user"]
    text = message_text(users[0]).strip() if users else ""
    return redact_text(text[:MAX_MESSAGE_CHARS]) if text else None


def content_hash(text: str | None) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest()[:32] if text is not None else None


def key_status(intent_key: str | None, key_error: str | None) -> tuple[str | None, str, str | None]:
    """(key, status, reason). Keys are checked again here: a lake written by an older collector may hold
    keys the current rule refuses; the reason is redacted because it may quote the key."""
    if intent_key is None:
        return (None, "invalid", key_error) if key_error else (None, "missing", None)
    try:
        return validate_intent_key(intent_key), "valid", None
    except ValueError as exc:
        return None, "invalid", redact_text(str(exc))


def _segments(lake: LakeUnion, tenant: TenantId, *, first: date | None = None, last: date | None = None) -> list[str]:
    """The tenant's segment files of the date partitions from `first` through `last` (the collector
    partitions spans by their start date, UTC), over every lake of the union."""
    low, high = (first or date.min).isoformat(), (last or date.max).isoformat()
    try:
        files = lake.files("spans", tenant, f"*{SEGMENT_SUFFIX}", None)
    except read_errors() as exc:  # a directory without permission; no such bucket, store unreachable
        raise ClusterError("storage_error", f"span lake of tenant {tenant}: {type(exc).__name__}: "
                           + (str(exc).splitlines() or [""])[0][:300]) from None
    return sorted(f for f in files if low <= _day(f) <= high)


def _day(segment: str) -> str:
    """The segment's date partition, ISO."""
    return segment.rsplit("/", 2)[-2].removeprefix("date=")


def _read(files: list[str]) -> str:
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    return f"SELECT * FROM read_parquet([{listed}], union_by_name = true)"


def _lake(lake: LakeUnion, tenant: TenantId, files: list[str] | None = None, ancestors: list[str] | None = None):
    """A lake connection with the `llm_calls` and `spans` views: the whole lake through the collector's views, or
    exactly `files` (`spans`: `ancestors`) read as they are. Those may hold exporter-retry copies of a span, which
    the collector's view drops; a copy repeats its span exactly, so the per-trace aggregates, the intent rule's walk
    and the graded span's messages come out the same."""
    con = lake.connect({"threads": 2})
    try:
        if files is None:
            for statement in view_statements(lake, tenant):
                con.execute(statement)
        else:
            con.execute(f"CREATE VIEW llm_calls AS {_read(files)}")
            con.execute(f"CREATE VIEW spans AS {_read(ancestors or files)}")
    except BaseException:
        con.close()
        raise
    return con


def _fresh(lake: LakeUnion, tenant: TenantId, read: Callable[[LakeUnion], T]) -> T:
    """`read(snapshot)` over the lake, again over a fresh snapshot when a segment it listed was purged before it was
    read (collector.lake_reads); DuckDB's errors (an unreadable segment) and a lake that kept changing: storage_error."""
    import duckdb

    try:
        return read_fresh(lake, read)
    except LakeChanged as exc:
        raise ClusterError("storage_error", f"span lake of tenant {tenant}: {exc}") from None
    except duckdb.Error as exc:
        raise ClusterError("storage_error", f"span lake of tenant {tenant}: {str(exc).splitlines()[0][:300]}") from None


def _unindexed(store: StateStore, lake: LakeUnion, tenant: TenantId, limit: int) -> tuple[int, list[tuple]]:
    """How many eligible traces the index lacks, and the `limit` oldest of them with their page rows."""
    _segments(lake, tenant)  # lists every lake first (the views reuse the listing): a store error is closed
    done = ClusterRepository(store).indexed_trace_ids(tenant)

    def read(snapshot: LakeUnion) -> tuple[int, list[tuple]]:
        con = _lake(snapshot, tenant)
        try:
            con.register("done", done)
            trace_rows(con, "ANTI JOIN done USING (trace_id)")
            todo = con.execute("SELECT count(*) FROM todo").fetchone()[0]
            return todo, con.execute("WITH page AS (SELECT * FROM todo ORDER BY started_at, trace_id LIMIT $limit)"
                                     + _PAGE_ROWS, {"limit": limit}).fetchall()
        finally:
            con.close()

    return _fresh(lake, tenant, read)


def pending(store: StateStore, lake: LakeUnion | Path, tenant: TenantId, cutoff: datetime) -> int:
    """Lake traces started before `cutoff` (naive UTC) that the index does not hold. Reads only the
    few columns it needs from the date partitions up to the cutoff: fit and assign call it every time."""
    lake = LakeUnion.of(lake)
    if not _segments(lake, tenant, last=cutoff.date()):
        return 0
    done = ClusterRepository(store).indexed_trace_ids(tenant)

    def read(snapshot: LakeUnion) -> int:
        files = _segments(snapshot, tenant, last=cutoff.date())
        con = snapshot.connect({"threads": 2})
        try:
            con.register("done", done)
            return cast(int, con.execute(f"""
                SELECT count(DISTINCT trace_id) FROM read_parquet($files, union_by_name = true)
                WHERE start_time < $cutoff AND {_ELIGIBLE} AND trace_id NOT IN (SELECT trace_id FROM done)""",
                               {"files": files, "cutoff": cutoff}).fetchone()[0])  # a count: one row
        finally:
            con.close()

    return _fresh(lake, tenant, read)


def require_indexed(store: StateStore, lake: LakeUnion | Path, tenant: TenantId, cutoff: datetime) -> None:
    missing = pending(store, lake, tenant, cutoff)
    if missing:
        raise ClusterError("analysis_index_pending",
                           f"{missing} trace(s) started before {cutoff.isoformat()} are not in the analysis index "
                           "yet; run `verdict cluster ... normalize` until it prints \"complete\": true",
                           {"pending": missing})


def normalize(store: StateStore, lake: LakeUnion | Path, tenant: TenantId, limit: int) -> NormalizeReport:
    """Index the `limit` oldest traces the index lacks (one page)."""
    if not 1 <= limit <= MAX_PAGE:
        raise ClusterError("invalid_config", f"--limit must be between 1 and {MAX_PAGE}, got {limit}")
    todo, rows = _unindexed(store, LakeUnion.of(lake), tenant, limit)
    written, total = _write(store, tenant, rows)
    return NormalizeReport(written, todo - len(rows), total)


def index_traces(store: StateStore, lake: LakeUnion | Path, tenant: TenantId, traces: list[tuple[str, datetime]]) -> int:
    """Index these (trace_id, started_at) traces, which the index lacks (the daemon's sampled traces).
    Runs every daemon tick, so it reads calls only from the date partitions from the earliest start on (every
    call of a trace starts at or after the trace's start), and the spans a call inherits its intent key from
    (which start before it) from the partition before that on: an agent or app span started up to a day before
    its first call, as the sampler reads a window before its lookback."""
    import pyarrow as pa

    lake = LakeUnion.of(lake)
    if not traces:
        return 0
    first = min(started for _, started in traces).date()
    wanted = pa.table({"trace_id": pa.array([t for t, _ in traces], pa.string())})

    def read(snapshot: LakeUnion) -> list[tuple]:
        ancestors = _segments(snapshot, tenant, first=first - timedelta(days=1))
        files = [f for f in ancestors if _day(f) >= first.isoformat()]
        if not files:
            return []
        con = _lake(snapshot, tenant, files, ancestors)
        try:
            con.register("wanted", wanted)
            trace_rows(con, "SEMI JOIN wanted USING (trace_id)")
            rows: list[tuple] = con.execute("WITH page AS (SELECT * FROM todo)" + _PAGE_ROWS).fetchall()
            return rows
        finally:
            con.close()

    rows = _fresh(lake, tenant, read)
    return _write(store, tenant, rows)[0] if rows else 0


def _write(store: StateStore, tenant: TenantId, rows: list[tuple]) -> tuple[int, int]:
    """(rows added, rows the tenant's index holds now); a row a concurrent writer added first is kept."""
    records = []
    for trace_id, span_id, started_at, workload, intent_key, key_error, input_messages in rows:
        text = first_user_message(input_messages)
        key, status, reason = key_status(intent_key, key_error)
        records.append(IndexRow(trace_id, span_id, started_at, workload, key, status, reason, text, content_hash(text)))
    return ClusterRepository(store).add_to_index(tenant, records, datetime.now(UTC).replace(tzinfo=None))
