"""A model call's *input fingerprint*: the md5 of the text parts of its user messages, in order (the call identity
rule's input key, docs/collector.md *llm_calls*). Defined once, as SQL, for two places:

  * compaction stores it in compacted span segments (column `FINGERPRINT_COLUMN`), computed once per span;
  * `collector.views` reads the stored value and computes it only for rows without one (fresh segments, segments
    compacted before the column, spans whose messages came as log events), so a read of compacted days parses no
    message: parsing every call's user messages was most of the identity rule's cost.

The column's name carries the definition's version. Stored values are only right for the expression that wrote
them: whoever changes `user_text` or `fingerprint` must bump `VERSION` (older files' values are then ignored and
recomputed, never compared with new ones; their columns go to `RETIRED_COLUMNS`, hidden from `spans`);
tests/collector/test_input_fingerprint.py pins the definition to an independent reference (hashlib) so a change
cannot go unnoticed.
"""

from __future__ import annotations

VERSION = 2
FINGERPRINT_COLUMN = f"input_fingerprint_v{VERSION}"
# md5's first 8 bytes read little-endian (md5_number_upper): a UBIGINT is hashed and grouped faster than v1's 16-byte
# BLOB and DuckDB writes it to Parquet exactly (INT64, UINT_64), where it writes a (U)HUGEINT (md5_number) as a
# DOUBLE, silently losing all but 53 bits. Two different prompts of one model and service, overlapping in time,
# merge only if their 64 bits collide.
FINGERPRINT_TYPE = "UBIGINT"
# Columns of earlier definitions: still in files compacted before, never read.
RETIRED_COLUMNS = (("input_fingerprint_v1", "BLOB"),)

# The messages are parsed once into typed lists (from_json): lambdas over JSON text re-parse every message and
# cost 3x more. A value that is not text (a number, an object) is its JSON text, as json_extract_string gives it.
_MESSAGE_PARTS = '[{"role": "VARCHAR", "parts": [{"content": "VARCHAR"}]}]'


def user_text(unless_stored: str | None = None, messages: str = "input_messages") -> str:
    """SQL: the text parts of `messages`' user messages joined by U+001F, NULL when there are none or the column is
    not a JSON list. With `unless_stored` (a column), NULL where that column is not NULL: the parse is skipped in
    the guard DuckDB evaluates anyway (around the whole expression, a CASE costs 3x where it runs, and coalesce()
    evaluates its second argument for every row: bench/identity_rule_pieces.py, "stored" lines)."""
    guard = f"json_valid({messages})" if unless_stored is None else (
        f"{unless_stored} IS NULL AND json_valid({messages})")
    return ("nullif(array_to_string(list_transform(flatten(list_transform(list_filter(from_json("
            f"CASE WHEN {guard} THEN {messages} END, '{_MESSAGE_PARTS}'), lambda m: m.role = 'user'), "
            "lambda m: m.parts)), lambda p: p.content), chr(31)), '')")


def fingerprint(text: str) -> str:
    """SQL: the fingerprint of the user text `text` (SQL, NULL stays NULL)."""
    return f"md5_number_upper({text})"


# What compaction adds to each span it writes. Every writer stores the value of every row of a file that has the
# column (NULL only where there is no user text), so readers need not read such a file's messages (collector.views).
STORED = f"{fingerprint(user_text())} AS {FINGERPRINT_COLUMN}"


def stored_or_computed(messages: str = "input_messages") -> str:
    """SQL: the stored fingerprint, else the one computed from `messages` (parsed only where none is stored)."""
    return f"coalesce({FINGERPRINT_COLUMN}, {fingerprint(user_text(FINGERPRINT_COLUMN, messages))})"


def _with_column(relation: str) -> str:
    return (f"(SELECT NULL::{FINGERPRINT_TYPE} AS {FINGERPRINT_COLUMN}, NULL::VARCHAR AS input_messages WHERE false "
            f"UNION ALL BY NAME SELECT * FROM {relation})")


def filled(relation: str) -> str:
    """SQL: the spans of `relation` (files with or without the column) with every row's fingerprint stored, for a
    writer merging such files (collector.lake_compactor): computed where an input lacks it."""
    return f"(SELECT * REPLACE ({stored_or_computed()} AS {FINGERPRINT_COLUMN}) FROM {_with_column(relation)})"


def disagreeing(files: list[str]) -> str:
    """SQL counting the rows of the span segments `files` whose stored fingerprint (NULL included) differs from the
    expression's value now (0 when every stored value is right; files without the column count none)."""
    listed = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    return (f"SELECT count(*) FROM {_with_column(f'read_parquet({listed}, union_by_name = true, filename = true, hive_partitioning = false)')} "
            f"WHERE filename IN (SELECT file_name FROM parquet_metadata({listed}) WHERE path_in_schema = "
            f"'{FINGERPRINT_COLUMN}') AND {FINGERPRINT_COLUMN} IS DISTINCT FROM {fingerprint(user_text())}")
