"""A model call's *input fingerprint*: the md5 of the text parts of its user messages, in order (the call identity
rule's input key, docs/collector.md *llm_calls*). Defined once, as SQL, for two places:

  * compaction stores it in compacted span segments (column `FINGERPRINT_COLUMN`), computed once per span;
  * `collector.views` reads the stored value and computes it only for rows without one (fresh segments, segments
    compacted before the column, spans whose messages came as log events), so a read of compacted days parses no
    message: parsing every call's user messages was most of the identity rule's cost.

The column's name carries the definition's version. Stored values are only right for the expression that wrote
them: whoever changes `user_text` or `fingerprint` must bump `VERSION` (older files' values are then ignored and
recomputed, never compared with new ones); tests/collector/test_input_fingerprint.py pins the definition to an
independent reference (hashlib) so a change cannot go unnoticed.
"""

from __future__ import annotations

VERSION = 1
FINGERPRINT_COLUMN = f"input_fingerprint_v{VERSION}"
# 16 bytes, not md5_number: DuckDB writes a (U)HUGEINT to Parquet as a DOUBLE, silently losing all but 53 bits.
FINGERPRINT_TYPE = "BLOB"

# The messages are parsed once into typed lists (from_json): lambdas over JSON text re-parse every message and
# cost 3x more. A value that is not text (a number, an object) is its JSON text, as json_extract_string gives it.
_MESSAGE_PARTS = '[{"role": "VARCHAR", "parts": [{"content": "VARCHAR"}]}]'


def user_text(unless_stored: str | None = None) -> str:
    """SQL: the text parts of `input_messages`' user messages joined by U+001F, NULL when there are none or the
    column is not a JSON list. With `unless_stored` (a column), NULL where that column is not NULL: the parse is
    skipped in the guard DuckDB evaluates anyway (around the whole expression, a CASE costs 3x where it runs, and
    coalesce() evaluates its second argument for every row: bench/identity_rule_pieces.py, "stored" lines)."""
    guard = "json_valid(input_messages)" if unless_stored is None else (
        f"{unless_stored} IS NULL AND json_valid(input_messages)")
    return ("nullif(array_to_string(list_transform(flatten(list_transform(list_filter(from_json("
            f"CASE WHEN {guard} THEN input_messages END, '{_MESSAGE_PARTS}'), lambda m: m.role = 'user'), "
            "lambda m: m.parts)), lambda p: p.content), chr(31)), '')")


def fingerprint(text: str) -> str:
    """SQL: the fingerprint of the user text `text` (SQL, NULL stays NULL)."""
    return f"unhex(md5({text}))"


STORED = f"{fingerprint(user_text())} AS {FINGERPRINT_COLUMN}"  # what compaction adds to each span it writes


def stored_or_computed() -> str:
    """SQL: the stored fingerprint, else the one computed from `input_messages` (parsed only where none is stored)."""
    return f"coalesce({FINGERPRINT_COLUMN}, {fingerprint(user_text(FINGERPRINT_COLUMN))})"


def disagreeing(files: list[str]) -> str:
    """SQL counting the rows of the span segments `files` whose stored fingerprint differs from the expression's
    value now (0 when every stored value is right; files without the column count none)."""
    listed = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    return (f"SELECT count(*) FROM (SELECT NULL::{FINGERPRINT_TYPE} AS {FINGERPRINT_COLUMN}, NULL::VARCHAR AS "
            f"input_messages WHERE false UNION ALL BY NAME SELECT * FROM read_parquet({listed}, "
            f"union_by_name = true, hive_partitioning = false)) WHERE {FINGERPRINT_COLUMN} IS NOT NULL AND "
            f"{FINGERPRINT_COLUMN} IS DISTINCT FROM {fingerprint(user_text())}")
