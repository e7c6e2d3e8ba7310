"""Creating the views reads no segment (collector/view_sql.py): every reader creates them all, and most queries read
few of them. Built to fail if a view or a conversation macro binds the lake's files when created."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from collector.views import view_statements
from tests.collector.test_input_fingerprint import _compacted_lake
from verdict.tenancy import TenantId


def test_the_views_and_macros_are_created_without_the_segments(tmp_path):
    files = _compacted_lake(tmp_path)  # two instrumentations: the identity rule is in `llm_calls`
    statements = view_statements(tmp_path, TenantId("t"))
    with duckdb.connect() as con:
        for statement in statements:
            con.execute(statement)
        rows = con.execute("SELECT count(*) FROM llm_calls").fetchone()
    assert rows == (8,)
    for f in files:  # what a purge does between the listing and the query
        Path(f).unlink()
    with duckdb.connect() as con:
        for statement in statements:
            con.execute(statement)
        assert con.execute("SELECT count(*) FROM logs").fetchone() == (0,)  # reads nothing listed
        for query in ("SELECT count(*) FROM llm_calls", "SELECT count(*) FROM conversations",
                      "SELECT count(*) FROM conversation_turns_within(5)"):
            with pytest.raises(duckdb.IOException, match="No files found|does not exist|No such file"):
                con.execute(query).fetchall()
