"""The conversations list and one conversation's page: DuckDB queries over a tenant snapshot.

Conversations are the lake's `conversations` and `conversation_turns` views (collector/conversations.py,
docs/conversations.md): a key's turns cut into conversations (`conversation_seq`) by inactivity and the end
marker, status against the newest span end in the tenant's lake. A conversation is named in URLs by its key
and seq; a trace's page links to its turn's conversation by key and trace (`?trace=`).

Verdicts: each turn shows its trace's latest judgments (the `judgments` view). Conversation-level verdicts
(issue 29, item 3: conversation evaluators judge a closed conversation as a whole) are read from the same
view: rows whose `unit` column is 'conversation' and whose `trace_id` is the conversation's unit id,
`conversation:<first_trace_id>` (verdict_daemon.service.conversation.unit_id: its first turn names a conversation
for good). Without such rows the page says no conversation evaluator has judged it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from verdict.conversation import DEFAULT_INACTIVITY_MINUTES
from verdict_daemon.service.conversation import CONVERSATION, unit_id
from verdict_daemon.store.review import trace_items_in
from verdict_ui import params
from verdict_ui.params import BadRequest
from verdict_ui.traces import Judgment, last_text

# The lake's conversation views cut every keyed trace of the tenant into conversations (a window over all of them);
# for the list a snapshot computes them once into these TEMP tables (docs/ui.md, Performance).
TURNS_TABLE, CONVERSATIONS_TABLE = "snapshot_conversation_turns", "snapshot_conversations"
# One conversation's page reads its key's traces only, into these (requests take turns on a snapshot's connection).
KEY_TURNS_TABLE, KEY_CONVERSATIONS_TABLE = "key_conversation_turns", "key_conversations"
MAX_TURNS = 200  # turns shown on one conversation's page (the newest are cut, and the page says so)
PAGE_SIZE = 50
STATUSES = ("open", "closed")


def materialize(cur) -> None:
    """The snapshot's conversations and turns, computed once (the caller keeps them for the snapshot's life)."""
    cur.execute(f"CREATE OR REPLACE TEMP TABLE {TURNS_TABLE} AS SELECT * FROM conversation_turns")
    cur.execute(f"CREATE OR REPLACE TEMP TABLE {CONVERSATIONS_TABLE} AS SELECT * FROM conversations")


def lake_clock(cur) -> int | None:
    """The `conversations` view's clock, the newest span end in the lake, in epoch nanoseconds (exact: a Python
    datetime would drop the nanoseconds the status compares); once per snapshot."""
    clock: int | None = cur.execute("SELECT epoch_ns(max(end_time)) FROM spans").fetchone()[0]
    return clock


def load_key(cur, key: str, as_of: int | None) -> tuple[str, str]:
    """`key`'s turns and conversations into the KEY_ tables, equal to the views' rows of that key: its candidate
    traces first (every trace with a span of the key), then the views' rules over those traces alone. Returns the
    (turns, conversations) tables, as `conversation_detail` takes them."""
    traces = cur.execute("SELECT list(DISTINCT trace_id) FROM span_conversation_keys WHERE conversation_id = $k",
                         {"k": key}).fetchone()[0]
    limit = repr(float(DEFAULT_INACTIVITY_MINUTES))  # the views' limit (collector.views.view_statements)
    cur.execute(f"CREATE OR REPLACE TEMP TABLE {KEY_TURNS_TABLE} AS SELECT * FROM conversation_turns_of($k, $t, {limit})",
                {"k": key, "t": traces or []})
    cur.execute(f"CREATE OR REPLACE TEMP TABLE {KEY_CONVERSATIONS_TABLE} AS "
                f"SELECT * FROM conversations_among('{KEY_TURNS_TABLE}', make_timestamp_ns($as_of), {limit})",
                {"as_of": as_of})
    return KEY_TURNS_TABLE, KEY_CONVERSATIONS_TABLE


@dataclass(frozen=True)
class ConversationFilter:
    status: str | None = None
    intent: str | None = None
    offset: int = 0

    @classmethod
    def parse(cls, query) -> ConversationFilter:
        return cls(params.choice(query, "status", STATUSES), params.text(query, "intent"),
                   params.integer(query, "offset", 0, 0, 10_000_000))

    def query_string(self, **changes) -> dict[str, str]:
        values = {"status": self.status, "intent": self.intent, "offset": str(self.offset) if self.offset else None}
        values.update(changes)
        return {k: v for k, v in values.items() if v}


@dataclass(frozen=True)
class ConversationRow:
    conversation_id: str
    conversation_seq: int
    first_trace_id: str
    turns: int
    first_time: datetime
    last_time: datetime
    intent_key: str | None  # its first turn's
    calls: int
    input_tokens: int | None
    output_tokens: int | None
    status: str  # open / closed
    closed_by: str | None  # end_marker / inactivity


@dataclass(frozen=True)
class ConversationPage:
    rows: tuple[ConversationRow, ...]
    offset: int
    more: bool


_ROW = ("conversation_id, conversation_seq, first_trace_id, turns, first_time, last_time, intent_key, calls, "
        "input_tokens, output_tokens, status, closed_by")


_FILTERS = (("status", "status = $status"), ("intent", "list_contains(intent_keys, $intent)"))  # field -> condition


def conversation_page(cur, f: ConversationFilter) -> ConversationPage:
    """A page of conversations, the latest turn first."""
    args = {c: getattr(f, c) for c, _ in _FILTERS if getattr(f, c)}
    where = ["true", *(sql for c, sql in _FILTERS if c in args)]
    rows = cur.execute(f"SELECT {_ROW} FROM {CONVERSATIONS_TABLE} WHERE {' AND '.join(where)} "
                       f"ORDER BY last_time DESC, conversation_id, conversation_seq LIMIT {PAGE_SIZE + 1} OFFSET {f.offset}",
                       args).fetchall()
    return ConversationPage(tuple(ConversationRow(*r) for r in rows[:PAGE_SIZE]), f.offset, len(rows) > PAGE_SIZE)


@dataclass(frozen=True)
class Turn:
    turn: int
    trace_id: str
    started_at: datetime
    ended_at: datetime
    intent_key: str | None
    calls: int
    input_tokens: int | None
    output_tokens: int | None
    end_marker: bool
    question: str | None  # the last user message of its first model call, as stored (redacted)
    answer: str | None  # the last assistant output of its last model call
    judgments: tuple[Judgment, ...]  # its trace's latest judgments
    signals: tuple[str, ...]  # ids of the drift signals that store it as an example
    items: tuple[str, ...]  # its review items


@dataclass(frozen=True)
class ConversationDetail:
    summary: ConversationRow
    seqs: tuple[int, ...]  # every conversation of the key, in order
    turns: tuple[Turn, ...]  # in order, at most MAX_TURNS
    verdicts: tuple[Judgment, ...]  # conversation-level (a conversation evaluator's, on the whole)


def conversation_key(raw: str) -> str:
    from verdict.conversation import validate_conversation_id

    try:
        return validate_conversation_id(raw)
    except ValueError as exc:
        raise BadRequest(f"conversation id: {exc}") from None


_JUDGMENT = "evaluator, fingerprint, cluster, dimension, value, score, reason, error_code"


def conversation_detail(cur, key: str, seq: int | None, trace_id: str | None,
                        tables: tuple[str, str]) -> ConversationDetail | None:
    """Conversation `seq` of `key` (or the one holding `trace_id`, else the latest); None when the tenant has none.
    `tables`: (turns, conversations) holding the key's rows — the snapshot's whole-lake tables once the list
    computed them, else `load_key`'s."""
    turns_table, conversations_table = tables
    summaries = {r[1]: ConversationRow(*r) for r in cur.execute(
        f"SELECT {_ROW} FROM {conversations_table} WHERE conversation_id = $k ORDER BY conversation_seq",
        {"k": key}).fetchall()}
    if not summaries:
        return None
    if seq is None and trace_id is not None:
        found = cur.execute(f"SELECT conversation_seq FROM {turns_table} WHERE conversation_id = $k AND trace_id = $t",
                            {"k": key, "t": trace_id}).fetchone()
        seq = found[0] if found else None
    chosen = summaries.get(seq if seq is not None else max(summaries))
    if chosen is None:
        return None
    turns = cur.execute(f"""
        SELECT turn, trace_id, start_time, end_time, intent_key, calls, input_tokens, output_tokens, end_marker
        FROM {turns_table} WHERE conversation_id = $k AND conversation_seq = $s ORDER BY turn LIMIT {MAX_TURNS}""",
                        {"k": key, "s": chosen.conversation_seq}).fetchall()
    ids = [t[1] for t in turns]
    texts = _texts(cur, ids, {t[2].date() for t in turns})
    marks, args = _constants(ids)
    judged: dict[str, list[Judgment]] = {}
    for row in cur.execute(f"SELECT trace_id, {_JUDGMENT} FROM judgments WHERE trace_id IN ({marks})"
                           " ORDER BY evaluator, fingerprint, dimension", args).fetchall():
        judged.setdefault(row[0], []).append(Judgment(*row[1:]))
    examples: dict[str, list[str]] = {}
    for signal_id, trace in cur.execute(f"""
            SELECT DISTINCT signal_id, trace_id FROM (
              SELECT signal_id, unnest(from_json(examples, '["VARCHAR"]')) AS trace_id FROM drift_signals)
            WHERE trace_id IN ({marks}) ORDER BY signal_id""", args).fetchall():
        examples.setdefault(trace, []).append(signal_id)
    items = {trace: trace_items_in(cur, trace) for trace in ids}  # review SQL stays in the store (small TEMP table)
    out = tuple(Turn(*t, *texts.get(t[1], (None, None)), tuple(judged.get(t[1], ())),  # type: ignore[call-arg]  # columns in order
                     tuple(examples.get(t[1], ())), items[t[1]]) for t in turns)
    verdicts = tuple(Judgment(*r) for r in cur.execute(
        f"SELECT {_JUDGMENT} FROM judgments WHERE trace_id = $t AND unit = '{CONVERSATION}' "
        "ORDER BY evaluator, fingerprint, dimension", {"t": unit_id(chosen.first_trace_id)}).fetchall())
    return ConversationDetail(chosen, tuple(summaries), out, verdicts)


def keys_of(cur, traces: Mapping[str, date]) -> dict[str, str]:
    """trace id -> conversation key (its earliest keyed span's, the views' rule) for those of `traces` (trace id ->
    the day it started) that have one: read in their date partitions and the days around (dates as literals), so a
    page linking a few traces does not compute every conversation of the lake."""
    if not traces:
        return {}
    marks, args = _constants(list(traces))
    dates = ", ".join(sorted({f"DATE '{(d + timedelta(days=k)).isoformat()}'" for d in traces.values() for k in (-1, 0, 1)}))
    return dict(cur.execute(f"""
        SELECT trace_id, arg_min(conversation_id, (start_time, span_id)) FROM spans
        WHERE date IN ({dates}) AND conversation_id IS NOT NULL AND trace_id IN ({marks}) GROUP BY trace_id""",
                            args).fetchall())


def _constants(ids: list[str]) -> tuple[str, dict[str, str]]:
    """`IN (...)` placeholders for a list of constants (NULL for none)."""
    return (", ".join(f"$t{i}" for i in range(len(ids))) or "NULL"), {f"t{i}": t for i, t in enumerate(ids)}


def _texts(cur, ids: list[str], days: set[date]) -> dict[str, tuple[str | None, str | None]]:
    """trace id -> (question, answer): its first call's last user message, its last call's output, as stored.
    Read in the turns' date partitions and the days after (dates as literals: other partitions are pruned)."""
    if not ids:
        return {}
    marks, args = _constants(ids)
    dates = ", ".join(sorted({f"DATE '{(d + timedelta(days=k)).isoformat()}'" for d in days for k in (0, 1)}))
    return {t: (last_text(q, "user"), last_text(a, "assistant")) for t, q, a in cur.execute(f"""
        SELECT trace_id, arg_min(input_messages, (start_time, span_id)), arg_max(output_messages, (end_time, span_id))
        FROM llm_calls WHERE date IN ({dates}) AND trace_id IN ({marks}) GROUP BY trace_id""", args).fetchall()}
