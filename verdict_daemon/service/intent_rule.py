"""The intent rule: which intent key a model call has, in SQL over a lake connection (docs/daemon.md, "The intent
rule"). Both registry modes read it: the sampler (`--registry-mode off`: a turn's stratum and cluster) and the
analysis index (`active`: what a registry version is fitted on and assigns by), so one trace never gets two keys; an
imported evaluation series' records take their trace's key through the index's `trace_rows`.

A call's key is that of the nearest span carrying `verdict.intent_key`: the call itself, else its parent, its
parent's parent, up to MAX_DEPTH levels (`intent_context` stamps the app's, agent's or framework's span around a
foreign instrumentation's call). A key the collector refused (`intent_key` NULL, `intent_key_error` set) is carried
too: the nearer span said which intent it serves, so a farther span's key does not replace it, and the trace is
reported with the refusal rather than filed under another intent. A trace's key is then read from its calls by each
mode (its last call with one, by end time).
"""

from __future__ import annotations

MAX_DEPTH = 64

# The parent a call inherits from: only a call carrying no key of its own (valid or refused) has one to walk to. A
# table of calls may keep `parent_span_id` as this expression to hold the column for those calls only.
WALK_PARENT = "CASE WHEN intent_key IS NULL AND intent_key_error IS NULL THEN parent_span_id END"


def inherit_intents(con, calls: str) -> None:
    """TEMP TABLE inherited_intent(trace_id, span_id, intent_key, intent_key_error): for each row of the table
    `calls` (trace_id, span_id, parent_span_id, intent_key, intent_key_error) that inherits, the key (or refusal) of
    its nearest ancestor in the connection's `spans` carrying one. Ancestors are read from what `spans` holds (its
    date partitions bound them). Without a call to resolve, `spans` is not read (reading it holds its fresh rows
    for deduplication)."""
    walking = f"FROM {calls} WHERE ({WALK_PARENT}) IS NOT NULL"
    if not con.execute(f"SELECT count(*) {walking}").fetchone()[0]:
        con.execute("CREATE OR REPLACE TEMP TABLE inherited_intent "
                    "(trace_id VARCHAR, span_id VARCHAR, intent_key VARCHAR, intent_key_error VARCHAR)")
        return
    # DISTINCT: a lake read file by file may hold an exporter retry's exact copy of a span; without it the walk
    # would double at every level.
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE inherited_intent AS
        WITH RECURSIVE tree AS (  -- the spans of the traces with a call to resolve, not of every trace
            SELECT DISTINCT trace_id, span_id, parent_span_id, intent_key, intent_key_error FROM spans
            SEMI JOIN (SELECT trace_id {walking}) USING (trace_id)
        ),
        up(trace_id, span_id, parent, depth, key, error) AS (
            SELECT trace_id, span_id, parent_span_id, 0, NULL::VARCHAR, NULL::VARCHAR {walking}
            UNION ALL
            SELECT u.trace_id, u.span_id, t.parent_span_id, u.depth + 1, t.intent_key, t.intent_key_error
            FROM up u JOIN tree t ON t.trace_id = u.trace_id AND t.span_id = u.parent
            WHERE u.key IS NULL AND u.error IS NULL AND u.depth < {MAX_DEPTH}
        )
        SELECT DISTINCT ON (trace_id, span_id) trace_id, span_id, key AS intent_key, error AS intent_key_error
        FROM up WHERE key IS NOT NULL OR error IS NOT NULL
        ORDER BY trace_id, span_id, depth, key, error""")


def with_intents(calls: str) -> str:
    """A query: the rows of `calls` (after `inherit_intents` on it) with `intent_key` and `intent_key_error` by the
    rule. A call carrying its own has no inherited row, so the coalesce keeps its own, the refusal included."""
    return f"""SELECT c.* REPLACE (coalesce(c.intent_key, i.intent_key) AS intent_key,
                                  coalesce(c.intent_key_error, i.intent_key_error) AS intent_key_error)
               FROM {calls} c LEFT JOIN inherited_intent i USING (trace_id, span_id)"""
