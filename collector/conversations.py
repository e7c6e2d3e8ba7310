"""The conversation views over one tenant's `spans` and `llm_calls` (docs/conversations.md).

A trace is a turn of the conversation named by its earliest span carrying a `conversation_id` (the
collector fills that column from `gen_ai.conversation.id` and the vendor spellings). Turns of one id are
cut into conversations: a turn starting `inactivity_minutes` or more after the previous turns' last end, or
following a turn marked `verdict.conversation.end`, starts the next conversation of that id
(`conversation_seq` 2, 3, ...). So a closed conversation never reopens, and an id an app sends for ever
(a constant) still yields bounded conversations. Status is decided against a clock passed in (`as_of`), never
the wall clock: the `conversations` view passes the newest span end in the tenant's lake.

  conversation_turns_within(inactivity_minutes)   one row per turn (trace)        (table macro)
  conversations_at(as_of, inactivity_minutes)     one row per conversation        (table macro)
  conversation_turns, conversations               the macros with the default limit and clock (views)

One key's rows without computing every key's (what a page about one conversation needs):

  conversation_turns_of(conversation_key, traces, inactivity_minutes)   its turns; `traces`: a list holding every
      trace id `span_conversation_keys` (collector.views) has under the key (more are harmless)  (table macro)
  conversations_among(turns, as_of, inactivity_minutes)   one row per conversation of the turns in the table
      named `turns`                                                                                (table macro)
"""

from __future__ import annotations

from collector.view_sql import create_view
from verdict.conversation import DEFAULT_INACTIVITY_MINUTES
from verdict.semconv import CONVERSATION_END
from verdict.tenancy import TenantId

# A turn's end marker may be on any span of its trace (the SDK stamps every span inside the context).
_END_MARKER = f"coalesce(attributes->>'$.\"{CONVERSATION_END}\"' = 'true', false)"
_INACTIVITY = "to_seconds(inactivity_minutes * 60)"
_SPAN_COLUMNS = "trace_id, span_id, start_time, end_time, conversation_id, service_name, intent_key, attributes"


def _turns_select(tenant: TenantId, scope: str = "true", key: str | None = None) -> str:
    """The turns of the keyed traces whose id satisfies `scope` (a condition on `trace_id`); with `key` (an SQL
    expression), only the turns of that conversation key. Conversations are cut per key, so a `scope` holding
    every trace of the keys it touches gives those keys exactly the rows of the whole lake."""
    tenant_literal = "'" + tenant.replace("'", "''") + "'"
    # A scoped read takes the traces' spans from `spans` once (each read re-runs its dedupe over fresh segments).
    rows = "spans" if key is None else "scoped"
    return f"""WITH {"" if key is None else f"scoped AS MATERIALIZED (SELECT {_SPAN_COLUMNS} FROM spans WHERE {scope}),"}
keyed AS (
  SELECT * FROM (
    SELECT trace_id, arg_min(conversation_id, (start_time, span_id)) AS conversation_id
    FROM {rows} WHERE conversation_id IS NOT NULL GROUP BY trace_id
  ) WHERE {"true" if key is None else f"conversation_id = {key}"}
),
traces AS (
  SELECT trace_id, min(start_time) AS start_time, max(end_time) AS end_time,
    list_sort(list_distinct(list(service_name))) AS services,
    arg_min(intent_key, (start_time, span_id)) AS intent_key,
    bool_or({_END_MARKER}) AS end_marker
  FROM {rows} SEMI JOIN keyed USING (trace_id) GROUP BY trace_id
),
usage AS (
  SELECT trace_id, count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
  FROM llm_calls SEMI JOIN keyed USING (trace_id) WHERE {scope} GROUP BY trace_id
),
ordered AS (
  SELECT conversation_id, t.*, coalesce(u.calls, 0) AS calls, u.input_tokens, u.output_tokens,
    max(t.end_time) OVER (turns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end,
    coalesce(lag(t.end_marker) OVER turns, false) AS after_end
  FROM keyed JOIN traces t USING (trace_id) LEFT JOIN usage u USING (trace_id)
  WINDOW turns AS (PARTITION BY conversation_id ORDER BY t.start_time, trace_id)
),
numbered AS (
  SELECT *, sum((previous_end IS NULL OR after_end OR start_time >= previous_end + {_INACTIVITY})::INT)
    OVER (PARTITION BY conversation_id ORDER BY start_time, trace_id) AS conversation_seq
  FROM ordered
)
SELECT {tenant_literal} AS tenant_id, conversation_id, conversation_seq,
  row_number() OVER (PARTITION BY conversation_id, conversation_seq ORDER BY start_time, trace_id) AS turn,
  trace_id, start_time, end_time, services, intent_key, calls, input_tokens::BIGINT AS input_tokens,
  output_tokens::BIGINT AS output_tokens, end_marker
FROM numbered"""


def _conversations_select(turns: str) -> str:
    """One row per conversation of the turns `turns` (a table expression), status as of `as_of`."""
    return f"""SELECT * EXCLUDE (ended),
  CASE WHEN ended THEN 'end_marker' WHEN last_time + {_INACTIVITY} <= as_of THEN 'inactivity' END AS closed_by,
  CASE WHEN ended OR last_time + {_INACTIVITY} <= as_of THEN 'closed' ELSE 'open' END AS status,
  CASE WHEN ended THEN last_time ELSE last_time + {_INACTIVITY} END AS closes_at
FROM (
  SELECT tenant_id, conversation_id, conversation_seq, first(trace_id ORDER BY turn) AS first_trace_id,
    count(*) AS turns, min(start_time) AS first_time, max(end_time) AS last_time,
    first(intent_key ORDER BY turn) AS intent_key, list_sort(list_distinct(list(intent_key))) AS intent_keys,
    list_sort(list_distinct(flatten(list(services)))) AS services, sum(calls)::BIGINT AS calls,
    sum(input_tokens)::BIGINT AS input_tokens, sum(output_tokens)::BIGINT AS output_tokens,
    bool_or(end_marker) AS ended
  FROM {turns}
  GROUP BY tenant_id, conversation_id, conversation_seq
)"""


# One key's turns read only the traces `traces` (a list), which must include every trace with a span of the key
# (`span_conversation_keys` lists them cheaply: no dedupe window there): the earliest-key rule is re-checked on
# `spans`, so a superset is exact. `list_contains` is pushed into the segment scans, below the `spans` view's dedupe
# window, but costs the list's length per row: past 1,000 traces only the semi join (one hash probe) filters.
_AMONG = "(len(traces) > 1000 OR list_contains(traces, trace_id)) AND trace_id IN (SELECT unnest(traces))"


def conversation_macros(tenant: TenantId) -> list[str]:
    """The macros above, over views named `spans` and `llm_calls` (bound when created: collector.views._lake_shape)."""
    return [
        f"CREATE OR REPLACE MACRO conversation_turns_within(inactivity_minutes) AS TABLE\n{_turns_select(tenant)}",
        "CREATE OR REPLACE MACRO conversations_at(as_of, inactivity_minutes) AS TABLE\n"
        + _conversations_select("conversation_turns_within(inactivity_minutes)"),
        "CREATE OR REPLACE MACRO conversation_turns_of(conversation_key, traces, inactivity_minutes) AS TABLE\n"
        + _turns_select(tenant, _AMONG, "conversation_key"),
        "CREATE OR REPLACE MACRO conversations_among(turns, as_of, inactivity_minutes) AS TABLE\n"
        + _conversations_select("query_table(turns)"),
    ]


def conversation_views(inactivity_minutes: float = DEFAULT_INACTIVITY_MINUTES) -> list[str]:
    """The views above, over the macros."""
    if not inactivity_minutes > 0:
        raise ValueError(f"the conversation inactivity limit must be positive minutes, got {inactivity_minutes!r}")
    limit = repr(float(inactivity_minutes))
    return [
        create_view("conversation_turns", f"SELECT * FROM conversation_turns_within({limit})"),
        create_view("conversations", f"SELECT * FROM conversations_at((SELECT max(end_time) FROM spans), {limit})"),
    ]
