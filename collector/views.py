"""DuckDB views over the span lake, scoped to one tenant: `spans`, `logs` and `llm_calls` (and the views over
them: the conversations, collector.conversations; `evaluations`, collector.evaluations).

`llm_calls` is one row per model call, whichever instrumentation(s) described it:
  * messages: a span's own message columns, else those of the GenAI log events emitted in it
    (same trace_id and span_id, in any order and any request: joined when read);
  * one call, one row: the call identity rule (docs/collector.md, *llm_calls*) merges the rows two
    instrumentations wrote for one call (the same response id, or input, model and service, overlapping in
    time) into the best-ranked one, so tokens are never counted twice; `_contested` says which rows it compares.
  It is built from views a user can query too: `llm_call_rows` (inference spans, before the rule) less
  `llm_call_duplicates` (the rows the rule left out, with the rule and the row kept); `llm_calls_audit` counts
  those, and the spans left out as non-inference per operation (collector.call_audit reads it).

Readers see each (trace_id, span_id) once (exporter retries and interrupted compactions can
leave copies on disk); see `view_statements` for how that stays cheap over millions of spans. The views name
the files of one listing of the lake (a snapshot: collector.lake_source), which compaction, retention and
shipping leave on disk for their grace period (collector.retire). `open_scoped()` gives an in-memory DuckDB where user SQL can read only
the tenant's own partition directory: external access is switched off except for that
directory, and the configuration is locked so the query cannot switch it back on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from collector import call_input, lake
from collector.compaction import COMPACTED_PREFIX
from collector.conversations import conversation_macros, conversation_views
from collector.evaluations import evaluation_statements
from collector.lake_source import LakeSource
from collector.lake_union import LakeUnion
from collector.view_sql import create_view
from verdict.semconv import LOG_COLUMNS, SPAN_COLUMNS
from verdict.tenancy import TenantId

_DUCKDB_TYPES = {"string": "VARCHAR", "int64": "BIGINT", "timestamp_ns": "TIMESTAMP_NS", "string_list": "VARCHAR[]"}

COMPACTED_PATTERN = f"{COMPACTED_PREFIX}*{lake.SEGMENT_SUFFIX}"
FRESH_PATTERN = f"[0-9]*{lake.SEGMENT_SUFFIX}"  # written by the collector, not yet compacted
RETRY_HORIZON = "1 DAY"

# Model inference operations (GenAI semconv names, plus the Responses API's): only these are calls.
# Embeddings and every framework step (task, workflow, chain, agent, tool, retrieval, memory) stay in `spans`.
INFERENCE_OPERATIONS = ("chat", "text_completion", "generate_content", "responses")

# Instrumentation scopes of provider SDKs' own spans: they report usage as the provider sent it.
PROVIDER_SDK_SCOPES = ("anthropic", "com.anthropic", "mistralai")

LLM_CALL_COLUMNS = (
    "tenant_id", "date", "trace_id", "span_id", "parent_span_id", "service_name", "name", "start_time",
    "end_time", "duration_ns", "duration_ns / 1e6 AS latency_ms", "status_code", "status_message", "operation",
    "provider", "request_model", "response_model", "response_id", "finish_reasons", "input_tokens",
    "output_tokens", "cached_input_tokens", "cache_creation_input_tokens", "reasoning_tokens", "intent_key",
    "intent_key_error", "workload", "error_type", "input_messages", "output_messages", "system_instructions",
    "content_omitted", "attributes", "dialect", "received_at",
)
MESSAGE_COLUMNS = ("input_messages", "output_messages", "system_instructions")
# A span's input fingerprint as each part of the span union gives it: the stored column as it is in the files that
# store it for every row (RuleFacts.fingerprinted), so their input_messages are never read (decompressing that column
# for every call was most of what the rule cost over a compacted lake); computed where not stored elsewhere.
# Computed above the union instead, the parse's fallback is evaluated for every row, also where it is NULL (1.27x
# ccfa5fc's CPU at 10 M where this is 1.0x). Internal to the views: `llm_call_rows.input_fingerprint` shows it.
_KEY = "stored_input_key"
# Columns of the span files no view shows (the hive partition; stored fingerprints of earlier definitions).
_HIDDEN = ", ".join(("tenant", *(name for name, _kind in call_input.RETIRED_COLUMNS)))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def tenant_dir(data_dir: Path, tenant: TenantId) -> Path:
    return lake.spans_root(data_dir.resolve()) / f"tenant={tenant}"


def logs_tenant_dir(data_dir: Path, tenant: TenantId) -> Path:
    return lake.logs_root(data_dir.resolve()) / f"tenant={tenant}"


def _typed_empty(columns=SPAN_COLUMNS) -> str:
    typed = ", ".join(f"NULL::{_DUCKDB_TYPES[c.arrow_type]} AS {c.name}" for c in columns)
    if columns is SPAN_COLUMNS:  # compacted segments store it; the others (and lakes from before) lack it
        typed += "".join(f", NULL::{kind} AS {name}" for name, kind in (
            (call_input.FINGERPRINT_COLUMN, call_input.FINGERPRINT_TYPE), *call_input.RETIRED_COLUMNS))
    return f"SELECT {typed}, NULL::VARCHAR AS tenant, NULL::DATE AS date WHERE false"


def _read(paths: list[str], columns=SPAN_COLUMNS) -> str:
    """The segments `paths`, always with every schema column (NULL where a file lacks one)."""
    files = "[" + ", ".join(_quote(p) for p in paths) + "]"
    return (f"({_typed_empty(columns)}\n  UNION ALL BY NAME\n  SELECT * FROM read_parquet({files}, "
            "hive_partitioning = true, union_by_name = true, hive_types = {'date': 'DATE'}))")


def _logs_view(source: LakeUnion, tenant: TenantId, days: Sequence[date] | None) -> str:
    """Log records, each once (exporter retries resend the same record: same record_id)."""
    files = source.files("logs", tenant, "*" + lake.SEGMENT_SUFFIX, days)
    if files:
        body = (f"SELECT * EXCLUDE (tenant) FROM {_read(files, LOG_COLUMNS)}\n"
                "QUALIFY row_number() OVER (PARTITION BY record_id ORDER BY received_at) = 1")
    else:
        body = f"SELECT * EXCLUDE (tenant) FROM ({_typed_empty(LOG_COLUMNS)})"
    return create_view("logs", f"SELECT {_quote(tenant)} AS tenant_id, * FROM (\n{body})")


def _event_messages() -> str:
    """Per (trace_id, span_id): the JSON arrays of its GenAI log events concatenated in event order."""
    def concat(column: str) -> str:
        return (f"'[' || string_agg(substr({column}, 2, length({column}) - 2), ',' "
                f"ORDER BY time, received_at, sequence) || ']' AS {column}")

    return (f"SELECT trace_id, span_id, {', '.join(concat(c) for c in MESSAGE_COLUMNS)}\nFROM logs\n"
            "WHERE span_id IS NOT NULL AND trace_id IS NOT NULL AND "
            f"({' OR '.join(f'{c} IS NOT NULL' for c in MESSAGE_COLUMNS)})\nGROUP BY trace_id, span_id")


@dataclass(frozen=True)
class RuleFacts:
    """What the Parquet footers of the tenant's spans say about the identity rule's input (no rows are read)."""

    instrumentations: int  # the most distinct values of `dialect` or `scope_name` (NULL counts as one)
    # Most input_messages values (not NULLs) lie in column chunks a writer stored dictionary-encoded: prompts repeat
    # (DuckDB's writer, which compacts, keeps a dictionary only for a few thousand distinct values per row group).
    repeated_prompts: bool
    # Most input_messages values lie in files that store the input fingerprint (compacted since it was added).
    stored_fingerprints: bool = False
    fingerprinted: frozenset[str] = frozenset()  # the files that store it (for every row: call_input.STORED)
    # All but UNSTORED_SHARE of them do (Pruning.by_columns).
    nearly_all_stored: bool = False


@dataclass(frozen=True)
class Pruning:
    """How the identity rule prunes (the answer is the same either way): `keys_first` as `_contested`; `stored_keys`:
    the key-first pass keys calls by the input fingerprint (stored, computed where not), else by their parsed user
    text, hashed (cheaper than computing a fingerprint for every call where few are stored). `part_keys`: the
    contested calls read it as the union's parts give it (`_KEY`, computed below the rule's filters, for every call
    where none is stored), else compute it from input_messages above them (a lake compacted before the column; log
    events, whose spans store none)."""

    keys_first: bool
    stored_keys: bool
    part_keys: bool = False
    by_columns: bool = False  # with stored_keys: `_shared_by_key` counts plain columns, reading the keys twice


# The share of input messages without a stored fingerprint up to which the key-first pass reads keys twice
# (`_shared_by_key`): each such call is parsed in both reads (≈ 2.8 µs), where materializing every call's hashed
# keys once costs ≈ 0.17 µs a call (docs/collector.md, "Counted by plain columns").
UNSTORED_SHARE = 0.05


def rule_facts(source: LakeUnion, con, tenant: TenantId, days: Sequence[date] | None) -> RuleFacts:
    """The tenant's RuleFacts from the footers of its span segments."""
    files = source.files("spans", tenant, "*" + lake.SEGMENT_SUFFIX, days)
    if not files:
        return RuleFacts(0, False)
    stats = con.execute(
        "SELECT path_in_schema, file_name, stats_min_value, stats_max_value, stats_null_count, encodings, num_values "
        "FROM parquet_metadata(?) WHERE path_in_schema IN ('dialect', 'scope_name', 'input_messages', ?)",
        [files, call_input.FINGERPRINT_COLUMN]).fetchall()
    counts = []
    for column in ("dialect", "scope_name"):
        found = [row[1:5] for row in stats if row[0] == column]
        values = {v for _f, low, high, _n in found for v in (low, high)}
        if any(n for *_x, n in found) or len({f for f, *_x in found}) < len(files):
            values.add(None)  # NULLs, or files from before the column
        counts.append(len(values))
    # Values, not NULLs: spans whose messages came as log events leave the column empty.
    prompts = [(any(e.strip().endswith("DICTIONARY") for e in (row[5] or "").split(",")), (row[6] or 0) - (row[4] or 0),
                row[1]) for row in stats if row[0] == "input_messages"]
    storing = {row[1] for row in stats if row[0] == call_input.FINGERPRINT_COLUMN}
    total = sum(n for _d, n, _f in prompts)
    repeated = sum(n for dictionary, n, _f in prompts if dictionary)
    stored = sum(n for _d, n, file in prompts if file in storing)
    return RuleFacts(max(counts), 2 * repeated > total, 2 * stored > total, frozenset(storing),
                     total > 0 and total - stored <= UNSTORED_SHARE * total)


# Per contested row: the model named (request, else response model; lower case, without a `provider/` prefix
# or a trailing release date), its input fingerprint (`llm_call_rows.input_fingerprint`), and its rank among twins.
_CALL_MODEL = (r"regexp_replace(lower(coalesce(request_model, response_model)), "
               r"'^[a-z0-9_.-]+/|-(\d{4}-\d{2}-\d{2}|\d{8})$', '', 'g')")
_PROVIDER_SDK = " OR ".join(f"scope_name LIKE '{scope}%'" for scope in PROVIDER_SDK_SCOPES)
_CALL_RANK = ("8 * (input_messages IS NOT NULL AND output_messages IS NOT NULL)::INT"
              " + 4 * (input_tokens IS NOT NULL AND output_tokens IS NOT NULL)::INT"
              f" + 2 * coalesce({_PROVIDER_SDK}, false)::INT + (dialect IS NOT DISTINCT FROM 'verdict')::INT")


def _islands(name: str, key: str, valid: str) -> str:
    """CTEs `name` (call_row -> the call it joins) for the rows sharing `key`, model and service whose
    [start_time, end_time] overlap, transitively. Such a group is one call only when each instrumentation
    wrote at most one of its rows and `valid` holds; otherwise (two calls that happen to agree) nothing merges.
    Only keys two instrumentations wrote are looked at: the others can form no such group. Over the contested
    rows not in `pairs` (they are in no other row's group)."""
    part = f"call_service, call_model, {key}"
    return (
        f"{name}_keys AS (\n  SELECT {part} FROM rest WHERE {key} IS NOT NULL AND call_model IS NOT NULL\n"
        "  GROUP BY ALL HAVING min(instrumentation) <> max(instrumentation)\n),\n"
        f"{name}_rows AS (\n  SELECT *, sum(opens::INT) OVER (PARTITION BY {part} ORDER BY start_time, call_row) AS island\n"
        f"  FROM (SELECT call_row, call_service, call_model, {key}, instrumentation, response_id, call_input, start_time,\n"
        f"    coalesce(start_time > max(end_time) OVER (PARTITION BY {part} ORDER BY start_time, call_row\n"
        "      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true) AS opens\n"
        f"    FROM rest SEMI JOIN {name}_keys USING ({part}))\n),\n"
        f"{name} AS (\n  SELECT r.call_row, g.call FROM {name}_rows r JOIN (\n"
        f"    SELECT {part}, island, min(call_row) AS call FROM {name}_rows GROUP BY ALL\n"
        f"    HAVING count(*) > 1 AND count(DISTINCT instrumentation) = count(*) AND {valid}\n"
        f"  ) g USING ({part}, island)\n)"
    )


# CTEs `pairs` and `rest`. A response id held by exactly two contested rows, of two instrumentations, that overlap
# (the later start no later than the earlier end: the islands' sweep would not split them) and agree on an input no
# other contested row has, is one call by both relations, and no other row's island or link reaches either row:
# what two instrumentations describing one call write. Such pairs are decided by these two aggregates (`kept`: the
# row the rank keeps, as `losers` orders them); the islands and links run over the `rest`, where removing whole
# closed groups changes nothing.
_PAIRS = (
    "pairs AS MATERIALIZED (\n  SELECT call_service, call_model, response_id, kept FROM (\n"
    "    SELECT call_service, call_model, response_id, min(call_input) AS call_input,\n"
    "      arg_min(call_row, (-call_rank, start_time, span_id)) AS kept\n"
    "    FROM contested WHERE response_id IS NOT NULL AND call_model IS NOT NULL GROUP BY ALL\n"
    "    HAVING count(*) = 2 AND count(call_input) = 2 AND min(call_input) = max(call_input)\n"
    "      AND min(instrumentation) <> max(instrumentation)\n"
    "      AND count(start_time) = 2 AND count(end_time) = 2 AND max(start_time) <= min(end_time)\n"
    "  ) SEMI JOIN (\n"
    "    SELECT call_service, call_model, call_input FROM contested WHERE call_input IS NOT NULL AND call_model IS NOT NULL\n"
    "    GROUP BY ALL HAVING count(*) = 2\n"
    "  ) USING (call_service, call_model, call_input)\n),\n"
    "rest AS (\n  SELECT * FROM contested ANTI JOIN pairs USING (call_service, call_model, response_id)\n)"
)


def _contested(pruning: Pruning) -> str:
    """CTE `contested`: the calls that can have a twin, with the columns the identity rule reads. A call is in a group
    the rule merges only when it overlaps in time, transitively, a call of another instrumentation with its service
    and model, and only when one of its keys (service, model and response id; service, model and the user messages'
    text, which the input fingerprint digests) is shared by such a call. Both are tested over narrow rows, as hashes
    (a collision only adds a call, which the exact keys of `_islands` then leave alone), and only the calls that
    pass are read again with their messages. With `keys_first`, every call's keys are hashed (its messages parsed),
    and a sweep by start time over the calls of each key two instrumentations wrote splits them into overlap
    components; this prunes a lake where one model's calls overlap all day. Otherwise the sweep runs over the calls
    of each service and model, unparsed: keys shared by many calls (prompts that repeat) prune little, and their
    parse would be the whole cost. Either way only components two instrumentations wrote keep their calls."""
    if pruning.keys_first:
        key_calls = _repeated_keys(pruning.stored_keys, pruning.by_columns)
    else:  # a call without a model is in no group: it leaves here
        key_calls = ("key_calls AS (\n  SELECT hash(trace_id, span_id) AS call_hash, instrumentation, start_time, end_time,\n"
                     "    0 AS kind, hash(call_service, call_model) AS key\n  FROM candidates WHERE call_model IS NOT NULL\n)")
    order = "PARTITION BY kind, key ORDER BY start_time"
    return (
        f"{key_calls},\n"
        # The keys two instrumentations wrote (named by a hash: `_identity_rule`). Most are one call's: two rows. Two sane
        # intervals (start <= end) are one component of the sweep exactly when the later start is no later than the
        # earlier end, so an aggregate decides such keys; any other key (more rows, a time missing or an end before
        # its start, which the collector refuses but the lake may hold) goes through the sweep: the pruning must stay
        # exact.
        "shared AS MATERIALIZED (\n  SELECT kind, key,\n"
        "    count(*) = 2 AND count(start_time) = 2 AND count(end_time) = 2 AND bool_and(end_time >= start_time) AS decided,\n"
        "    max(start_time) <= min(end_time) AS overlapping\n"
        "  FROM key_calls GROUP BY ALL HAVING min(instrumentation) <> max(instrumentation)\n),\n"
        "sweep AS (\n  SELECT * FROM (\n    SELECT *,\n"
        "      coalesce(start_time > max(end_time) OVER (by_start ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true)\n"
        "        AS opens,\n"
        "      coalesce(lead(start_time) OVER by_start > max(end_time) OVER (by_start ROWS UNBOUNDED PRECEDING), true)\n"
        "        AS closes\n"
        "    FROM key_calls SEMI JOIN (SELECT kind, key FROM shared WHERE NOT decided) USING (kind, key)\n"
        f"    WINDOW by_start AS ({order}))\n"
        "  WHERE NOT (opens AND closes)  -- a call alone in its component\n),\n"
        # Without those, each component is still a run of rows its first row opens.
        f"components AS (\n  SELECT *, sum(opens::INT) OVER ({order}) AS component FROM sweep\n),\n"
        "paired AS (\n  SELECT call_hash FROM components SEMI JOIN (\n"
        "    SELECT kind, key, component FROM components GROUP BY ALL HAVING min(instrumentation) <> max(instrumentation)\n"
        "  ) USING (kind, key, component)\n"
        "  UNION ALL\n"
        "  SELECT call_hash FROM key_calls SEMI JOIN (SELECT kind, key FROM shared WHERE decided AND overlapping) USING (kind, key)\n),\n"
        # `call_row` names a row in the CTEs below: a number, cheaper to sort, group and join by than the ids' text
        # (1.2x on a lake where every call is contested), and stable only because `contested` is evaluated once.
        "contested AS MATERIALIZED (\n  SELECT trace_id, span_id, row_number() OVER () AS call_row, call_service,\n"
        "    instrumentation, start_time, end_time, response_id, call_model,\n"
        f"    {_KEY if pruning.part_keys else call_input.stored_or_computed()} AS call_input,\n"
        f"    {_CALL_RANK} AS call_rank\n"
        # A collision of call hashes only adds a call whose keys no other instrumentation shares: it joins no group.
        "  FROM candidates WHERE hash(trace_id, span_id) IN (SELECT call_hash FROM paired)\n)"
    )


def _repeated_keys(stored_keys: bool, by_columns: bool) -> str:
    """CTE `key_calls`: every call with a model whose response id key (kind 1) or input key (kind 2) another call has
    too, once per such key. A key is a hash of the service and the response id or input, not the model: a superset
    (the same id or input under two models only adds a call, which `_islands` then leaves alone), so the model's
    normalisation runs for the contested calls only. Most keys occur once and leave through a count. The input key
    is the fingerprint with `stored_keys`, else the user text (`Pruning`).
    With `by_columns` the response ids and the fingerprints are counted as plain columns and the calls of repeated
    ones read again by them (DuckDB applies such a filter inside the scan: the other columns are read only for
    matching rows); a fingerprint not stored is then computed in both reads. Else every call's hashed keys are
    materialized in `keyed` (the user text parsed once), with the call's hash to read it again by."""
    modelled = "coalesce(request_model, response_model) IS NOT NULL"  # a call without a model is in no group
    if by_columns:
        kinds = ((1, "response_id"), (2, _KEY))
        counted = "".join(
            f"repeated_{kind} AS MATERIALIZED (\n  SELECT {column} FROM candidates WHERE {column} IS NOT NULL AND {modelled}\n"
            f"  GROUP BY {column} HAVING count(*) > 1\n),\n" for kind, column in kinds)
        calls = " UNION ALL\n".join(
            f"  SELECT hash(trace_id, span_id) AS call_hash, instrumentation, start_time, end_time, {kind} AS kind,\n"
            f"    hash(call_service, {column}) AS key\n"
            f"  FROM candidates WHERE {column} IN (SELECT {column} FROM repeated_{kind}) AND {modelled}\n"
            for kind, column in kinds)
        return f"{counted}key_calls AS (\n{calls})"
    repeated = " UNION ALL\n".join(
        f"  SELECT call_hash, {kind} AS kind, {key} AS key FROM keyed SEMI JOIN (\n"
        f"    SELECT {key} FROM keyed WHERE {key} IS NOT NULL GROUP BY {key} HAVING count(*) > 1) USING ({key})\n"
        for kind, key in ((1, "id_key"), (2, "input_key")))
    return (
        "keyed AS MATERIALIZED (\n  SELECT call_hash,\n"
        "    CASE WHEN response_id IS NOT NULL THEN hash(call_service, response_id) END AS id_key,\n"
        "    CASE WHEN user_input IS NOT NULL THEN hash(call_service, user_input) END AS input_key\n"
        "  FROM (SELECT hash(trace_id, span_id) AS call_hash, call_service, response_id,\n"
        f"      {_KEY if stored_keys else call_input.user_text()} AS user_input\n"
        f"    FROM candidates WHERE {modelled})\n),\n"
        f"repeated AS (\n{repeated}),\n"
        "key_calls AS (\n  SELECT r.call_hash, c.instrumentation, c.start_time, c.end_time, r.kind, r.key FROM repeated r\n"
        "  JOIN (SELECT hash(trace_id, span_id) AS call_hash, instrumentation, start_time, end_time FROM candidates) c\n"
        "  USING (call_hash)\n)"
    )


def _call_rows(with_events: bool, stored_spans: str) -> str:
    """SQL: every span of an inference operation, with every span column (messages from its log events where the span
    has none), the fingerprint compaction stored (`call_input.FINGERPRINT_COLUMN`: NULL where none is) and `_KEY`.
    `stored_spans`: `spans` with both (the stored fingerprint is of a span's own messages: with events `_KEY` is
    computed from the messages shown where none is stored, as the span's own may hold no user text)."""
    inference = ", ".join(_quote(op) for op in INFERENCE_OPERATIONS)
    if with_events:
        replaced = ", ".join(f"coalesce(s.{c}, e.{c}) AS {c}" for c in MESSAGE_COLUMNS)
        key = call_input.stored_or_computed("coalesce(s.input_messages, e.input_messages)")
        source = (f"SELECT s.* REPLACE ({replaced}, {key} AS {_KEY}) "
                  f"FROM ({stored_spans}) s\n  LEFT JOIN ({_event_messages()}) e USING (trace_id, span_id)")
    else:
        source = stored_spans
    return f"SELECT * FROM ({source})\nWHERE operation IN ({inference})"


def _llm_call_rows(rows: str) -> str:
    """VIEW `llm_call_rows`: the `_call_rows` `rows` with `input_fingerprint`, the rule's (stored, else computed):
    `llm_calls` before the identity rule."""
    return create_view("llm_call_rows", f"SELECT * EXCLUDE ({_KEY}), {_KEY} AS input_fingerprint\nFROM ({rows})")


def _identity_rule(select: str, detail: bool, pruning: Pruning, rows: str) -> str:
    """The identity rule's CTEs over the `_call_rows` `rows` (`llm_call_rows`), then `select` over them: `losers` are
    the rows left out (with `detail`, also their date, start time, rule and the row kept for their call); `pruning` as
    `_contested`."""
    # The identity rule (docs/collector.md, *llm_calls*): rows sharing a response id, or (without a shared id)
    # the user messages' text, with the same model and service and overlapping in time, are one call; the
    # two relations are joined over two hops (id -> input -> id). The best-ranked row of a call is kept: the
    # others (`losers`, only among rows of such groups) are left out.
    # The date partition is the start time's UTC day (collector.flatten): derived, not carried through.
    losers = ("trace_id, span_id, start_time::DATE AS date, start_time, "
              "CASE WHEN shares_id THEN 'response_id' ELSE 'input' END AS rule,\n"
              "    first_value(trace_id) OVER by_rank AS kept_trace_id, first_value(span_id) OVER by_rank AS kept_span_id"
              if detail else "trace_id, span_id")
    pair_losers = ("c.trace_id, c.span_id, c.start_time::DATE AS date, c.start_time, 'response_id' AS rule,\n"
                   "    k.trace_id AS kept_trace_id, k.span_id AS kept_span_id" if detail else "c.trace_id, c.span_id")
    kept_ids = " JOIN contested k ON k.call_row = p.kept" if detail else ""
    # An instrumentation is named by a 64-bit hash of its dialect and scope, as an input by its 64-bit fingerprint:
    # the rule compares, groups and carries it through every CTE (0.84x the CPU and 0.69x the memory of the names
    # where every call is contested). Two names of one lake collide with a probability of about k^2 / 2^65.
    return (
        "WITH candidates AS NOT MATERIALIZED (\n  SELECT *, coalesce(service_name, '') AS call_service,\n"
        f"    {_CALL_MODEL} AS call_model,\n"
        "    hash(coalesce(dialect, '') || '|' || coalesce(scope_name, '')) AS instrumentation\n"
        f"  FROM ({rows})\n),\n"
        f"{_contested(pruning)},\n"
        f"{_PAIRS},\n"
        f"{_islands('by_id', 'response_id', 'count(DISTINCT call_input) <= 1')},\n"
        f"{_islands('by_input', 'call_input', 'count(DISTINCT response_id) <= 1')},\n"
        "linked AS (\n  SELECT c.trace_id, c.span_id, c.start_time, c.call_rank, i.call IS NOT NULL AS shares_id,\n"
        "    coalesce(i.call, c.call_row) AS id_call, coalesce(n.call, c.call_row) AS input_call\n"
        "  FROM rest c LEFT JOIN by_id i USING (call_row) LEFT JOIN by_input n USING (call_row)\n"
        "  WHERE i.call IS NOT NULL OR n.call IS NOT NULL\n),\n"
        "calls AS (\n  SELECT trace_id, span_id, start_time, call_rank, shares_id,\n"
        "    min(via_input) OVER (PARTITION BY id_call) AS call_id\n"
        "  FROM (SELECT *, min(id_call) OVER (PARTITION BY input_call) AS via_input FROM linked)\n),\n"
        f"losers AS (\n  SELECT * FROM (\n    SELECT {losers}\n"
        "    FROM calls\n"
        "    WINDOW by_rank AS (PARTITION BY call_id ORDER BY call_rank DESC, start_time, span_id)\n"
        "    QUALIFY row_number() OVER by_rank > 1\n  )\n"
        f"  UNION ALL\n  SELECT {pair_losers}\n"
        f"  FROM contested c JOIN pairs p USING (call_service, call_model, response_id){kept_ids}\n"
        f"  WHERE c.call_row <> p.kept\n)\n{select}"
    )


def _llm_call_duplicates(deduplicate: bool, pruning: Pruning, rows: str) -> str:
    """VIEW `llm_call_duplicates`: the rows of `llm_call_rows` the identity rule leaves out, each with the rule that
    merged it (`response_id`: a shared response id; `input`: the input fingerprint, without a shared id) and the
    row kept for its call (`kept_trace_id`, `kept_span_id`)."""
    if not deduplicate:
        return create_view("llm_call_duplicates", "SELECT trace_id, span_id, date, start_time, NULL::VARCHAR AS rule, "
                           "trace_id AS kept_trace_id, span_id AS kept_span_id FROM llm_call_rows WHERE false")
    return create_view("llm_call_duplicates", _identity_rule('SELECT * FROM losers', True, pruning, rows))


def _llm_calls(deduplicate: bool, pruning: Pruning, rows: str) -> str:
    """VIEW `llm_calls`: `llm_call_rows` less the rows the identity rule leaves out; the rule runs inside this
    statement (not through `llm_call_duplicates`), so a query of `llm_calls` alone plans as before the split."""
    columns = ", ".join(LLM_CALL_COLUMNS)
    if not deduplicate:
        return create_view("llm_calls", f"SELECT {columns} FROM llm_call_rows")
    select = f"SELECT {columns} FROM candidates ANTI JOIN losers USING (trace_id, span_id)"
    return create_view("llm_calls", _identity_rule(select, False, pruning, rows))


def _llm_calls_audit() -> str:
    """VIEW `llm_calls_audit`: per date partition, why spans are not `llm_calls` rows. Outcome `duplicate` (reason:
    the identity rule that merged the row into another) and `not_inference` (reason: the operation the allow-list
    left out; `(none)` for a span a dialect recognised that names no operation). Spans no dialect recognised and
    without an operation (HTTP, database, ...) are not counted: they never describe a model call."""
    inference = ", ".join(_quote(op) for op in INFERENCE_OPERATIONS)
    return create_view(
        "llm_calls_audit",
        "SELECT date, 'duplicate' AS outcome, rule AS reason, count(*) AS spans FROM llm_call_duplicates GROUP BY ALL\n"
        "UNION ALL\n"
        "SELECT date, 'not_inference' AS outcome, coalesce(operation, '(none)') AS reason, count(*) AS spans FROM spans\n"
        f"WHERE (dialect IS NOT NULL OR operation IS NOT NULL) AND coalesce(operation NOT IN ({inference}), true)\n"
        "GROUP BY ALL")


def _fresh_since(source: LakeUnion, con, tenant: TenantId, days: Sequence[date] | None) -> str | None:
    """Earliest receipt among fresh segments (cheap: one column of a few small files), or None."""
    files = source.files("spans", tenant, FRESH_PATTERN, days)
    if not files:
        return None
    earliest = con.execute(
        "SELECT min(received_at) FROM read_parquet(?, hive_partitioning = false, union_by_name = true)",
        [files],
    ).fetchone()[0]
    return None if earliest is None else str(earliest)


def view_statements(lake_source: LakeUnion | LakeSource | Path, tenant: TenantId, days: Sequence[date] | None = None,
                    keys_first: bool | None = None) -> list[str]:
    """CREATE VIEW statements for `spans`, `logs`, `llm_calls`, the conversations and `evaluations`, for the lake as it is now; over the
    date partitions `days` only when given (the daemon's sampler reads its lookback, not the history). How the
    identity rule prunes (`keys_first`, as `_contested`; the answer is the same) is decided from the footers unless given.

    Compacted segments hold each span once (collector.compaction), so they are read as they are;
    only fresh segments are deduplicated, among themselves and against compacted rows received
    within RETRY_HORIZON before them (a constant here, so DuckDB prunes older files by their
    statistics). A copy arriving later than that shows until the next compaction removes it.
    """
    source = LakeUnion.of(lake_source)
    con = source.connect()  # reads footers and one column for the plan below
    try:
        compacted = source.files("spans", tenant, COMPACTED_PATTERN, days)
        fresh_since = _fresh_since(source, con, tenant, days)
        facts = rule_facts(source, con, tenant, days)
    finally:
        con.close()
    parts, stored = [], []  # the view's parts; every stored row as it is (fresh copies included)
    parsed = _parsed_key()
    if compacted:
        fingerprinted = [f for f in compacted if f in facts.fingerprinted]
        for files, key in ((fingerprinted, f"{call_input.FINGERPRINT_COLUMN} AS {_KEY}"),
                           ([f for f in compacted if f not in facts.fingerprinted], parsed)):
            if files:
                parts.append(f"SELECT * EXCLUDE ({_HIDDEN}), {key} FROM {_read(files)}")
        stored.append(_read(compacted))
    if fresh_since is not None:
        stored.append(_read(source.files('spans', tenant, FRESH_PATTERN, days)))
        fresh = (
            f"SELECT * EXCLUDE ({_HIDDEN}), {parsed} FROM {stored[-1]}\n"
            "QUALIFY row_number() OVER (PARTITION BY trace_id, span_id ORDER BY received_at) = 1"
        )
        if compacted:
            fresh = (
                f"SELECT * FROM ({fresh})\nANTI JOIN (SELECT trace_id, span_id FROM {_read(compacted)}"
                f"\n  WHERE received_at >= TIMESTAMP_NS {_quote(fresh_since)} - INTERVAL {RETRY_HORIZON})\n"
                "USING (trace_id, span_id)"
            )
        parts.append(fresh)
    stored_spans, spans = _spans(tenant, parts or [_empty_part()])  # no data yet: queries bind
    # A superset of `spans`' keyed rows without its dedupe window, so a filter on a key reaches the files.
    keys = create_view("span_conversation_keys", "SELECT trace_id, conversation_id FROM (\n"
                       + "\nUNION ALL BY NAME\n".join(stored or [_typed_empty()]) + ")\nWHERE conversation_id IS NOT NULL")
    with_events = bool(source.files("logs", tenant, "*" + lake.SEGMENT_SUFFIX, days))
    # One instrumentation describes a call once (Vercel's outer spans are no call): the identity rule
    # runs only when two or more dialects or instrumentation scopes are present.
    deduplicate = facts.instrumentations > 1
    # Messages that came as log events are not counted by the footers, and their calls store no fingerprint.
    pruning = Pruning(not facts.repeated_prompts if keys_first is None else keys_first, facts.stored_fingerprints,
                      facts.stored_fingerprints and not with_events, facts.nearly_all_stored and not with_events)
    rows = _call_rows(with_events, stored_spans)
    return [*_lake_shape(tenant), *conversation_macros(tenant),
            spans, keys, _logs_view(source, tenant, days), _llm_call_rows(rows),
            _llm_call_duplicates(deduplicate, pruning, rows), _llm_calls(deduplicate, pruning, rows), _llm_calls_audit(),
            *conversation_views(), *evaluation_statements()]


def _parsed_key() -> str:
    return f"{call_input.stored_or_computed()} AS {_KEY}"


def _empty_part() -> str:
    return f"SELECT * EXCLUDE ({_HIDDEN}), {_parsed_key()} FROM ({_typed_empty()})"


def _spans(tenant: TenantId, parts: list[str]) -> tuple[str, str]:
    """SQL of the spans in the union of `parts` with the stored fingerprint and `_KEY` (`_call_rows`' input), and
    VIEW `spans`, which shows neither."""
    body = "\nUNION ALL BY NAME\n".join(f"({p})" for p in parts)
    stored_spans = f"SELECT {_quote(tenant)} AS tenant_id, * FROM (\n{body})"
    # The stored input fingerprint is the identity rule's (llm_call_rows.input_fingerprint), not a span attribute.
    return stored_spans, create_view(
        "spans", f"SELECT * EXCLUDE ({call_input.FINGERPRINT_COLUMN}, {_KEY}) FROM ({stored_spans})")


def _lake_shape(tenant: TenantId) -> list[str]:
    """`spans`, `llm_call_rows` and `llm_calls` of a lake without segments: the columns and types of the lake's own,
    nothing to read. DuckDB binds a table macro's body when the macro is created (it has no deferral, as views do:
    collector.view_sql); created over these, the conversation macros bind no footer and no identity rule (≈ 70 ms
    of every reader's start on the 30-day bench lake). A macro's body binds again at each use, against the lake's
    own views, which replace these."""
    stored_spans, spans = _spans(tenant, [_empty_part()])
    rows = _call_rows(False, stored_spans)
    return [spans, _llm_call_rows(rows), _llm_calls(False, Pruning(False, False), rows)]


def materialize_duplicates(con) -> None:
    """Evaluate the identity rule once on `con` (holding the views): `llm_calls` and `llm_calls_audit` then read its
    result, so a reader of both (the daemon's sampler) pays for the rule once."""
    con.execute("CREATE OR REPLACE TEMP TABLE llm_call_duplicates_once AS SELECT * FROM llm_call_duplicates")
    con.execute(create_view("llm_call_duplicates", "SELECT * FROM llm_call_duplicates_once"))
    con.execute(create_view("llm_calls", f"SELECT {', '.join(LLM_CALL_COLUMNS)} FROM llm_call_rows "
                                         "ANTI JOIN llm_call_duplicates_once USING (trace_id, span_id)"))


def open_scoped(lake_source: LakeUnion | LakeSource | Path, tenant: TenantId, extra_views: tuple[str, ...] = (),
                prepare: Callable[[Any], None] | None = None, spill: Path | None = None):
    """In-memory DuckDB with the views; user SQL can read only this tenant's partition directory (and its
    prefix in the object store). `prepare(con)` runs before access is locked down (e.g. to copy in the
    daemon's state tables). `spill`: a directory of the caller's own, for this connection alone, where DuckDB
    spills past its memory limit; DuckDB adds it to the readable directories (./.tmp when none is given: so
    without one, none), where a query reads only what this connection spilled."""
    source = LakeUnion.of(lake_source)
    con = source.connect({"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                          "temp_directory": "" if spill is None else str(spill)})
    for statement in (*view_statements(source, tenant), *extra_views):
        con.execute(statement)
    if prepare is not None:
        prepare(con)
    allowed = ", ".join(_quote(d) for table in lake.TABLES for d in source.allowed_directories(table, tenant))
    con.execute(f"SET allowed_directories = [{allowed}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con
