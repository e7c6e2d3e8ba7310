"""Sampling: pick traces from the span lake for judging, stratified per cluster and window.

Candidate calls and their content come from the collector's `llm_calls` view (collector/views.py),
built over the lookback's date partitions only: log-event messages attached to their span, a call
described by two instrumentations seen once.

A trace's graded call is its last LLM call (by end time) that is neither judge workload nor an
error. Each trace gets a draw u = md5(seed:trace_id) read as a number in [0, 1): independent of when
the trace arrived, so a rule on u alone samples every hour of a window alike, and the same lake
always yields the same picks. Per (stratum, window), with k = `per_cluster_per_window`:

- an open window (the current one) takes every trace with u < rate, the rate fixed from the
  previous window's volume, k / N(previous) (for a stratum's first window: k over the volume
  extrapolated from the elapsed part); traces are picked as they arrive, hour by hour, and the
  expected sample at the close is k whatever the time-of-day pattern of the traffic;
- a closed window is topped up to the bottom-m by u over all its traces, m = max(k, rank of the
  largest u already picked): a uniform random sample of the window (simple random sampling given
  m), late traces re-ranked into it as they land. A window first seen closed gets exactly its
  bottom-k.
No pick is ever withdrawn (judged traces stay judged). A window never holds more than
`CEILING_FACTOR * k` picks (a traffic surge against the previous window's volume): the ceiling
keeps the judge budget bounded, filled by u, and is logged. The global budget (`max_traces_per_run`)
is shared fairly: every stratum's first pick comes before any stratum's second. Every window
overlapping the lookback is read whole (and the one before it, for its volume). The stratum is the
intent key for now (`unassigned` when a call carries none); the cluster registry will take over
this seam. A call's key is by the intent rule both registry modes read (service/intent_rule.py): its own, else
that of its nearest ancestor span carrying one (another instrumentation's LLM span under the app's span stamped by
`intent_context`).

A pick that is a turn of a conversation (collector/conversations.py, cut by `[conversations] inactivity_minutes`)
is stored with its conversation so far: the earlier turns' graded texts within `[conversations] history_tokens`
(service/history.py), read from the lookback like the picks' own, so a judge run after a restart reads the same.
A pick whose graded call carries tool calls or results, or whose trace has tool spans, is stored with its tool
trajectory (service/trajectory.py), from the same messages and the picks' tool spans, beside the history.

A trace whose graded call the SDK exported without content under overload (`verdict.content_omitted`, per reason:
`export_backlog`, `content_error`; docs/tracing.md "Under overload") cannot be judged: it is left out of the draw
and of the volumes the rates are computed from, and counted per (stratum, window) and reason
(`SampleReport.content_omitted`). A window whose omitted share exceeds OMITTED_SHARE_WARNING is named in a
warning: its sample stands for the calls that kept their content only, so a traffic spike is under-represented.

When an evaluator judges conversations (`judge_conversations`), closed conversations are sampled too, by the same
rule with the conversation as the unit (service/conversation.py): its draw is on its unit id, its stratum its first
turn's intent (the intent that turn has as a turn: its graded call's key, inherited like any turn's), its window that of its first turn's start; closed as of the run's `as_of` (`conversations_at`), whose
first turn starts in the lookback (the lake is read from `inactivity` before it, so no earlier turn of it is
missed). Each is stored with every turn's graded texts, once: a closed conversation never reopens and its unit id
stays.

A tenant with spans in the lookback but no recognised LLM call gets a warning naming the
instrumentation scopes and their span counts (`SampleReport.unrecognised_scopes`), never a silent 0. Every run
also counts, over the lookback's date partitions, the rows the identity rule merged as duplicates (per rule) and
the spans left out as non-inference (per operation): `SampleReport.call_audit` (collector.call_audit), so a
change in the number of calls can be explained. The rule is evaluated once for both (views.materialize_duplicates).

Memory is bounded whatever the lookback's volume: DuckDB runs under `memory_limit_mb` and spills past it to a
private temp directory; the calls are kept with only the columns the draw reads; per (stratum, window) the draw
keeps a top-n of the lowest draws (O(k) rows) instead of ranking every trace; messages are read for the picks
only, one date partition at a time.
"""

from __future__ import annotations

import json
import logging
import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from collector.call_audit import CallAudit, read_call_audit
from collector.lake import SEGMENT_SUFFIX
from collector.lake_reads import LakeChanged, read_fresh
from collector.lake_union import LakeUnion, read_errors
from collector.views import materialize_duplicates, view_statements
from verdict.tenancy import TenantId
from verdict_daemon.clustering.versions import UNASSIGNED
from verdict_daemon.config import Conversations, Sampling
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.conversation import CONVERSATION, UNIT_PREFIX, Transcript
from verdict_daemon.service.evaluators import JUDGE_WORKLOAD
from verdict_daemon.service.history import History, Turn, most_turns
from verdict_daemon.service.intent_rule import WALK_PARENT, inherit_intents, with_intents
from verdict_daemon.service.material import background_json, graded_texts, graded_trajectory
from verdict_daemon.service.trajectory import ToolSpan, tool_span
from verdict_daemon.store.samples import SampledTrace, insert_samples, picks_since
from verdict_daemon.store.state import StateStore

log = logging.getLogger("verdict.daemon")

DEFAULT_CONVERSATIONS = Conversations()  # [conversations] as a config without the section has it
CEILING_FACTOR = 2  # a window's picks never exceed this many times per_cluster_per_window
# A (stratum, window) whose traces lost their content in more than this share is reported incomplete.
OMITTED_SHARE_WARNING = 0.05
# u: the first 13 hex digits (52 bits, exact in a double) of the draw, scaled to [0, 1)
_U = "('0x' || substr({draw}, 1, 13))::BIGINT / 4503599627370496.0"


@dataclass(frozen=True)
class OmittedCell:
    """A (stratum, window) of the lookback with traces whose graded call was exported without content."""
    stratum: str
    window_start: datetime
    traces: int  # gradable traces of the cell, omitted ones included
    omitted: tuple[tuple[str, int], ...]  # (reason, traces), by reason

    @property
    def share(self) -> float:
        return sum(n for _, n in self.omitted) / self.traces

    def as_json(self) -> dict:
        return {"stratum": self.stratum, "window_start": self.window_start.isoformat(), "traces": self.traces,
                "content_omitted": dict(self.omitted), "share": round(self.share, 4)}


@dataclass(frozen=True)
class SampleReport:
    eligible: int  # unsampled eligible traces seen in the lookback
    sampled: int  # newly sampled by this run
    strata: int  # (stratum, window) cells that received traces
    budget_limited: bool  # the global budget cut this run short
    at_ceiling: int = 0  # (stratum, window) cells whose traffic hit the per-window ceiling this run
    # (scope name, spans) when the lookback has spans but not one recognised LLM call; else empty
    unrecognised_scopes: tuple[tuple[str, int], ...] = ()
    call_audit: CallAudit = CallAudit()  # why spans of the lookback are not llm_calls rows
    omitted_cells: tuple[OmittedCell, ...] = ()  # cells with traces left out of the draw for lack of content
    conversations: int = 0  # closed conversations newly sampled as units (judge_conversations)

    @property
    def content_omitted(self) -> dict[str, int]:
        """Traces of the lookback left out of the draw because their content was omitted, per reason."""
        totals: dict[str, int] = {}
        for cell in self.omitted_cells:
            for reason, n in cell.omitted:
                totals[reason] = totals.get(reason, 0) + n
        return totals

    def incomplete(self) -> list[OmittedCell]:
        return [c for c in self.omitted_cells if c.share > OMITTED_SHARE_WARNING]

    def warnings(self) -> list[str]:
        """The operator-facing sentences: a lake of spans no dialect recognised as LLM calls; windows whose
        sample misses more than OMITTED_SHARE_WARNING of the traces, exported without content."""
        out = []
        if self.unrecognised_scopes:
            scopes = ", ".join(f"{name or '(no scope)'} ({n} spans)" for name, n in self.unrecognised_scopes)
            out.append(f"spans but no recognised LLM call in the lookback: {scopes}; check that the instrumentation "
                       "records GenAI attributes (docs/tracing.md lists the supported peers)")
        if incomplete := self.incomplete():
            cells = ", ".join(f"{c.stratum} @ {c.window_start.isoformat()} ({c.share:.0%} of {c.traces})"
                              for c in incomplete[:10])
            out.append(f"{len(incomplete)} window(s) incomplete, their traces exported without content "
                       f"(verdict.content_omitted {self.content_omitted}) left out of the sample: {cells}; the SDK "
                       "shed content under overload (docs/tracing.md, \"Under overload\")")
        return out


def _naive_utc(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo else at


def _window_floor(at: datetime, window: timedelta) -> datetime:
    """The start of the epoch-aligned window holding `at` (the same grid as the SQL below)."""
    epoch = datetime(1970, 1, 1)
    return epoch + window * ((at - epoch) // window)


def _days(start: datetime, end: datetime) -> list[date]:
    """The date partitions overlapping [start, end]: the only ones the sampler reads."""
    return [start.date() + timedelta(days=n) for n in range((end.date() - start.date()).days + 1)]


def sample(store: StateStore, lake: LakeUnion | Path, tenant: TenantId, config: Sampling, as_of: datetime,
           conversations: Conversations = DEFAULT_CONVERSATIONS, judge_conversations: bool = False) -> SampleReport:
    """Sample the tenant's traces from `lake`: a data dir, or the union of every lake that holds the tenant
    (read once per call: a fresh union sees the segments landed since the last one); with `judge_conversations`
    also its closed conversations."""
    lake = LakeUnion.of(lake)
    end = _naive_utc(as_of)
    window = timedelta(hours=config.window_hours)
    start = _window_floor(end - timedelta(days=config.lookback_days), window)  # the oldest window, read whole
    # Read from a window before the oldest (its volume), and for conversations at least `inactivity` before it too:
    # a conversation starting in the lookback then shows its first turn, never a later one as its first.
    inactivity = timedelta(minutes=conversations.inactivity_minutes) if judge_conversations else window
    days = _days(start - max(window, inactivity), end)
    try:  # the listing, kept by `lake` for the views below
        if not lake.files("spans", tenant, f"*{SEGMENT_SUFFIX}", days):
            return SampleReport(0, 0, 0, False)
    except read_errors() as exc:  # a directory without permission; no such bucket, store unreachable
        raise DaemonError("storage_error", f"span lake of tenant {tenant}: {type(exc).__name__}: "
                          + (str(exc).splitlines() or [""])[0][:300]) from None
    return _sample(store, lake, tenant, config, conversations, (start, end), days, window, judge_conversations)


@dataclass(frozen=True)
class _LakeRead:
    """What one sample step reads of the lake: the picks with their content and what is reported about the rest."""

    eligible: int
    at_ceiling: int
    omitted: tuple[OmittedCell, ...]
    unrecognised: tuple[tuple[str, int], ...]
    rows: list[tuple]  # (trace_id, span_id, intent, stratum, window_start, started_at, inputs, outputs, system)
    tools: dict[str, list[ToolSpan]]
    histories: dict[str, History]
    units: list[tuple]  # conversation units: _transcripts
    audit: CallAudit


def _sample(store: StateStore, lake: LakeUnion, tenant: TenantId, config: Sampling, conversations: Conversations,
            span: tuple[datetime, datetime], days: list[date], window: timedelta,
            judge_conversations: bool) -> SampleReport:
    import duckdb

    start, end = span
    done = picks_since(store, tenant, start)
    done_conversations = picks_since(store, tenant, start, CONVERSATION) if judge_conversations else None

    def read(snapshot: LakeUnion) -> _LakeRead:
        # Capped: past the limit DuckDB spills the per-trace work to a directory of this run's own, so the
        # sampler's memory does not grow with the lookback's volume (docs/daemon.md, "Tests and figures").
        spill = tempfile.TemporaryDirectory(prefix="verdict-sample-")
        lake_con = snapshot.connect({"threads": 2, "preserve_insertion_order": False,
                                     "memory_limit": f"{config.memory_limit_mb}MB", "temp_directory": spill.name})
        try:
            for statement in view_statements(snapshot, tenant, days):  # `spans` and `llm_calls` over the lookback
                lake_con.execute(statement)
            materialize_duplicates(lake_con)
            _candidates(lake_con, start - window, end)
            inherit_intents(lake_con, "candidates")
            eligible, at_ceiling = _pick(lake_con, done, start, end, window.total_seconds(), config, _TURNS, "chosen")
            omitted = _omitted_cells(lake_con, start, window.total_seconds())
            unrecognised = () if eligible else _unrecognised_scopes(lake_con, start, end)
            _conversation_turns(lake_con, conversations)  # before _content narrows the views to one day
            _closed_conversations(lake_con, conversations, start, end, judge_conversations)  # the same
            if done_conversations is not None:
                _pick(lake_con, done_conversations, start, end, window.total_seconds(), config,
                      "SELECT * FROM conversation_units", "chosen_conversations")
                lake_con.execute("DELETE FROM conversation_members WHERE unit_id NOT IN "
                                 "(SELECT trace_id FROM chosen_conversations)")  # content is read for the picks only
            rows = _content(lake_con, snapshot, tenant)
            return _LakeRead(eligible, at_ceiling, omitted, unrecognised, rows, _tool_spans(lake_con),
                             _histories(lake_con, conversations.history_tokens),
                             _transcripts(lake_con, conversations.conversation_tokens)
                             if done_conversations is not None else [],
                             read_call_audit(lake_con, start.date(), end.date()))
        finally:
            lake_con.close()
            spill.cleanup()

    try:  # nothing is written before the read is whole: a read that met a purged segment starts again
        got = read_fresh(lake, read)
    except LakeChanged as exc:
        raise DaemonError("storage_error", f"span lake of tenant {tenant}: {exc}") from None
    except duckdb.Error as exc:  # an unreadable segment: this tenant waits, the others carry on
        raise DaemonError("storage_error", f"span lake of tenant {tenant}: {str(exc).splitlines()[0][:300]}") from None
    rows, tools, histories, units, audit = got.rows, got.tools, got.histories, got.units, got.audit
    now = datetime.now(UTC).replace(tzinfo=None)
    records = [SampledTrace(tenant, trace_id, span_id, intent, stratum, window_start, started_at,
                            *graded_texts(inputs, outputs, system), now,
                            background_json(histories.get(trace_id), graded_trajectory(inputs, outputs, tools.get(trace_id, []))))
               for trace_id, span_id, intent, stratum, window_start, started_at, inputs, outputs, system in rows]
    records += [SampledTrace(tenant, unit, span_id, intent, stratum, window_start, started_at, query, response, "",
                             now, background_json(None, None, transcript), CONVERSATION)
                for unit, span_id, intent, stratum, window_start, started_at, query, response, transcript in units]
    insert_samples(store, records)
    strata = len({(r.stratum, r.window_start) for r in records})
    sampled = len(records) - len(units)
    report = SampleReport(got.eligible, sampled, strata, got.eligible > sampled, got.at_ceiling, got.unrecognised, audit,
                          got.omitted, len(units))
    log.info("sample tenant=%s eligible=%d sampled=%d conversations=%d strata=%d duplicates=%s not_inference=%s "
             "content_omitted=%s", tenant, got.eligible, sampled, len(units), strata, dict(audit.duplicates),
             dict(audit.not_inference), report.content_omitted)
    for warning in report.warnings():
        log.warning("sample tenant=%s: %s", tenant, warning)
    return report


def _candidates(lake_con, start: datetime, end: datetime) -> None:
    """TEMP TABLE candidates: the `llm_calls` rows starting in [start, end), reduced to what the draw reads
    (`gradable`: neither judge workload nor an error; a parent only where the intent key is to inherit, by the intent
    rule: service/intent_rule.py), and
    TEMP TABLE omitted_calls: the gradable ones the SDK exported without content, with their reason (the lake's
    narrow `content_omitted` column, never the wide `attributes`; NULL in segments written before the column).
    Evaluated once: with two dialects in the lake the view's duplicate rules are its costly part."""
    lake_con.execute(f"""
        CREATE OR REPLACE TEMP TABLE candidates AS
        SELECT trace_id, span_id, {WALK_PARENT} AS parent_span_id,
               start_time, end_time, intent_key, intent_key_error, date, content_omitted,
               coalesce(workload, '') <> '{JUDGE_WORKLOAD}' AND status_code <> 'ERROR' AND error_type IS NULL
                 AS gradable
        FROM llm_calls WHERE start_time >= $start AND start_time < $end""", {"start": start, "end": end})
    lake_con.execute("""CREATE OR REPLACE TEMP TABLE omitted_calls AS SELECT trace_id, span_id, content_omitted
                        FROM candidates WHERE gradable AND content_omitted IS NOT NULL""")


def _unrecognised_scopes(lake_con, start: datetime, end: datetime) -> tuple[tuple[str, int], ...]:
    """Span counts per instrumentation scope when the window has spans but no LLM call at all
    (sampled before or not); empty otherwise."""
    window = {"start": start, "end": end}
    if lake_con.execute("SELECT count(*) FROM candidates WHERE start_time >= $start AND start_time < $end",
                        window).fetchone()[0]:
        return ()
    return tuple(lake_con.execute("""
        SELECT scope_name, count(*) AS n FROM spans WHERE start_time >= $start AND start_time < $end
        GROUP BY ALL ORDER BY n DESC, scope_name LIMIT 20""", window).fetchall())


# The turn units: each trace's graded call (its last gradable call) with the trace's start and intent (`{only}`: a
# condition on its calls). Whether the graded call lost its content is a join with the small `omitted_calls` after
# this aggregation, not one more string state in it: that state per trace made the aggregation run out of the
# sampler's memory limit.
_TRACES = """
    SELECT trace_id, arg_max(span_id, end_time) AS span_id, arg_max(date, end_time) AS call_date,
           min(start_time) AS started_at, arg_max(intent_key, end_time) AS intent_key
    FROM (""" + with_intents("candidates") + """) WHERE gradable {only}
    GROUP BY trace_id"""
# The turns that can be drawn: those whose graded call kept its content.
_TURNS = f"SELECT * FROM ({_TRACES.format(only='')}) ANTI JOIN omitted_calls USING (trace_id, span_id)"
# A unit's stratum (its intent) and window.
_CELL = f"""coalesce(intent_key, '{UNASSIGNED}') AS stratum,
               to_timestamp(floor(epoch(started_at) / $w) * $w)::TIMESTAMP AS window_start"""


def _shortlist(lake_con, done: str, units: str, into: str, window_s: float, config: Sampling) -> None:
    """TEMP TABLE {into}_shortlist: per (stratum, window) of `units` (trace_id, span_id, call_date, started_at,
    intent_key: one row per unit, a trace or a conversation), its unit count `n` and its `depth` units of lowest
    draw. Every pick comes from there: a cell's picks are a prefix of its units by draw less the held ones (`done`),
    and beyond CEILING_FACTOR * k + held positions all are over the ceiling, so one more row shows a cell at the
    ceiling. A top-n aggregate, not a sort of every unit: the memory held past the per-unit aggregation (which
    spills past the limit) is O(cells * depth), whatever the volume."""
    (most_held,) = lake_con.execute(
        f"SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM {done} GROUP BY stratum, window_start)").fetchone()
    depth = CEILING_FACTOR * config.per_cluster_per_window + 1 + most_held
    lake_con.execute(f"""
        CREATE TEMP TABLE {into}_shortlist AS
        WITH traces AS ({units})
        SELECT {_CELL}, count(*) AS n,
               arg_min(struct_pack(trace_id, span_id, call_date, started_at, intent_key, draw), draw, {depth}) AS bottom
        FROM (SELECT *, md5($seed || ':' || trace_id) AS draw FROM traces) GROUP BY ALL
        """, {"w": window_s, "seed": str(config.seed)})


def _pick(lake_con, done, start: datetime, end: datetime, window_s: float, config: Sampling, units: str,
          into: str) -> tuple[int, int]:
    """TEMP TABLE `into`: this run's new picks among `units` (a SELECT, see _shortlist) not in `done` (the picks
    held), within the global budget, fairly shared. Returns how many unsampled eligible units there were and how
    many cells reached the ceiling."""
    lake_con.register(f"{into}_done", done)
    _shortlist(lake_con, f"{into}_done", units, into, window_s, config)
    u = _U.format(draw="s.draw")
    lake_con.execute(f"""
        CREATE TEMP TABLE {into}_picked AS
        WITH volume AS (SELECT stratum, window_start, n FROM {into}_shortlist),
        held AS (SELECT stratum, window_start, count(*) AS n, max({_U.format(draw="md5($seed || ':' || trace_id)")})
                 AS max_u FROM {into}_done GROUP BY ALL),
        cells AS (
            SELECT v.stratum, v.window_start, v.n, coalesce(h.n, 0) AS held, coalesce(h.max_u, -1.0) AS held_max_u,
                   v.window_start + to_seconds($w) <= $end AS closed,
                   least(1.0, CASE WHEN p.n > 0 THEN $target / p.n
                                   ELSE $target * epoch(least($end, v.window_start + to_seconds($w)) - v.window_start)
                                        / ($w * v.n) END) AS rate
            FROM volume v
            LEFT JOIN volume p ON p.stratum = v.stratum AND p.window_start = v.window_start - to_seconds($w)
            LEFT JOIN held h ON h.stratum = v.stratum AND h.window_start = v.window_start
            WHERE v.window_start >= $start
        ),
        ranked AS (
            SELECT s.*, {u} AS u, c.held, c.held_max_u, c.closed, c.rate,
                   row_number() OVER (PARTITION BY s.stratum, s.window_start ORDER BY s.draw) AS rank
            FROM (SELECT stratum, window_start, unnest(bottom, recursive := true) FROM {into}_shortlist) s
            JOIN cells c USING (stratum, window_start)
        ),
        wanted AS (
            SELECT r.*, row_number() OVER (PARTITION BY r.stratum, r.window_start ORDER BY r.draw) AS pick
            FROM ranked r ANTI JOIN {into}_done d ON d.trace_id = r.trace_id
            WHERE CASE WHEN r.closed THEN r.rank <= $target OR r.u <= r.held_max_u ELSE r.u < r.rate END
        )
        SELECT trace_id, span_id, call_date, started_at::TIMESTAMP AS started_at, intent_key, stratum, window_start,
               pick, draw, pick + held > $ceiling AS over_ceiling
        FROM wanted
        """, {"start": start, "end": end, "w": window_s, "seed": str(config.seed),
              "target": config.per_cluster_per_window,
              "ceiling": CEILING_FACTOR * config.per_cluster_per_window})
    eligible, over = lake_con.execute("SELECT count(*) FILTER (NOT over_ceiling), count(DISTINCT (stratum, "
                                      f"window_start)) FILTER (over_ceiling) FROM {into}_picked").fetchone()
    if over:
        log.warning("sample: %d (stratum, window) cell(s) reached the ceiling of %d picks (traffic well above the "
                    "previous window's); their further traces are not sampled", over,
                    CEILING_FACTOR * config.per_cluster_per_window)
    lake_con.execute(f"""CREATE TEMP TABLE {into} AS
        SELECT * FROM {into}_picked WHERE NOT over_ceiling ORDER BY pick, draw LIMIT {config.max_traces_per_run}""")
    return eligible, over


def _omitted_cells(lake_con, start: datetime, window_s: float) -> tuple[OmittedCell, ...]:
    """The cells of the lookback (the window before it is read for its volume only) with traces left out of the
    draw because their content was omitted. Only the traces with such a call are read again, and only if any."""
    if not lake_con.execute("SELECT count(*) FROM omitted_calls").fetchone()[0]:
        return ()
    only = "AND trace_id IN (SELECT trace_id FROM omitted_calls)"
    rows = lake_con.execute(f"""
        WITH traces AS (SELECT *, {_CELL} FROM ({_TRACES.format(only=only)})),
        omitted AS (SELECT stratum, window_start, list((reason, n) ORDER BY reason) AS reasons, sum(n) AS total
                    FROM (SELECT stratum, window_start, o.content_omitted AS reason, count(*) AS n
                          FROM traces JOIN omitted_calls o USING (trace_id, span_id)
                          WHERE window_start >= $start GROUP BY ALL) GROUP BY ALL)
        SELECT o.stratum, o.window_start, coalesce(s.n, 0) + o.total, o.reasons
        FROM omitted o LEFT JOIN chosen_shortlist s USING (stratum, window_start)
        ORDER BY o.window_start, o.stratum""", {"start": start, "w": window_s}).fetchall()
    return tuple(OmittedCell(stratum, window_start, int(traces), tuple((r, int(n)) for r, n in reasons))
                 for stratum, window_start, traces, reasons in rows)


def _conversation_turns(lake_con, conversations: Conversations) -> None:
    """TEMP TABLEs judged_turns(trace_id, conversation_id, conversation_seq, turn): the `chosen` picks that are turns
    of a conversation; earlier(judged, turn, trace_id, span_id, call_date): the turns before each that its history
    budget can hold at most, each with its graded call (its last gradable call; NULL without one in the lookback).
    Conversations are read only when history is on and a pick carries a key: the views read every keyed trace."""
    lake_con.execute("CREATE TEMP TABLE judged_turns (trace_id VARCHAR, conversation_id VARCHAR, "
                     "conversation_seq BIGINT, turn BIGINT)")
    lake_con.execute("CREATE TEMP TABLE earlier (judged VARCHAR, turn BIGINT, trace_id VARCHAR, span_id VARCHAR, "
                     "call_date DATE)")
    if not conversations.history_tokens:
        return
    lake_con.execute("""CREATE TEMP TABLE judged_keys AS SELECT DISTINCT conversation_id FROM spans
                        WHERE conversation_id IS NOT NULL AND trace_id IN (SELECT trace_id FROM chosen)""")
    if not lake_con.execute("SELECT count(*) FROM judged_keys").fetchone()[0]:
        return
    lake_con.execute(f"""CREATE TEMP TABLE keyed_turns AS
        SELECT conversation_id, conversation_seq, turn, trace_id
        FROM conversation_turns_within({float(conversations.inactivity_minutes)!r})
        WHERE conversation_id IN (SELECT conversation_id FROM judged_keys)""")
    lake_con.execute("INSERT INTO judged_turns SELECT trace_id, conversation_id, conversation_seq, turn "
                     "FROM keyed_turns SEMI JOIN chosen USING (trace_id)")
    lake_con.execute("""
        INSERT INTO earlier
        SELECT j.trace_id, e.turn, e.trace_id, g.span_id, g.call_date
        FROM judged_turns j JOIN keyed_turns e ON e.conversation_id = j.conversation_id
          AND e.conversation_seq = j.conversation_seq AND e.turn < j.turn AND e.turn >= j.turn - $most
        LEFT JOIN (SELECT trace_id, arg_max(span_id, end_time) AS span_id, arg_max(date, end_time) AS call_date
                   FROM candidates WHERE gradable GROUP BY trace_id) g ON g.trace_id = e.trace_id""",
                     {"most": most_turns(conversations.history_tokens)})


def _closed_conversations(lake_con, conversations: Conversations, start: datetime, end: datetime, on: bool) -> None:
    """TEMP TABLEs conversation_members(unit_id, conversation_id, conversation_seq, turn_count, first_time, intent_key,
    turn, trace_id, span_id, call_date): the newest turns its budget can hold of each conversation closed as of `end`
    whose first turn starts at `start` or later, each with its graded call and that call's intent as a turn's (NULL
    without one); conversation_units: one row per such conversation as the sampler's unit (its first turn's graded
    call, '' without one, and intent: a conversation is clustered as its first turn is, docs/conversations.md). Empty
    unless `on`: the macros read every keyed trace of the lookback."""
    lake_con.execute("""CREATE TEMP TABLE conversation_members (unit_id VARCHAR, conversation_id VARCHAR,
        conversation_seq BIGINT, turn_count BIGINT, first_time TIMESTAMP, intent_key VARCHAR, turn BIGINT,
        trace_id VARCHAR, span_id VARCHAR, call_date DATE)""")
    if on:
        inactivity = repr(float(conversations.inactivity_minutes))
        lake_con.execute(f"""
            INSERT INTO conversation_members
            WITH closed AS (
                SELECT conversation_id, conversation_seq, first_trace_id, turns, first_time, intent_key
                FROM conversations_at($end, {inactivity}) WHERE status = 'closed' AND first_time >= $start)
            SELECT $prefix || c.first_trace_id, c.conversation_id, c.conversation_seq, c.turns, c.first_time,
                   g.intent_key, t.turn, t.trace_id, g.span_id, g.call_date
            FROM closed c JOIN conversation_turns_within({inactivity}) t USING (conversation_id, conversation_seq)
            LEFT JOIN ({_TRACES.format(only='')}) g USING (trace_id)  -- each turn's graded call, the turns' rule
            WHERE t.turn = 1 OR t.turn > c.turns - $most""",
                         {"end": end, "start": start, "prefix": UNIT_PREFIX,
                          "most": most_turns(conversations.conversation_tokens)})
    lake_con.execute("""CREATE TEMP TABLE conversation_units AS
        SELECT unit_id AS trace_id, coalesce(any_value(span_id) FILTER (WHERE turn = 1), '') AS span_id,
               any_value(call_date) FILTER (WHERE turn = 1) AS call_date, any_value(first_time) AS started_at,
               any_value(intent_key) FILTER (WHERE turn = 1) AS intent_key
        FROM conversation_members GROUP BY unit_id""")


def _transcripts(lake_con, budget_tokens: int) -> list[tuple]:
    """The `chosen_conversations` with their turns' graded texts within the budget: (unit id, span id, intent,
    stratum, window start, started at, first user message, last answer, Transcript), in pick order."""
    shown: dict[str, list[Turn]] = {}
    for unit, turn, inputs, outputs, system in lake_con.execute("""
            SELECT m.unit_id, m.turn, x.input_messages, x.output_messages, x.system_instructions
            FROM conversation_members m JOIN content x USING (trace_id, span_id)
            WHERE m.unit_id IN (SELECT trace_id FROM chosen_conversations) ORDER BY m.unit_id, m.turn""").fetchall():
        query, response, _ = graded_texts(inputs, outputs, system)
        if query.strip() or response.strip():
            shown.setdefault(unit, []).append(Turn(turn, query, response))
    units = []
    for unit, span_id, intent, stratum, window_start, started_at, conversation, seq, count in lake_con.execute("""
            SELECT c.trace_id, c.span_id, c.intent_key, c.stratum, c.window_start, c.started_at,
                   any_value(m.conversation_id), any_value(m.conversation_seq), any_value(m.turn_count)
            FROM chosen_conversations c JOIN conversation_members m ON m.unit_id = c.trace_id
            GROUP BY ALL ORDER BY any_value(c.pick), any_value(c.draw)""").fetchall():
        turns = tuple(shown.get(unit, ()))
        first = turns[0].query if turns and turns[0].turn == 1 else ""
        newest = tuple(t for t in turns if t.turn > count - most_turns(budget_tokens))  # turn 1 is read for `first`
        transcript = Transcript(conversation, seq, count, newest).within(budget_tokens)
        units.append((unit, span_id, intent, stratum, window_start, started_at, first,
                      turns[-1].response if turns else "", transcript))
    return units


def _histories(lake_con, budget_tokens: int) -> dict[str, History]:
    """The conversation so far of each pick in `judged_turns`, within the budget, from the earlier turns' content
    (a turn whose graded call has no text is left out)."""
    earlier: dict[str, list[Turn]] = {}
    for judged, turn, inputs, outputs, system in lake_con.execute("""
            SELECT e.judged, e.turn, x.input_messages, x.output_messages, x.system_instructions
            FROM earlier e JOIN content x USING (trace_id, span_id) ORDER BY e.judged, e.turn""").fetchall():
        query, response, _ = graded_texts(inputs, outputs, system)
        if query.strip() or response.strip():
            earlier.setdefault(judged, []).append(Turn(turn, query, response))
    return {trace_id: History(conversation_id, seq, turn, tuple(earlier.get(trace_id, ()))).within(budget_tokens)
            for trace_id, conversation_id, seq, turn in lake_con.execute("SELECT * FROM judged_turns").fetchall()}


# The tool spans of the picks (service/trajectory.py), from their graded calls' date partitions: GenAI
# `execute_tool`, OpenInference TOOL and OpenLLMetry tool spans. The pick filter comes first, so attributes are
# read for the picks' spans only.
_TOOL_SPANS = """
INSERT INTO tool_spans
SELECT trace_id, span_id, start_time, status_code, attributes FROM spans
WHERE date = $day AND trace_id IN (SELECT trace_id FROM chosen)
  AND (operation = 'execute_tool' OR json_extract_string(attributes, '$."openinference.span.kind"') = 'TOOL'
       OR json_extract_string(attributes, '$."traceloop.span.kind"') = 'tool')
QUALIFY row_number() OVER (PARTITION BY trace_id, span_id) = 1
"""


def _tool_spans(lake_con) -> dict[str, list[ToolSpan]]:
    """Per pick, the tool executions its spans recorded, in start order."""
    out: dict[str, list[ToolSpan]] = {}
    for trace_id, status, attributes in lake_con.execute(
            "SELECT trace_id, status_code, attributes FROM tool_spans ORDER BY trace_id, start_time, span_id").fetchall():
        try:
            parsed = json.loads(attributes) if attributes else {}
        except ValueError:
            continue
        span = tool_span(parsed, status == "ERROR") if isinstance(parsed, dict) else None
        if span is not None:
            out.setdefault(trace_id, []).append(span)
    return out


def _content(lake_con, lake: LakeUnion, tenant: TenantId) -> list[tuple]:
    """The `chosen` picks with their messages from `llm_calls` (log-event messages attached, a call described by
    two instrumentations seen once), read one date partition at a time: the views deduplicate a partition's
    fresh segments by holding its rows, messages included, so a day's rows are held at a time, not the
    lookback's. A call's partition is its start day; its log events may land on the next. The graded calls of
    the picks' `earlier` turns are read alike, into `content`."""
    lake_con.execute("""CREATE TEMP TABLE content (trace_id VARCHAR, span_id VARCHAR, input_messages VARCHAR,
                        output_messages VARCHAR, system_instructions VARCHAR)""")
    lake_con.execute("""CREATE TEMP TABLE tool_spans (trace_id VARCHAR, span_id VARCHAR, start_time TIMESTAMP_NS,
                        status_code VARCHAR, attributes VARCHAR)""")
    lake_con.execute("""CREATE TEMP TABLE wanted AS SELECT span_id, call_date FROM chosen
                        UNION SELECT span_id, call_date FROM earlier WHERE span_id IS NOT NULL
                        UNION SELECT span_id, call_date FROM conversation_members WHERE span_id IS NOT NULL""")
    for (day,) in lake_con.execute("SELECT DISTINCT call_date FROM wanted ORDER BY 1").fetchall():
        for statement in view_statements(lake, tenant, [day, day + timedelta(days=1)]):
            lake_con.execute(statement)
        lake_con.execute("""
            INSERT INTO content
            SELECT trace_id, span_id, input_messages, output_messages, system_instructions FROM llm_calls
            WHERE date = $day AND span_id IN (SELECT span_id FROM wanted WHERE call_date = $day)
            QUALIFY row_number() OVER (PARTITION BY trace_id, span_id) = 1  -- a span compacted in two lakes
            """, {"day": day})
        lake_con.execute(_TOOL_SPANS, {"day": day})
    rows: list[tuple] = lake_con.execute("""
        SELECT c.trace_id, c.span_id, c.intent_key, c.stratum, c.window_start, c.started_at,
               x.input_messages, x.output_messages, x.system_instructions
        FROM chosen c JOIN content x USING (trace_id, span_id)
        ORDER BY c.pick, c.draw""").fetchall()
    return rows
