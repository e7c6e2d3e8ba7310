"""Conversations (issue 29, item 1): the real OpenTelemetry SDK exports turns to the real collector process (two
tenants, tokens), `verdict sql` reads the `conversation_turns` / `conversations` views with real DuckDB.

Span times are set explicitly (minutes after T0, three hours ago), so inactivity is decided by the data alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import verdict.tracing as vt
from tests.collector.conftest import Collector

TOKENS = {"acme": "acme-token-0123456789abcdef", "globex": "globex-token-0123456789abcdef"}
MINUTE = 60 * 10**9
T0 = (time.time_ns() // (60 * MINUTE) - 3) * 60 * MINUTE
TURN = 2 * 10**9  # each turn lasts two seconds
SPELLINGS = {
    "gen_ai.conversation.id": "sem-1",
    "session.id": "oi-1",
    "langfuse.session.id": "lf-1",
    "ai.telemetry.metadata.sessionId": "vercel-1",
    "traceloop.association.properties.chat_id": "tl-1",
}


def _chat(tokens: tuple[int, int] = (10, 5), attrs: dict[str, object] | None = None) -> dict:
    return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1], **(attrs or {})}


class App:
    """One service of one tenant: a TracerProvider exporting to the collector with the tenant's token."""

    def __init__(self, collector: Collector, tenant: str, service: str) -> None:
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(vt.ContextStampProcessor())
        exporter = OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces",
                                    headers={"Authorization": f"Bearer {TOKENS[tenant]}"})
        self.provider.add_span_processor(SimpleSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("support.app")

    def turn(self, minute: float, context=None, name: str = "chat gpt-4o-mini", **attributes) -> str:
        """One span from T0 + minute, two seconds long; returns its trace id."""
        start = T0 + int(minute * MINUTE)
        span = self.tracer.start_span(name, context=context, start_time=start, attributes=attributes)
        span.end(end_time=start + TURN)
        return format(span.get_span_context().trace_id, "032x")


def _send(collector: Collector) -> dict[str, str]:
    """Every scenario's turns; returns the trace ids the tests refer to."""
    front, back = App(collector, "acme", "frontend"), App(collector, "acme", "backend")
    other = App(collector, "globex", "frontend")
    ids = {}
    for minute, (attribute, value) in enumerate(SPELLINGS.items()):
        ids[value] = front.turn(minute, **_chat(attrs={attribute: value}))
    ids["both"] = front.turn(5, **_chat(attrs={"session.id": "oi-x", "gen_ai.conversation.id": "sem-x"}))
    ids["e-mail"] = front.turn(6, **_chat(attrs={"gen_ai.conversation.id": "bob@example.com"}))
    # Two conversations interleaved; a's second turn spans two services (the key on the front end's root only).
    ids["a1"] = front.turn(10, **_chat(attrs={"gen_ai.conversation.id": "a", "verdict.intent_key": "billing.v1"}))
    ids["b1"] = front.turn(11, **_chat((7, 3), attrs={"gen_ai.conversation.id": "b", "verdict.intent_key": "search.v1"}))
    root = front.tracer.start_span("turn", start_time=T0 + 12 * MINUTE, attributes={"gen_ai.conversation.id": "a"})
    back.turn(12.01, context=trace.set_span_in_context(root), **_chat((100, 50)))
    root.end(end_time=T0 + 12 * MINUTE + TURN)
    ids["a2"] = format(root.get_span_context().trace_id, "032x")
    ids["nokey"] = front.turn(12.5, **_chat())
    ids["b2"] = front.turn(13, **_chat((7, 3), attrs={"gen_ai.conversation.id": "b"}))
    ids["a3"] = front.turn(14, **_chat(attrs={"gen_ai.conversation.id": "a", "verdict.intent_key": "refund.v1"}))
    # The same id in another tenant.
    ids["globex-a"] = other.turn(10, **_chat((1, 1), attrs={"gen_ai.conversation.id": "a"}))
    # 40 minutes without a turn: the id's next turn starts a second conversation.
    front.turn(20, **_chat(attrs={"gen_ai.conversation.id": "idle"}))
    front.turn(60, **_chat(attrs={"gen_ai.conversation.id": "idle"}))
    # The end marker closes at once; the id's next turn is another conversation.
    front.turn(30, **_chat(attrs={"gen_ai.conversation.id": "ended"}))
    front.turn(31, **_chat(attrs={"gen_ai.conversation.id": "ended", "verdict.conversation.end": True}))
    front.turn(32, **_chat(attrs={"gen_ai.conversation.id": "ended"}))
    # The SDK's context stamps foreign spans (ContextStampProcessor), the end marker included.
    with vt.conversation_context("sdk-1"):
        front.turn(40, **_chat())
    with vt.conversation_context("sdk-1", end=True):
        front.turn(41, **_chat())
    # The newest span of the lake: T0 + 100 min (+2 s), the clock of the `conversations` view.
    front.turn(100, **_chat(attrs={"gen_ai.conversation.id": "fresh"}))
    for app in (front, back, other):
        app.provider.shutdown()
    return ids


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("conversations")
    tokens = tmp / "tokens.yaml"
    tokens.write_text("".join(f'"{token}": {tenant}\n' for tenant, token in TOKENS.items()))
    collector = Collector(tmp / "data", ("--tokens", str(tokens))).start()
    try:
        ids = _send(collector)
    finally:
        assert collector.stop() == 0, "".join(collector.log)
    return collector.data_dir, ids


def sql(lake, query: str, tenant: str = "acme") -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "sql", query, "--data-dir", str(lake[0]),
                          "--tenant", tenant, "--format", "json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _by_id(rows: list[dict]) -> dict[tuple[str, int], dict]:
    return {(r["conversation_id"], r["conversation_seq"]): r for r in rows}


def test_key_from_each_spelling(lake):
    turns = sql(lake, "SELECT conversation_id, trace_id FROM conversation_turns")
    keyed = {r["trace_id"]: r["conversation_id"] for r in turns}
    ids = lake[1]
    for value in SPELLINGS.values():
        assert keyed[ids[value]] == value
    assert keyed[ids["both"]] == "sem-x"  # gen_ai.conversation.id before the vendors' spellings
    assert ids["e-mail"] not in keyed  # refused (redaction would change it), never grouped as "<EMAIL>"
    row, = sql(lake, f"SELECT conversation_id, attributes FROM spans WHERE trace_id = '{ids['e-mail']}'")
    assert row["conversation_id"] is None and "bob@example.com" not in row["attributes"]


def test_interleaved_conversations_over_traces_and_services(lake):
    ids = lake[1]
    turns = sql(lake, "SELECT conversation_id, turn, trace_id, services FROM conversation_turns "
                      "WHERE conversation_id IN ('a', 'b') ORDER BY conversation_id, turn")
    assert [(r["conversation_id"], r["turn"], r["trace_id"]) for r in turns] == [
        ("a", 1, ids["a1"]), ("a", 2, ids["a2"]), ("a", 3, ids["a3"]), ("b", 1, ids["b1"]), ("b", 2, ids["b2"])]
    assert turns[1]["services"] == ["backend", "frontend"]
    conversations = _by_id(sql(lake, "SELECT * FROM conversations WHERE conversation_id IN ('a', 'b')"))
    a, b = conversations[("a", 1)], conversations[("b", 1)]
    assert set(conversations) == {("a", 1), ("b", 1)}
    assert (a["turns"], a["calls"], a["input_tokens"], a["output_tokens"]) == (3, 3, 120, 60)
    assert (b["turns"], b["calls"], b["input_tokens"], b["output_tokens"]) == (2, 2, 14, 6)
    assert a["intent_key"] == "billing.v1" and a["intent_keys"] == ["billing.v1", "refund.v1"]
    assert b["intent_keys"] == ["search.v1"] and a["services"] == ["backend", "frontend"]
    assert a["first_trace_id"] == ids["a1"] and a["tenant_id"] == "acme"


def test_a_trace_without_a_key_is_no_turn(lake):
    ids = lake[1]
    found = sql(lake, f"SELECT count(*) AS n FROM conversation_turns WHERE trace_id = '{ids['nokey']}'")
    assert found == [{"n": 0}]
    assert sql(lake, f"SELECT count(*) AS n FROM llm_calls WHERE trace_id = '{ids['nokey']}'") == [{"n": 1}]


def test_one_id_in_two_tenants_never_mixes(lake):
    ids = lake[1]
    globex = sql(lake, "SELECT tenant_id, conversation_id, turns, first_trace_id, input_tokens FROM conversations",
                 tenant="globex")
    assert globex == [{"tenant_id": "globex", "conversation_id": "a", "turns": 1, "first_trace_id": ids["globex-a"],
                       "input_tokens": 1}]
    acme = sql(lake, "SELECT turns FROM conversations WHERE conversation_id = 'a'")
    assert acme == [{"turns": 3}]


def test_closing_by_inactivity_against_the_lake_clock_and_a_passed_in_one(lake):
    query = ("SELECT conversation_id, conversation_seq, turns, status, closed_by, "
             "(epoch_ns(closes_at) - epoch_ns(last_time)) // 60000000000 AS minutes_to_close FROM {source}")
    rows = _by_id(sql(lake, query.format(source="conversations")))
    assert {k: (r["turns"], r["status"], r["closed_by"], r["minutes_to_close"]) for k, r in rows.items()
            if k[0] in ("idle", "fresh")} == {
        ("idle", 1): (1, "closed", "inactivity", 30), ("idle", 2): (1, "closed", "inactivity", 30),
        ("fresh", 1): (1, "open", None, 30)}
    # As of T0 + 61 min, the second `idle` conversation (60 min) and `ended`'s second (32 min) are still open.
    as_of = f"make_timestamp_ns({T0 + 61 * MINUTE})"
    earlier = _by_id(sql(lake, query.format(source=f"conversations_at({as_of}, 30)")))
    assert [earlier[k]["status"] for k in (("idle", 1), ("idle", 2), ("ended", 2))] == ["closed", "open", "open"]
    # A 10-minute limit closes `ended`'s second and leaves `a` (a turn every minute or two) whole.
    shorter = _by_id(sql(lake, query.format(source=f"conversations_at({as_of}, 10)")))
    assert [shorter[k]["closed_by"] for k in (("idle", 2), ("ended", 2))] == [None, "inactivity"]
    assert shorter[("a", 1)]["turns"] == 3 and shorter[("a", 1)]["minutes_to_close"] == 10


def test_closing_by_the_end_marker(lake):
    rows = _by_id(sql(lake, "SELECT conversation_id, conversation_seq, turns, closed_by, closes_at = last_time "
                            "AS at_last FROM conversations WHERE conversation_id IN ('ended', 'sdk-1')"))
    assert {k: (r["turns"], r["closed_by"], r["at_last"]) for k, r in rows.items()} == {
        ("ended", 1): (2, "end_marker", True), ("ended", 2): (1, "inactivity", False),
        ("sdk-1", 1): (2, "end_marker", True)}
