"""The trace table and the trace page: DuckDB queries over a tenant snapshot (verdict_ui.snapshot).

The table is one row per trace with a model call (`llm_calls`), newest first, its calls, tokens, span and
latest judgments summed up; paging is by keyset (`before` = the last row's first call start and trace id), so
a page costs a top-N over the filtered calls' traces of a partition, never a count or an OFFSET over the lake.
The trace page adds the span tree (verdict_ui.span_tree).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from verdict_ui import params
from verdict_ui.params import BadRequest
from verdict_ui.span_tree import SPAN_FIELDS, Span, pretty

VERDICTS = ("PASS", "FAIL", "UNCLEAR", "ERROR", "NO_CONTENT")
PAGE_SIZES = (1, 200)
MAX_SPANS = 500  # spans drawn in one trace's span tree
TEXT_CHARS = 2000  # of a question or answer in the table (clipped to 3 lines, the rest on demand)
_NS_PER_DAY = 86_400 * 10**9


@dataclass(frozen=True)
class TraceFilter:
    since: datetime | None = None
    until: datetime | None = None
    intent: str | None = None
    cluster: str | None = None
    model: str | None = None
    service: str | None = None
    evaluator: str | None = None  # an evaluator name: with cluster, dimension and verdict, one judgment row
    dimension: str | None = None
    verdict: str | None = None  # a latest judgment value (PASS, FAIL, UNCLEAR, ERROR, NO_CONTENT)
    search: str | None = None  # substring of the (redacted) messages, case-insensitive
    before: tuple[int, str] | None = None  # keyset: (first matching call's start in ns since the epoch, trace_id)
    size: int = 50

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> TraceFilter:
        since, until = params.moment(query, "from"), params.moment(query, "to")
        day = params.day(query, "date")  # one whole UTC day, as the date list offers
        if day is not None:
            if since or until:
                raise BadRequest("give date or from/to, not both")
            since = datetime(day.year, day.month, day.day)
            until = since + timedelta(days=1)
        if since and until and since >= until:
            raise BadRequest("from must be before to")
        return cls(since, until, params.text(query, "intent"), params.text(query, "cluster"),
                   params.text(query, "model"), params.text(query, "service"), params.text(query, "evaluator"),
                   params.text(query, "dimension"),
                   params.choice(query, "verdict", VERDICTS), params.text(query, "q"),
                   _keyset(query.get("before", "").strip()), params.integer(query, "size", 50, *PAGE_SIZES))

    def query_string(self, **changes) -> dict[str, str]:
        """This filter as URL parameters (with `changes`), empty values left out."""
        values = {"from": self.since and self.since.isoformat(), "to": self.until and self.until.isoformat(),
                  "intent": self.intent, "cluster": self.cluster, "model": self.model, "service": self.service,
                  "evaluator": self.evaluator, "dimension": self.dimension,
                  "verdict": self.verdict, "q": self.search, "size": None if self.size == 50 else str(self.size)}
        values.update(changes)
        return {k: v for k, v in values.items() if v}

    @property
    def whole_day(self) -> date | None:
        """The UTC day the time range is exactly, if it is one (the date list shows it selected)."""
        if self.since and self.until and self.since.time() == time() and self.until - self.since == timedelta(days=1):
            return self.since.date()
        return None


def _keyset(raw: str) -> tuple[int, str] | None:
    if not raw:
        return None
    ns, sep, span = raw.partition("~")
    if not sep or not ns.isdigit() or len(ns) > 20:
        raise BadRequest("before: expected the cursor of a 'next page' link")
    return int(ns), params.identifier(span, "before")


@dataclass(frozen=True)
class TraceRow:
    """One trace of the table: its model calls summed up, its span, its latest judgments."""

    trace_id: str
    day: date  # the date partition of its first listed call (the trace page's `?day=` hint)
    started_at: datetime  # its first span's start
    latency_ms: float | None  # the trace's span: first span start to last span end
    calls: int  # its model calls (`llm_calls`: each once)
    models: tuple[str, ...]
    intent_key: str | None  # of its first call
    status_code: str | None  # ERROR when any call failed, else its first call's
    errors: int  # calls with status ERROR
    input_tokens: int | None  # summed over its calls
    output_tokens: int | None
    cluster: str | None
    verdicts: Mapping[str, int]  # latest judgment value -> rows of this trace (all evaluators, dimensions)
    worst: str | None  # the worst of those values (FAIL, ERROR, UNCLEAR, NO_CONTENT, PASS in that order)
    services: tuple[str, ...]
    conversation_id: str | None  # the key of its earliest span that has one (docs/conversations.md)
    question: str | None  # the last user message of its first call (redacted as stored), up to TEXT_CHARS
    answer: str | None  # the last assistant output of its last call, likewise


@dataclass(frozen=True)
class TracePage:
    rows: tuple[TraceRow, ...]
    next_cursor: str | None  # `before` of the next page, None on the last one


WORST_FIRST = ("FAIL", "ERROR", "UNCLEAR", "NO_CONTENT", "PASS")
# A trace is listed under the day of its first matching call. One whose first call in a day is this close after
# midnight is looked for in the day before too (the run crossed midnight: it is listed there, once).
MIDNIGHT_OVERLAP_NS = 3600 * 10**9

# TraceFilter field -> condition on llm_calls / on the trace's latest judgments (parameter = field name)
_CALL_FILTERS = (("since", "start_time >= $since"), ("until", "start_time < $until"), ("intent", "intent_key = $intent"),
                 ("model", "(request_model = $model OR response_model = $model)"), ("service", "service_name = $service"))
_JUDGMENT_FILTERS = (("cluster", "cluster = $cluster"), ("evaluator", "evaluator = $evaluator"), ("dimension", "(dimension = $dimension OR dimension IS NULL)"),
                     ("verdict", "value = $verdict"))


def _days(f: TraceFilter, days: tuple[date, ...]) -> list[date]:
    """The date partitions a page may read, newest first (`days` is newest first)."""
    low = f.since.date() if f.since else date.min
    high = f.until.date() if f.until else date.max
    if f.before:
        high = min(high, datetime.fromtimestamp(f.before[0] / 1e9, UTC).date())
    return [d for d in days if low <= d <= high]


def _utc(ns: int) -> datetime:
    """Nanoseconds since the epoch as a naive UTC datetime, floored to the microsecond (never after `ns`)."""
    return datetime(1970, 1, 1) + timedelta(microseconds=ns // 1000)


def _literals(days) -> str:
    return ", ".join(f"DATE '{d.isoformat()}'" for d in sorted(days))


def trace_page(cur, f: TraceFilter, days: tuple[date, ...]) -> TracePage:
    """A page of traces with a matching model call, newest first by their first call, reading one date
    partition at a time from the newest, so the first page of a large lake reads about a day of calls rather than
    all of them; then the page's traces only are summed up (calls, tokens, span, judgments)."""
    values = {c: getattr(f, c) for c, _ in (*_CALL_FILTERS, *_JUDGMENT_FILTERS) if getattr(f, c)}
    where = ["true", *(sql for c, sql in _CALL_FILTERS if c in values)]
    args: dict = dict(values)
    if f.search:
        where.append("(contains(lower(input_messages), $q) OR contains(lower(output_messages), $q) "
                     "OR contains(lower(system_instructions), $q))")
        args["q"] = f.search.lower()
    judged = [sql for c, sql in _JUDGMENT_FILTERS if c in values]
    if judged:
        where.append(f"trace_id IN (SELECT trace_id FROM judgments WHERE {' AND '.join(judged)})")
    having = ""
    if f.before:
        having = "HAVING (epoch_ns(min(start_time)), trace_id) < ($b_ns, $b_trace)"
        args.update(b_ns=f.before[0], b_trace=f.before[1])
    # A trace is keyed by its first call in the partition, matching or not: the page's rows then cover every call of
    # their traces from the earliest key on, which lets `_summed` read only those (a pruned time range).
    matching = (f"AND trace_id IN (SELECT trace_id FROM llm_calls WHERE {' AND '.join(where)} AND date = DATE '{{day}}')"
                if len(where) > 1 else "")
    query = f"""
        SELECT trace_id, epoch_ns(min(start_time)) AS first_ns FROM llm_calls
        WHERE date = DATE '{{day}}' {matching} GROUP BY trace_id {having}
        ORDER BY first_ns DESC, trace_id DESC LIMIT {{limit}}"""
    readable = _days(f, days)
    rows: list[tuple[str, int, date]] = []
    for i, day in enumerate(readable):  # a span's date partition is its start day: newest partitions hold the first rows
        # the day as a literal (a date we format), so DuckDB prunes the other partitions' files when planning
        found = cur.execute(query.format(day=day.isoformat(), limit=f.size + 1 - len(rows)), args).fetchall()
        earlier = readable[i + 1] if i + 1 < len(readable) and readable[i + 1] == day - timedelta(days=1) else None
        listed_earlier = _crossed_midnight(cur, found, day, earlier, where, args)
        rows += [(t, ns, day) for t, ns in found if t not in listed_earlier]
        if len(rows) > f.size:
            break
    shown = rows[:f.size]
    out = _summed(cur, shown)
    more = len(rows) > f.size
    return TracePage(out, f"{shown[-1][1]}~{shown[-1][0]}" if more else None)


def _crossed_midnight(cur, found: list[tuple[str, int]], day: date, earlier: date | None, where: list[str],
                      args: dict) -> set[str]:
    """Traces of `found` (listed under `day`) with a matching call in the day before: they are listed there."""
    midnight = (day.toordinal() - date(1970, 1, 1).toordinal()) * _NS_PER_DAY
    near = [t for t, ns in found if ns < midnight + MIDNIGHT_OVERLAP_NS]
    if earlier is None or not near:
        return set()
    marks = ", ".join(f"$n{i}" for i in range(len(near)))
    used = {k: v for k, v in args.items() if not k.startswith("b_")}  # the keyset is the listing's, not this check's
    return {t for (t,) in cur.execute(
        f"SELECT DISTINCT trace_id FROM llm_calls WHERE {' AND '.join(where)} AND date = DATE '{earlier.isoformat()}' "
        f"AND trace_id IN ({marks})", {**used, **{f"n{i}": t for i, t in enumerate(near)}}).fetchall()}


def _summed(cur, shown: list[tuple[str, int, date]]) -> tuple[TraceRow, ...]:
    """The page's traces summed up over their calls and spans in the partitions they were listed under and the day
    after (a run may end after midnight): one aggregate per view over a list of constants."""
    if not shown:
        return ()
    ids = sorted({t for t, _, _ in shown})
    marks = ", ".join(f"$t{i}" for i in range(len(ids)))
    # No call of these traces in their partitions starts before the earliest key (trace_page keys by the first call),
    # and every span an ancestor of a call ends after it starts: time bounds DuckDB prunes row groups with (compacted
    # segments are sorted by start time), where the list of ids alone would read the partitions' whole columns.
    args = {f"t{i}": t for i, t in enumerate(ids)} | {"lowest": _utc(min(ns for _, ns, _ in shown))}
    dates = _literals({d + timedelta(days=k) for _, _, d in shown for k in (0, 1)})
    calls = {r[0]: r[1:] for r in cur.execute(f"""
        SELECT trace_id, count(*), list(DISTINCT coalesce(response_model, request_model) ORDER BY 1)
                   FILTER (WHERE coalesce(response_model, request_model) IS NOT NULL),
               arg_min(intent_key, (start_time, span_id)),
               CASE WHEN bool_or(status_code = 'ERROR') THEN 'ERROR' ELSE arg_min(status_code, (start_time, span_id)) END,
               count(*) FILTER (WHERE status_code = 'ERROR'), sum(input_tokens)::BIGINT, sum(output_tokens)::BIGINT,
               list(DISTINCT service_name ORDER BY 1) FILTER (WHERE service_name IS NOT NULL),
               arg_min(input_messages, (start_time, span_id)), arg_max(output_messages, (end_time, span_id))
        FROM llm_calls WHERE date IN ({dates}) AND start_time >= $lowest AND trace_id IN ({marks})
        GROUP BY trace_id""", args).fetchall()}
    spans = {r[0]: r[1:] for r in cur.execute(f"""
        SELECT trace_id, min(start_time), (epoch_ns(max(end_time)) - epoch_ns(min(start_time))) / 1e6,
               arg_min(conversation_id, (start_time, span_id)) FILTER (WHERE conversation_id IS NOT NULL)
        FROM spans WHERE date IN ({dates}) AND end_time >= $lowest AND trace_id IN ({marks})
        GROUP BY trace_id""", args).fetchall()}
    verdicts = _verdicts(cur, ids)
    out = []
    for trace_id, first_ns, day in shown:
        n, models, intent, status, errors, tokens_in, tokens_out, services, inputs, outputs = calls[trace_id]
        started, latency, conversation = spans.get(trace_id, (_utc(first_ns), None, None))
        cluster, counted = verdicts.get(trace_id, (None, {}))
        out.append(TraceRow(trace_id, day, started, latency, n, tuple(models or ()), intent, status, errors, tokens_in,
                            tokens_out, cluster, counted, next((v for v in WORST_FIRST if counted.get(v)), None),
                            tuple(services or ()), conversation, last_text(inputs, "user"),
                            last_text(outputs, "assistant")))
    return tuple(out)


def _verdicts(cur, trace_ids: list[str]) -> dict[str, tuple[str | None, dict[str, int]]]:
    """trace id -> (cluster, latest judgment value -> rows), for a page's traces only: a list of constants
    (one placeholder each) keeps this a filtered scan of the snapshot's judgments, not an aggregate of all."""
    if not trace_ids:
        return {}
    marks = ", ".join(f"$t{i}" for i in range(len(trace_ids)))
    out: dict[str, tuple[str | None, dict[str, int]]] = {}
    for trace_id, cluster, value, n in cur.execute(
            f"SELECT trace_id, any_value(cluster), value, count(*) FROM judgments WHERE trace_id IN ({marks}) "
            "GROUP BY trace_id, value", {f"t{i}": t for i, t in enumerate(trace_ids)}).fetchall():
        known = out.setdefault(trace_id, (cluster, {}))
        known[1][value] = n
        if known[0] is None and cluster is not None:
            out[trace_id] = (cluster, known[1])
    return out


# --- messages ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Message:
    role: str
    text: str


def messages(raw: str | None) -> tuple[Message, ...]:
    """GenAI message JSON (role + parts) as role/text pairs; text that is not that JSON is one message."""
    if not raw:
        return ()
    try:
        doc = json.loads(raw)
    except ValueError:
        return (Message("text", raw),)
    if not isinstance(doc, list):
        doc = [doc]
    out = []
    for message in doc:
        if isinstance(message, dict) and "parts" in message:
            out.append(Message(str(message.get("role") or "message"), _parts_text(message["parts"])))
        elif isinstance(message, dict) and "content" in message:  # a part list of system instructions
            out.append(Message(str(message.get("role") or message.get("type") or "text"), str(message["content"])))
        else:
            out.append(Message("message", json.dumps(message, ensure_ascii=False)))
    return tuple(out)


def _parts_text(parts) -> str:
    if not isinstance(parts, list):
        return json.dumps(parts, ensure_ascii=False)
    texts = []
    for part in parts:
        if isinstance(part, dict) and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif isinstance(part, dict) and part.get("type") in _TOOL_PARTS:  # semconv tool parts, formatted
            texts.append(_tool_part(part))
        else:  # media and anything else: shown as its JSON (redacted on the way out)
            texts.append(json.dumps(part, ensure_ascii=False))
    return "\n".join(texts)


_TOOL_PARTS = ("tool_call", "tool_call_response")


def _tool_part(part: dict) -> str:
    """A tool call (name, id, arguments) or a tool result (id, response), its value pretty-printed and bounded."""
    call = f" ({part['id']})" if part.get("id") else ""
    if part["type"] == "tool_call":
        head, value = f"tool call {part.get('name') or '?'}{call}, arguments:", part.get("arguments")
    else:
        head, value = f"tool result{call}:", part.get("response")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"{head}\n{pretty(text)}"


def last_text(raw: str | None, role: str) -> str | None:
    texts = [m.text for m in messages(raw) if m.role == role]
    return texts[-1][:TEXT_CHARS] if texts else None


# --- one trace ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    span_id: str
    started_at: datetime
    latency_ms: float | None
    provider: str | None
    model: str | None
    operation: str | None
    status_code: str | None
    status_message: str | None
    finish_reasons: tuple[str, ...]
    input_tokens: int | None
    output_tokens: int | None
    intent_key: str | None
    system: tuple[Message, ...]
    inputs: tuple[Message, ...]
    outputs: tuple[Message, ...]


@dataclass(frozen=True)
class Judgment:
    evaluator: str | None
    fingerprint: str
    cluster: str | None
    dimension: str | None
    value: str | None
    score: float | None
    reason: str | None
    error_code: str | None


@dataclass(frozen=True)
class Attempt:
    attempt_no: int
    fingerprint: str
    evaluator: str | None
    status: str
    error_code: str | None
    error_message: str | None
    judged_at: datetime
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None


@dataclass(frozen=True)
class TraceDetail:
    trace_id: str
    calls: tuple[Call, ...]
    spans: tuple[Span, ...]  # in start order, at most MAX_SPANS
    spans_total: int
    conversation_id: str | None  # the key of its earliest span that has one
    judgments: tuple[Judgment, ...]
    attempts: tuple[Attempt, ...]


_TOOL_FIELDS = ", ".join(SPAN_FIELDS).replace("{", "{{").replace("}", "}}")  # formatted once more below
_SPANS = f"""
    SELECT span_id, parent_span_id, name, epoch_ns(start_time), epoch_ns(end_time), status_code,
           count(*) OVER (), operation, {_TOOL_FIELDS},
           conversation_id
    FROM spans WHERE {{scope}} ORDER BY start_time, span_id LIMIT {MAX_SPANS}"""


def _spans_of(cur, trace_id: str, day: date | None) -> tuple[list[tuple], str]:
    """The trace's spans and the scope its other queries use. With a hint `day` (where one of its calls
    started) only that date partition is read, widened to the next day when a span ends after midnight and
    to the day before when its root span is not there (it started earlier), to every partition when the
    day holds none of its spans (or more than are drawn). Dates are literals, so DuckDB prunes the other
    partitions' files: the common trace costs one partition per query."""
    args = {"t": trace_id}
    if day is not None:
        hinted = f"trace_id = $t AND date = DATE '{day}'"
        spans = cur.execute(_SPANS.format(scope=hinted), args).fetchall()
        if spans and spans[0][6] == len(spans):
            midnight = (day.toordinal() - date(1970, 1, 1).toordinal() + 1) * _NS_PER_DAY
            low = day if any(row[1] is None for row in spans) else day - timedelta(days=1)
            high = day + timedelta(days=1) if max(row[4] for row in spans) >= midnight else day
            if low == high:
                return spans, hinted
            scope = f"trace_id = $t AND date BETWEEN DATE '{low}' AND DATE '{high}'"
            return cur.execute(_SPANS.format(scope=scope), args).fetchall(), scope
    return cur.execute(_SPANS.format(scope="trace_id = $t"), args).fetchall(), "trace_id = $t"


def trace_detail(cur, trace_id: str, day: date | None) -> TraceDetail | None:
    """The trace, or None when the tenant has no span and no judgment of it. `day` (a date partition
    the trace has spans in) narrows the files read (`_spans_of`)."""
    spans, scope = _spans_of(cur, trace_id, day)
    calls = cur.execute(f"""
        SELECT span_id, start_time, latency_ms, provider, coalesce(response_model, request_model), operation,
               status_code, status_message, finish_reasons, input_tokens, output_tokens, intent_key,
               system_instructions, input_messages, output_messages
        FROM llm_calls WHERE {scope} ORDER BY start_time, span_id""", {"t": trace_id}).fetchall()
    judged = cur.execute("""
        SELECT evaluator, fingerprint, cluster, dimension, value, score, reason, error_code FROM judgments
        WHERE trace_id = $t ORDER BY evaluator, fingerprint, dimension""", {"t": trace_id}).fetchall()
    attempts = cur.execute("""
        SELECT attempt_no, fingerprint, evaluator, status, error_code, error_message, judged_at, input_tokens,
               output_tokens, cost_usd FROM attempts WHERE trace_id = $t ORDER BY evaluator, fingerprint, attempt_no""",
                           {"t": trace_id}).fetchall()
    if not (calls or spans or judged):
        return None
    return TraceDetail(
        trace_id,
        tuple(Call(*c[:8], tuple(c[8] or ()), *c[9:12], messages(c[12]), messages(c[13]), messages(c[14]))  # type: ignore[call-arg]  # columns in order
              for c in calls),
        tuple(Span(*s[:6], *s[7:12]) for s in spans), spans[0][6] if spans else 0,
        next((s[12] for s in spans if s[12] is not None), None),
        tuple(Judgment(*j) for j in judged), tuple(Attempt(*a) for a in attempts))


# --- filter values ------------------------------------------------------------------------------------
FACET_DAYS = 7  # date partitions (newest first) whose calls give the intent, model and service lists


@dataclass(frozen=True)
class Facets:
    """The values the trace filters offer, as the tenant's data holds them (sorted, NULLs left out)."""

    intents: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    services: tuple[str, ...] = ()
    evaluators: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    dimensions: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()  # the days with spans (date partitions), newest first


def facets(cur, days: tuple[date, ...]) -> Facets:
    """Calls' values from the newest FACET_DAYS partitions (date literals, so other partitions' files are
    pruned: a large lake costs a week of spans, not all); judgment values from the (small) state copy."""
    def distinct(sql: str) -> tuple[str, ...]:
        return tuple(sorted({str(r[0]) for r in cur.execute(sql).fetchall() if r[0] is not None}))

    recent = ", ".join(f"DATE '{d.isoformat()}'" for d in days[:FACET_DAYS])
    calls = (cur.execute("SELECT list(DISTINCT intent_key), list(DISTINCT coalesce(request_model, response_model)), "
                         f"list(DISTINCT service_name) FROM llm_calls WHERE date IN ({recent})").fetchone()
             if recent else ([], [], []))
    intents, models, services = (tuple(sorted(v for v in values or () if v is not None)) for values in calls)
    return Facets(intents, models, services, distinct("SELECT DISTINCT evaluator FROM judgments"),
                  distinct("SELECT DISTINCT cluster FROM judgments"), distinct("SELECT DISTINCT dimension FROM judgments"),
                  tuple(d.isoformat() for d in days))
