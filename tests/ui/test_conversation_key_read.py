"""The one-conversation page reads its key's traces only (verdict_ui.conversations.load_key: the traces with a span
of the key from `span_conversation_keys`, then the views' rules over those traces). Its rows must equal the lake's
`conversation_turns` / `conversations` views for every key, over lakes built to break that: a trace whose spans
carry two keys (the earliest wins, ties by span id), a key whose traces lie in two date partitions and a trace
across midnight, duplicate span rows (fresh copies of compacted rows within and beyond the retry horizon, fresh
copies of fresh rows with another key or more tokens, a compacted file holding a row twice), a conversation of more
than MAX_TURNS turns, an end marker, the status clock at a nanosecond boundary, and two tenants sharing keys and a
trace id. Real parts: the collector's segment writer and compaction, the snapshot the UI takes, DuckDB.
"""

from __future__ import annotations

import json
import random
from dataclasses import astuple
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

from collector import lake
from collector.compaction import COMPACTED_PREFIX, compact_all
from collector.schema import arrow_schema
from tests.daemon.lakes import write_rows
from verdict.semconv import CONVERSATION_END
from verdict.tenancy import TenantId
from verdict_ui.conversations import (
    CONVERSATIONS_TABLE,
    KEY_CONVERSATIONS_TABLE,
    KEY_TURNS_TABLE,
    MAX_TURNS,
    TURNS_TABLE,
    conversation_detail,
    lake_clock,
    load_key,
    materialize,
)
from verdict_ui.snapshot import take

MINUTE, HOUR = 60 * 10**9, 3600 * 10**9
DAY0 = int(datetime(2026, 11, 20, tzinfo=UTC).timestamp()) * 10**9
TENANTS = ("acme", "umbrella")
DAYS = 3


def _span(trace: str, span: str, start: int, *, key: str | None = None, end: int | None = None,
          received: int | None = None, tokens: int | None = None, marker: bool = False) -> dict:
    """One span row; `tokens` makes it a model call with that many input and output tokens."""
    end = start + 2 * 10**9 if end is None else end
    return {"trace_id": trace, "span_id": span, "name": "chat" if tokens is not None else "step", "kind": "INTERNAL",
            "start_time": start, "end_time": end, "duration_ns": end - start, "status_code": "UNSET",
            "service_name": "app", "conversation_id": key, "intent_key": f"intent-{span[-1]}.v1",
            "operation": "chat" if tokens is not None else None, "input_tokens": tokens, "output_tokens": tokens,
            "attributes": json.dumps({CONVERSATION_END: True} if marker else {}),
            "received_at": end if received is None else received}


def _compacted_file(data_dir: Path, tenant: str, rows: list[dict]) -> None:
    """A compacted segment as written (not deduplicated): the `spans` view reads it as it is."""
    day = datetime.fromtimestamp(rows[0]["start_time"] / 1e9, UTC).date().isoformat()
    lake.write_segment(data_dir, tenant, day, pa.Table.from_pylist(rows, schema=arrow_schema()), prefix=COMPACTED_PREFIX)


def _chosen(tenant: str) -> tuple[list[dict], list[dict]]:
    """Rows compacted first and rows landing fresh afterwards, each case named after what it breaks."""
    other = tenant != "acme"
    at = DAY0 + HOUR * (5 if other else 10)
    old = [
        # Two keys in one trace: k-early's span starts first; in t-tie both start together, span id "a" wins.
        _span("t-two", "s1", at, key="k-early", tokens=3), _span("t-two", "s2", at + 10**9, key="k-late"),
        _span("t-late", "s3", at + 5 * MINUTE, key="k-late", tokens=4),
        _span("t-tie", "b", at + 9 * MINUTE, key="k-early"), _span("t-tie", "a", at + 9 * MINUTE, key="k-tie"),
        # k-night: 23:50 on day 0, 00:05 on day 1, and a trace from 23:59 on day 1 whose call starts on day 2.
        _span("t-n1", "s4", DAY0 + 23 * HOUR + 50 * MINUTE, key="k-night", tokens=5),
        _span("t-n2", "s5", DAY0 + 24 * HOUR + 5 * MINUTE, key="k-night", tokens=6),
        _span("t-n3", "s6", DAY0 + 47 * HOUR + 59 * MINUTE, key="k-night", end=DAY0 + 48 * HOUR + 2 * MINUTE),
        _span("t-n3", "s7", DAY0 + 48 * HOUR + MINUTE, tokens=7),
        # Copied later in fresh segments (below).
        _span("t-orig", "s8", at + 30 * MINUTE, key="k-orig", tokens=8, received=DAY0 + 47 * HOUR),
        _span("t-old", "s9", at + 40 * MINUTE, key="k-old", tokens=9, received=DAY0 - 2 * 24 * HOUR),
    ]
    # More than MAX_TURNS turns a minute apart, then after two hours three more, the second ending its conversation.
    long_start = DAY0 + HOUR * (13 if other else 12)
    old += [_span(f"t-long{i:03d}", "l1", long_start + i * MINUTE, key="k-long", tokens=1) for i in range(MAX_TURNS + 5)]
    after = long_start + (MAX_TURNS + 125) * MINUTE
    old += [_span(f"t-more{i}", "m1", after + i * MINUTE, key="k-long", marker=i == 1) for i in range(3)]
    fresh = [
        # Copies of compacted rows: within the retry horizon (hidden, whatever their key says) ...
        _span("t-orig", "s8", at + 30 * MINUTE, key="k-copy", tokens=80, received=DAY0 + 48 * HOUR),
        # ... and beyond it (shown until the next compaction: the view counts the copy too).
        _span("t-old", "s9", at + 40 * MINUTE, key="k-old", tokens=90, received=DAY0 + 48 * HOUR),
        # A fresh span and its later copies: the first received wins, in each segment order.
        _span("t-f", "f1", at + 50 * MINUTE, key="k-first", tokens=2, received=DAY0 + 48 * HOUR + 1),
        _span("t-f2", "f2", at + 52 * MINUTE, key="k-first", received=DAY0 + 48 * HOUR + 5),
    ]
    return old, fresh


def _random(rng: random.Random, tenant: str) -> list[dict]:
    """Traces of a few spans each, keys drawn from a small set (or none) per span, over the three days."""
    rows = []
    for t in range(120):
        trace, start = f"r{tenant[0]}{t:04d}", DAY0 + rng.randrange(DAYS * 24 * 60) * MINUTE
        for s in range(rng.randint(1, 3)):
            rows.append(_span(trace, f"r{s}", start + rng.randrange(3) * 10**9,
                              key=rng.choice([None, "k-r0", "k-r1", "k-r2", "k-late"]),
                              tokens=rng.choice([None, rng.randint(1, 9)])))
    return rows


def _write(data_dir: Path, seed: int) -> None:
    rng = random.Random(seed)
    mixed = {tenant: _random(rng, tenant) for tenant in TENANTS}  # half compacted, half fresh
    for tenant in TENANTS:
        write_rows(data_dir, tenant, _chosen(tenant)[0] + mixed[tenant][::2])
    compact_all(data_dir, 1)
    for tenant in TENANTS:
        _compacted_file(data_dir, tenant, [_span("t-dup", "d1", DAY0 + HOUR, key="k-dup", tokens=4)] * 2)
        fresh = _chosen(tenant)[1]
        # Later copies of fresh and compacted rows, some under another key.
        copies = [dict(r, received_at=r["received_at"] + 1, conversation_id=rng.choice([r["conversation_id"], "k-r1"]))
                  for r in rng.sample(mixed[tenant], 20)]
        write_rows(data_dir, tenant, fresh + mixed[tenant][1::2])
        write_rows(data_dir, tenant, copies + [_span("t-f", "f1", fresh[2]["start_time"], key="k-later",
                                                      received=fresh[2]["received_at"] + 1)])
    # The newest span end has nanoseconds; k-clock's last turn ends exactly the inactivity limit before it (closed).
    newest = DAY0 + DAYS * 24 * HOUR + 123_456_789
    write_rows(data_dir, "acme", [_span("t-clock", "c1", newest - 31 * MINUTE, key="k-clock", end=newest - 30 * MINUTE),
                                  _span("t-newest", "c2", newest - MINUTE, end=newest)])


@pytest.fixture(scope="module", params=[0, 1, 2], ids=lambda seed: f"seed{seed}")
def lake_dir(request, tmp_path_factory) -> Path:
    data_dir = tmp_path_factory.mktemp(f"keys{request.param}")
    _write(data_dir, request.param)
    return data_dir


def _rows(con, sql: str, args: dict | None = None) -> list[tuple]:
    return con.execute(sql, args).fetchall()


def _by_key(rows: list[tuple]) -> dict[str, list[tuple]]:
    """View rows (tenant_id, conversation_id, ...) by conversation key, in order."""
    keyed: dict[str, list[tuple]] = {}
    for row in rows:
        keyed.setdefault(row[1], []).append(row)
    return keyed


@pytest.mark.parametrize("tenant", TENANTS)
def test_the_key_scoped_read_equals_the_views_for_every_key(lake_dir, tenant):
    snapshot = take(lake_dir, TenantId(tenant), 10.0)
    con = snapshot.con
    try:
        clock = lake_clock(con)
        keys = {k for (k,) in _rows(con, "SELECT DISTINCT conversation_id FROM spans WHERE conversation_id IS NOT NULL")}
        assert {"k-early", "k-late", "k-tie", "k-night", "k-long", "k-first", "k-dup"} <= keys
        views = {table: _by_key(_rows(con, f"SELECT * FROM {table} ORDER BY ALL"))
                 for table in ("conversation_turns", "conversations")}
        for key in sorted({*keys, "k-none", "k-clock", "k-copy", "k-later"}):  # the last two only on hidden copies
            load_key(con, key, clock)
            for table, mine in (("conversation_turns", KEY_TURNS_TABLE), ("conversations", KEY_CONVERSATIONS_TABLE)):
                assert _rows(con, f"SELECT * FROM {mine} ORDER BY ALL") == views[table].pop(key, []), (key, table)
        assert views == {"conversation_turns": {}, "conversations": {}}  # every key of the views was read
        # The cases happened: each key's traces and counts as built.
        traces = dict(_rows(con, "SELECT conversation_id, list(trace_id ORDER BY trace_id) FROM conversation_turns "
                                 "GROUP BY ALL"))
        assert "t-two" in traces["k-early"] and "t-two" not in traces["k-late"] and traces["k-tie"] == ["t-tie"]
        assert traces["k-night"] == ["t-n1", "t-n2", "t-n3"] and "k-copy" not in traces and "k-later" not in traces
        calls = dict(_rows(con, "SELECT conversation_id, sum(calls) FROM conversations GROUP BY ALL"))
        assert calls["k-old"] == 2 and calls["k-orig"] == 1 and calls["k-dup"] == 2
        if tenant == "acme":
            assert _rows(con, "SELECT status, closed_by FROM conversations WHERE conversation_id = 'k-clock'") == [
                ("closed", "inactivity")]
    finally:
        con.close()


def test_the_page_shows_the_views_conversation_cut_at_max_turns(lake_dir):
    snapshot = take(lake_dir, TenantId("acme"), 10.0)
    con = snapshot.con
    try:
        clock = lake_clock(con)
        materialize(con)  # the whole-lake tables the list computes: the page reads them when they exist
        seqs = _rows(con, "SELECT conversation_seq, turns FROM conversations WHERE conversation_id = 'k-long' ORDER BY 1")
        assert seqs == [(1, MAX_TURNS + 5), (2, 2), (3, 1)]
        # (seq asked, trace asked) -> the conversation shown: the latest, the one asked, the one holding the trace.
        for seq, trace, want in ((None, None, 3), (1, None, 1), (None, "t-more1", 2), (None, "t-more2", 3)):
            detail = conversation_detail(con, "k-long", seq, trace, load_key(con, "k-long", clock))
            assert detail is not None and detail.seqs == (1, 2, 3)
            assert conversation_detail(con, "k-long", seq, trace, (TURNS_TABLE, CONVERSATIONS_TABLE)) == detail
            view = _rows(con, "SELECT turn, trace_id, start_time, end_time, intent_key, calls, input_tokens, output_tokens,"
                              " end_marker FROM conversation_turns WHERE conversation_id = 'k-long' AND conversation_seq = $s"
                              f" ORDER BY turn LIMIT {MAX_TURNS}", {"s": want})
            assert [astuple(t)[:9] for t in detail.turns] == view
            summary = _rows(con, "SELECT first_trace_id, turns, status, closed_by FROM conversations "
                                 "WHERE conversation_id = 'k-long' AND conversation_seq = $s", {"s": want})
            assert [(detail.summary.first_trace_id, detail.summary.turns, detail.summary.status,
                     detail.summary.closed_by)] == summary
        assert len(conversation_detail(con, "k-long", 1, None, load_key(con, "k-long", clock)).turns) == MAX_TURNS  # type: ignore[union-attr]
        assert conversation_detail(con, "k-copy", None, None, load_key(con, "k-copy", clock)) is None  # only a hidden copy carries it
        assert conversation_detail(con, "k-copy", None, None, (TURNS_TABLE, CONVERSATIONS_TABLE)) is None
    finally:
        con.close()
