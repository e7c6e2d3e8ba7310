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
"""

from __future__ import annotations

from verdict.conversation import DEFAULT_INACTIVITY_MINUTES
from verdict.semconv import CONVERSATION_END
from verdict.tenancy import TenantId

# A turn's end marker may be on any span of its trace (the SDK stamps every span inside the context).
_END_MARKER = f"coalesce(attributes->>'$.\"{CONVERSATION_END}\"' = 'true', false)"
_INACTIVITY = "to_seconds(inactivity_minutes * 60)"


def _turns_macro(tenant: TenantId) -> str:
    tenant_literal = "'" + tenant.replace("'", "''") + "'"
    return f"""CREATE OR REPLACE MACRO conversation_turns_within(inactivity_minutes) AS TABLE
WITH keyed AS (
  SELECT trace_id, arg_min(conversation_id, (start_time, span_id)) AS conversation_id
  FROM spans WHERE conversation_id IS NOT NULL GROUP BY trace_id
),
traces AS (
  SELECT trace_id, min(start_time) AS start_time, max(end_time) AS end_time,
    list_sort(list_distinct(list(service_name))) AS services,
    arg_min(intent_key, (start_time, span_id)) AS intent_key,
    bool_or({_END_MARKER}) AS end_marker
  FROM spans SEMI JOIN keyed USING (trace_id) GROUP BY trace_id
),
usage AS (
  SELECT trace_id, count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
  FROM llm_calls SEMI JOIN keyed USING (trace_id) GROUP BY trace_id
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


_CONVERSATIONS_MACRO = f"""CREATE OR REPLACE MACRO conversations_at(as_of, inactivity_minutes) AS TABLE
SELECT * EXCLUDE (ended),
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
  FROM conversation_turns_within(inactivity_minutes)
  GROUP BY tenant_id, conversation_id, conversation_seq
)"""


def conversation_statements(tenant: TenantId, inactivity_minutes: float = DEFAULT_INACTIVITY_MINUTES) -> list[str]:
    """The macros and views above, over the `spans` and `llm_calls` views already defined."""
    if not inactivity_minutes > 0:
        raise ValueError(f"the conversation inactivity limit must be positive minutes, got {inactivity_minutes!r}")
    limit = repr(float(inactivity_minutes))
    return [
        _turns_macro(tenant),
        _CONVERSATIONS_MACRO,
        f"CREATE OR REPLACE VIEW conversation_turns AS SELECT * FROM conversation_turns_within({limit})",
        "CREATE OR REPLACE VIEW conversations AS\n"
        f"SELECT * FROM conversations_at((SELECT max(end_time) FROM spans), {limit})",
    ]
