"""Live: each real peer instrumentation, in its side venv, exports to the real collector process.

Marker `peers` (needs `make peers`: the side venvs and the Node families' node_modules; minutes to build
once, then seconds per test). The assertions are the target of issue 14: every call is exactly one
`llm_calls` row with its model, tokens and the question and answer, redacted; no planted secret
anywhere under the data dir (Parquet columns decoded) nor in the collector's log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.collector.conftest import Collector
from tests.peers.harness import (
    BY_NAME,
    RECORD_ONLY_FAMILIES,
    SENDERS,
    Sender,
    _peer,
    expected_llm_calls,
    fake_providers,
    run_sender,
)
from verdict.tenancy import LOCAL_TENANT
from verdict_daemon.service.material import final_answer

pytestmark = pytest.mark.peers
TENANT = LOCAL_TENANT  # the tokenless collector's scope
# Families `make peers` builds (the record-only ones are replayed from their fixtures in the main suite).
LIVE_SENDERS = [s for s in SENDERS if s.family not in RECORD_ONLY_FAMILIES]
PYTHON_SENDERS = [s.name for s in LIVE_SENDERS if not s.node]
NODE_SENDERS = [s.name for s in LIVE_SENDERS if s.node]  # the Vercel AI SDKs, the OTel JS openai instrumentation


@pytest.fixture(scope="module")
def providers():
    with fake_providers() as servers:
        yield servers


@pytest.fixture
def collector(tmp_path) -> Iterator[Collector]:
    c = Collector(tmp_path / "data").start()
    yield c
    c.stop()


def _installed(sender: Sender) -> Sender:
    if not sender.installed():
        pytest.fail(f"side environment of {sender.family} missing: run `make peers` first")
    return sender


def llm_calls(data_dir: Path) -> list[dict]:
    from collector.views import open_scoped

    con = open_scoped(data_dir, TENANT)
    try:
        cur = con.execute("SELECT * FROM llm_calls ORDER BY start_time")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()


def span_count(data_dir: Path) -> int:
    from collector.views import open_scoped

    con = open_scoped(data_dir, TENANT)
    try:
        return con.execute("SELECT count(*) FROM spans").fetchone()[0]
    finally:
        con.close()


def secrets_on_disk(data_dir: Path, log: str) -> list[str]:
    """Where a planted secret appears: any file's bytes, any decoded Parquet value, the collector log."""
    import duckdb

    hits = [f"collector log: {s}" for s in _peer.SECRETS if s in log]
    for path in data_dir.rglob("*"):
        if not path.is_file():
            continue
        raw = path.read_bytes()
        hits += [f"{path}: {s}" for s in _peer.SECRETS if s.encode() in raw]
        if path.suffix == ".parquet":
            con = duckdb.connect()
            columns = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()]
            for column in columns:
                values = con.execute(f'SELECT DISTINCT "{column}"::VARCHAR FROM read_parquet(\'{path}\')').fetchall()
                text = "\n".join(v[0] for v in values if v[0] is not None)
                hits += [f"{path}:{column}: {s}" for s in _peer.SECRETS if s in text]
            con.close()
    return hits


def _text(messages: str | None) -> str:
    """All text of a GenAI-semconv message list (JSON), for content checks."""
    return json.dumps(json.loads(messages)) if messages else ""


def _redacted(text: str) -> str:
    """The scenario text as the default redactor leaves it (placeholders for the planted secrets)."""
    return text.replace(_peer.CARD, "<CARD>").replace(_peer.EMAIL, "<EMAIL>")


def check_target(sender: Sender, collector: Collector) -> None:
    """Issue 14's target for one sender's model calls (issue 33's tool scenario: the call asking for the tool
    too, its row naming the tool; smolagents answers through its `final_answer` tool)."""
    data_dir = collector.data_dir
    assert span_count(data_dir) > 0, "the collector landed no span"
    rows = llm_calls(data_dir)
    expected = expected_llm_calls(sender)
    summary = [(r["name"], r["operation"], r["request_model"], r["input_tokens"], r["output_tokens"]) for r in rows]
    assert len(rows) == len(expected), f"want one llm_calls row per model call, got {summary}"
    for row, call in zip(rows, expected, strict=True):
        assert call["request_model"] in (row["request_model"], row["response_model"]), summary
        assert (row["input_tokens"], row["output_tokens"]) == (call["input_tokens"], call["output_tokens"]), summary
        asked, answered = _text(row["input_messages"]), _text(row["output_messages"])
        assert _redacted(call["question"]) in asked, asked or "no input_messages"
        parts = [p for m in json.loads(row["output_messages"] or "[]") for p in m["parts"]]
        if "tool_call" in call:
            assert [p.get("name") for p in parts if p["type"] == "tool_call"] == [call["tool_call"]], answered
        if "answer" in call:
            answers = [answered, *(final_answer(p) or "" for p in parts)]
            assert any(_redacted(call["answer"]) in text for text in answers), answered or "no output_messages"
    assert secrets_on_disk(data_dir, "".join(collector.log)) == []


def _live(sender: Sender, providers: tuple, collector: Collector) -> None:
    """Run the sender into the collector, then check the target."""
    run = run_sender(_installed(sender), collector.url, *providers)
    assert run.provider_requests == len(expected_llm_calls(sender))
    check_target(sender, collector)


@pytest.mark.parametrize("name", PYTHON_SENDERS)
def test_python_peer_into_the_collector(name, providers, collector):
    _live(BY_NAME[name], providers, collector)


@pytest.mark.parametrize("name", NODE_SENDERS)
def test_node_peer_into_the_collector(name, providers, collector):
    _live(BY_NAME[name], providers, collector)


# The docs/tracing.md recipes: the peer on Verdict's provider, exported by Verdict (export_peer_spans),
# every call inside intent_context. openai-v2 in its span_only mode (Verdict exports spans, not logs).
RECIPES = ["openinference-openai", "openllmetry-openai", "openai-v2-span-only", "openllmetry-anthropic-native",
           "pydantic-ai"]


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_via_verdict_stamps_the_intent_and_redacts(name, providers, collector):
    base = _installed(BY_NAME[name])
    sender = Sender(base.name, base.family, base.argv, {**base.env, "PEER_VIA_VERDICT": "1"}, base.provider)
    run_sender(sender, collector.url, *providers)
    from collector.views import open_scoped

    con = open_scoped(collector.data_dir, TENANT)
    try:
        scopes = con.execute("SELECT scope_name, count(*), count(*) FILTER (WHERE intent_key = ?) "
                             "FROM spans GROUP BY 1", [_peer.INTENT]).fetchall()
    finally:
        con.close()
    # every exported span is a GenAI span started inside intent_context: all carry the key
    assert scopes and all(n == stamped for _, n, stamped in scopes), scopes
    assert secrets_on_disk(collector.data_dir, "".join(collector.log)) == []
    rows = llm_calls(collector.data_dir)  # the target: one row per call, with the intent
    assert len(rows) == len(_peer.QUESTIONS) and {r["intent_key"] for r in rows} == {_peer.INTENT}, \
        [(r["name"], r["intent_key"]) for r in rows]
