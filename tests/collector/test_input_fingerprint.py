"""The input fingerprint compaction stores (collector/call_input.py) is the one the views would compute, and can
only ever be compared with values of its own definition.

Stored values outlive the code that wrote them: the definition is pinned here to an independent reference (hashlib
over the user texts as tests/collector/test_call_identity_reference.py reads them), so changing the SQL without
bumping `call_input.VERSION` fails; and a stored value that disagrees with the expression is counted
(`call_input.disagreeing`), on segments written by the real compaction.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from collector import call_input, compaction, lake
from collector.lake_union import LakeUnion
from collector.schema import arrow_schema
from collector.views import rule_facts, view_statements
from tests.collector import test_objectstore
from tests.collector.test_call_identity_reference import _fingerprint
from verdict.tenancy import TenantId

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)

s3 = test_objectstore.s3  # the S3-compatible server on loopback (one per module)

# Shapes the instrumentations send: text and non-text parts, several user messages, other roles, non-string
# contents, unicode, separators in the text, no user text, not JSON, not a list.
INPUTS = [
    [{"role": "user", "parts": [{"type": "text", "content": "What is my balance?"}]}],
    [{"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
     {"role": "user", "parts": [{"type": "text", "content": "q1"}, {"type": "uri"}, {"type": "text", "content": "q2"}]},
     {"role": "assistant", "parts": [{"type": "text", "content": "a1"}]},
     {"role": "user", "parts": [{"type": "text", "content": "ünïcødé \u001f and 'quotes'"}]}],
    [{"role": "user", "parts": [{"type": "text", "content": ""}]}],
    [{"role": "assistant", "parts": [{"type": "text", "content": "only an answer"}]}],
    [],
    "not json",
    {"role": "user"},
]


def _raw(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _reference(raw: str) -> int | None:
    text = _fingerprint({"input_messages": raw})
    return None if text is None else int.from_bytes(hashlib.md5(text.encode()).digest()[:8], "little")


def test_the_definition_is_pinned_to_the_reference():
    """Fails when the fingerprint's SQL changes: bump call_input.VERSION (stored values of the old definition are
    then ignored, not compared with new ones) and make this reference say what the new definition does."""
    with duckdb.connect() as con:
        for value in INPUTS:
            raw = _raw(value)
            (stored,) = con.execute(  # type: ignore[misc]  # one row
                f"SELECT {call_input.STORED} FROM (SELECT ? AS input_messages)", [raw]).fetchone()
            assert stored == _reference(raw), raw
    assert call_input.FINGERPRINT_COLUMN == "input_fingerprint_v2"


def _compacted_lake(data, first: int = 0) -> list:
    """A span per input (and one without messages; span ids from `first` + 1, every other one by a second
    instrumentation), written fresh and compacted by the real compaction."""
    schema = arrow_schema("spans")
    spans = [{"trace_id": f"{first + i + 1:032x}", "span_id": f"{first + i + 1:016x}", "name": "chat",
              "operation": "chat", "request_model": "gpt-4o", "start_time": T0 + timedelta(seconds=i),
              "end_time": T0 + timedelta(seconds=i + 1), "received_at": T0 + timedelta(seconds=i + 1),
              "dialect": ("verdict", "openinference")[i % 2],
              "input_messages": None if i == len(INPUTS) else _raw(INPUTS[i])} for i in range(len(INPUTS) + 1)]
    lake.prepare(data)
    lake.write_segment(data, "t", "2026-12-01", pa.Table.from_pylist(
        [{n: s.get(n) for n in schema.names} for s in spans], schema=schema))
    part = lake.partition_dir(data, "t", "2026-12-01", "spans")
    assert compaction.compact_partition(data, part, min_segments=1)
    return sorted(str(p) for p in part.glob("c-*.parquet"))


def test_compaction_stores_the_fingerprint_the_views_compute(tmp_path):
    files = _compacted_lake(tmp_path)
    with duckdb.connect() as con:
        stored = con.execute(f"SELECT input_messages, {call_input.FINGERPRINT_COLUMN} FROM read_parquet(?) "
                             "ORDER BY span_id", [files]).fetchall()
        assert [f for _m, f in stored] == [
            _reference(m) if m is not None else None for m, _f in stored]
        assert con.execute(call_input.disagreeing(files)).fetchone() == (0,)
        for statement in view_statements(tmp_path, TenantId("t")):
            con.execute(statement)
        computed = con.execute(f"SELECT {call_input.fingerprint(call_input.user_text())} FROM llm_call_rows "
                               "ORDER BY span_id").fetchall()
        assert con.execute("SELECT input_fingerprint FROM llm_call_rows ORDER BY span_id").fetchall() == computed
        # Users see the rule's fingerprint in llm_call_rows, not a stored column that fresh segments lack.
        assert call_input.FINGERPRINT_COLUMN not in [c for (c, *_r) in con.execute("DESCRIBE spans").fetchall()]


def test_the_footers_say_whether_the_keys_can_be_the_stored_fingerprints(tmp_path):
    """The key-first pass keys by stored fingerprints where most messages have one, else by the user text (computing
    an md5 for every call of a lake compacted before the column costs 2x the text hash: docs/collector.md)."""
    source = LakeUnion.of(tmp_path)
    _compacted_lake(tmp_path)
    with duckdb.connect() as con:
        facts = rule_facts(source, con, TenantId("t"), None)
        assert facts.stored_fingerprints and facts.nearly_all_stored
    # One call in eight unstored: read twice by plain columns it would be parsed twice (views.UNSTORED_SHARE).
    schema = arrow_schema("spans")
    lake.write_segment(tmp_path, "t", "2026-12-01", pa.Table.from_pylist([{n: None for n in schema.names} | {
        "trace_id": "f" * 32, "span_id": "f" * 16, "operation": "chat", "input_messages": _raw(INPUTS[0])}], schema=schema))
    source = source.fresh()  # a source keeps the listing it took
    with duckdb.connect() as con:
        facts = rule_facts(source, con, TenantId("t"), None)
        assert facts.stored_fingerprints and not facts.nearly_all_stored
        for f in lake.partition_dir(tmp_path, "t", "2026-12-01", "spans").glob("c-*.parquet"):
            con.execute(f"COPY (SELECT * EXCLUDE ({call_input.FINGERPRINT_COLUMN}) FROM read_parquet('{f}')) "
                        f"TO '{f}.old' (FORMAT parquet)")
            Path(f"{f}.old").rename(f)
    with duckdb.connect() as con:  # a new one: a connection keeps the footers it read
        assert not rule_facts(source, con, TenantId("t"), None).stored_fingerprints


@pytest.mark.parametrize("column", [call_input.FINGERPRINT_COLUMN, "input_fingerprint_v0"])
def test_a_stored_fingerprint_that_disagrees_is_detected(tmp_path, column):
    """A compacted segment whose stored values another definition wrote: counted when the column has this version's
    name, and never read when it has another's (the views compute instead)."""
    files = _compacted_lake(tmp_path)
    wrong = str(tmp_path / "wrong.parquet")
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT * EXCLUDE ({call_input.FINGERPRINT_COLUMN}), "
                    f"md5_number_lower(coalesce(input_messages, '')) AS {column} FROM read_parquet(?)) TO '{wrong}'", [files])
        (bad,) = con.execute(call_input.disagreeing([wrong])).fetchone()  # type: ignore[misc]  # a count: one row
        assert bad == (len(INPUTS) + 1 if column == call_input.FINGERPRINT_COLUMN else 0)  # every span
        for f in files:
            Path(f).unlink()
        Path(wrong).rename(files[0])
        for statement in view_statements(tmp_path, TenantId("t")):
            con.execute(statement)
        rows = con.execute("SELECT input_fingerprint, input_messages FROM llm_call_rows ORDER BY span_id").fetchall()
        matches = [f == (_reference(m) if m is not None else None) for f, m in rows]
        assert all(matches) == (column != call_input.FINGERPRINT_COLUMN)


def test_the_fingerprint_reads_no_messages_of_files_that_store_it(tmp_path):
    """Where every compacted file stores the fingerprint, the rule's input key (here `llm_call_rows.input_fingerprint`,
    the same expression as the rule's) reads no `input_messages`: decompressing that column for every call was most
    of the rule's cost over a compacted lake (no scan projects it)."""
    _compacted_lake(tmp_path)
    with duckdb.connect() as con:
        for statement in view_statements(tmp_path, TenantId("t")):
            con.execute(statement)
        query = "SELECT count(input_fingerprint) FROM llm_call_rows"
        plan = json.loads(con.execute(f"EXPLAIN (FORMAT json) {query}").fetchall()[0][1])
        projected, nodes = [], list(plan)
        while nodes:
            node = nodes.pop()
            nodes.extend(node.get("children", []))
            if node.get("name", "").strip() == "READ_PARQUET":
                projected.extend(node["extra_info"].get("Projections", []))
        assert call_input.FINGERPRINT_COLUMN in projected and "input_messages" not in projected, projected
        assert con.execute(query).fetchone() == (sum(_reference(_raw(v)) is not None for v in INPUTS),)


def test_a_stored_null_where_there_is_user_text_is_detected(tmp_path):
    """Every row of a file with the column holds its value (readers do not parse such a file's messages): a NULL
    stored for a call with user text disagrees."""
    files = _compacted_lake(tmp_path)
    blank = str(tmp_path / "blank.parquet")
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT * REPLACE (NULL::{call_input.FINGERPRINT_TYPE} AS {call_input.FINGERPRINT_COLUMN}) "
                    f"FROM read_parquet(?)) TO '{blank}'", [files])
        assert con.execute(call_input.disagreeing([blank])).fetchone() == (
            sum(_reference(_raw(v)) is not None for v in INPUTS),)


@pytest.mark.objectstore
def test_the_lake_compactor_stores_the_fingerprint_of_objects_shipped_without_it(s3, tmp_path):
    """Objects a collector compacted before the column (or with another version's) are merged with the fingerprint
    of every row: a merged object's stored values are the reference's."""
    from collector.lake_compactor import LakeCompactor
    from collector.objectstore import ObjectLake
    from collector.shipping import Shipper
    from collector.stats import Stats

    remote = ObjectLake(f"s3://{s3.new_bucket()}/lake")
    shipped = _compacted_lake(tmp_path / "new") + _compacted_lake(tmp_path / "old", first=len(INPUTS) + 1)
    with duckdb.connect() as con:
        old = shipped[-1]
        con.execute(f"COPY (SELECT * EXCLUDE ({call_input.FINGERPRINT_COLUMN}) FROM read_parquet('{old}')) "
                    f"TO '{old}.old' (FORMAT parquet)")
        Path(f"{old}.old").rename(old)
    for data in ("new", "old"):
        Shipper(tmp_path / data, remote, 600.0, Stats()).ship_once()
    LakeCompactor(tmp_path / "compactor", remote, 1.0, 600.0, 0, Stats()).run_once()
    merged = [r for r in remote.list("spans/") if Path(r).name.startswith("m-")]
    assert merged
    local = tmp_path / "merged.parquet"
    with duckdb.connect() as con:
        con.register_filesystem(remote.read_filesystem())
        con.execute(f"COPY (SELECT * FROM read_parquet(?, union_by_name = true)) TO '{local}'",
                    [[remote.object_url(r) for r in merged]])
        rows = con.execute(f"SELECT input_messages, {call_input.FINGERPRINT_COLUMN} FROM read_parquet(?)",
                           [str(local)]).fetchall()
        assert con.execute(call_input.disagreeing([str(local)])).fetchone() == (0,)
    assert len(rows) == 2 * (len(INPUTS) + 1)
    assert [f for _m, f in rows] == [None if m is None else _reference(m) for m, _f in rows]
