"""The state store contract (docs/architecture.md, "State store: repositories and TenantId"): the SQL against
state.duckdb lives in `verdict_daemon/store/`, nowhere else.

Read from the source (AST) of every daemon module outside the store, and of the UI. A module breaks
the contract when it opens a state connection (`.transaction()`, `._connect()`, `._connection()` of a
`StateStore`, which the code calls `store`; a repository's `.transaction()` yields no connection), bulk-inserts through `insert_rows`, or holds SQL that names a state.duckdb table
(`FROM|JOIN|INTO|UPDATE|TABLE [<catalog>.]<table>`, in a string or an f-string, docstrings aside). Lake SQL (spans,
llm_calls, in-memory tables) is not state SQL and stays where it is; the tenant's snapshot copies of state tables
(store/views.py) keep their names and count as state SQL, except in the UI (below).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Every module of the daemon outside its store, and the UI.
SCANNED = ("verdict_daemon", "verdict_ui", "verdict_demo")
STORE = "verdict_daemon/store/"
# The UI queries its in-memory snapshot, whose tables copy some state tables under the same names (drift_runs,
# drift_signals, …: verdict_daemon.store.views); there only the review and cluster tables count.
SNAPSHOT_READERS = ("verdict_ui",)
AGGREGATE_TABLES = re.compile(r"review_\w+|cluster_\w+|registry_\w+|analysis_index")
STATE_MODULES = ("verdict_daemon/store/state.py", "verdict_daemon/store/state.py")
STATE_CONNECTIONS = {"transaction", "_connect", "_connection"}


def state_tables(root: Path) -> set[str]:
    """Every table the state migrations create."""
    text = "".join(p.read_text(encoding="utf-8") for p in map(root.joinpath, STATE_MODULES) if p.exists())
    return set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", text))


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def violations_in(source: str, name: str, tables: set[str]) -> list[str]:
    tree = ast.parse(source, name)
    # a table may be qualified by its catalog: `FROM {STATE_ALIAS}.sampled_traces` reads an attached state.duckdb
    sql = re.compile(rf"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:(?:\{{\}}|\w+)\.)?(?:{'|'.join(sorted(tables))})\b",
                     re.IGNORECASE)
    skip = _docstrings(tree) | {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                                for part in node.values}  # an f-string is read whole
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STATE_CONNECTIONS
                and ast.unparse(node.func.value).lower().endswith("store")):  # a StateStore, not a repository
            found.append(f"{name}:{node.lineno}: opens a state connection (.{node.func.attr}())")
        elif isinstance(node, ast.Name | ast.alias) and getattr(node, "id", getattr(node, "name", None)) == "insert_rows":
            found.append(f"{name}:{getattr(node, 'lineno', 0)}: inserts into state.duckdb (insert_rows)")
        elif isinstance(node, ast.JoinedStr | ast.Constant) and id(node) not in skip:
            text = "".join(part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "{}"
                           for part in (node.values if isinstance(node, ast.JoinedStr) else [node]))
            if (match := sql.search(text)) is not None:
                found.append(f"{name}:{node.lineno}: SQL against state.duckdb: {match.group(0)!r}")
    return found


def violations(root: Path) -> list[str]:
    tables = state_tables(root)
    assert tables, f"no state tables found in {STATE_MODULES} under {root}"
    aggregate = {t for t in tables if AGGREGATE_TABLES.fullmatch(t)}
    files = sorted(f for entry in map(root.joinpath, SCANNED) for f in entry.rglob("*.py"))
    found = []
    for f in files:
        name = f.relative_to(root).as_posix()
        if name.startswith(STORE):
            continue
        found += violations_in(f.read_text(encoding="utf-8"), name,
                               aggregate if name.startswith(SNAPSHOT_READERS) else tables)
    return found


def test_state_sql_lives_in_the_store():
    assert violations(ROOT) == []


def test_the_check_sees_state_sql():
    """It can fail: each way the aggregates reached state.duckdb before the repositories is flagged."""
    tables = state_tables(ROOT)
    assert {"review_items", "review_labels", "cluster_versions", "registry_pointer", "analysis_index"} <= tables
    source = '''
"""Reads review_items FROM review_items in prose: a docstring, not SQL."""
from verdict_daemon.store.state import insert_rows

def read(store, tenant):
    with store.transaction() as con:
        return con.execute(f"SELECT * FROM review_items WHERE tenant_id = {tenant!r}").fetchall()

LATEST = """SELECT 1 FROM review_labels l JOIN cluster_versions v USING (tenant_id)"""
PICKS = f"SELECT trace_id FROM {ALIAS}.sampled_traces"

def lake(con):
    return con.execute("SELECT trace_id FROM llm_calls").fetchall()  # the span lake: allowed
'''
    found = violations_in(source, "example.py", tables)
    assert sorted(v.split(": ", 1)[1] for v in found) == [
        "SQL against state.duckdb: 'FROM review_items'", "SQL against state.duckdb: 'FROM review_labels'",
        "SQL against state.duckdb: 'FROM {}.sampled_traces'",
        "inserts into state.duckdb (insert_rows)", "opens a state connection (.transaction())"]
