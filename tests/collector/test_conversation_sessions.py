"""The `conversation_turns` / `conversations` cut (collector.conversations) against an independent Python
reference, on random turns: keys, overlapping times, end markers, inactivity limits and clocks (hypothesis).

Spans come from the real OpenTelemetry SDK, encoded as OTLP and landed by the collector's own decode and
writer path (tests.collector.conftest.land_request), then read with real DuckDB through the scoped views.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector import lake
from collector.views import open_scoped
from tests.collector.conftest import land_request
from verdict.tenancy import validate_tenant_id

MINUTE = 60 * 10**9
T0 = 1_780_000_000 * 10**9  # 2026-05-28, a fixed instant: nothing here reads the clock


@dataclass(frozen=True)
class Turn:
    key: str
    start: int  # minutes after T0
    minutes: int  # duration
    end_marker: bool


turns_strategy = st.lists(st.builds(Turn, st.sampled_from(["k1", "k2", "k3"]), st.integers(0, 240),
                                    st.integers(1, 20), st.booleans() | st.just(False)), min_size=1, max_size=14)


def _land(turns: list[Turn], data_dir: Path) -> list[str]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("app")
    trace_ids = []
    for turn in turns:
        attributes: dict[str, str | bool] = {"gen_ai.conversation.id": turn.key}
        if turn.end_marker:
            attributes["verdict.conversation.end"] = True
        start = T0 + turn.start * MINUTE
        span = tracer.start_span("turn", start_time=start, attributes=attributes)
        span.end(end_time=start + turn.minutes * MINUTE)
        trace_ids.append(format(span.get_span_context().trace_id, "032x"))
    land_request(data_dir, encode_spans(memory.get_finished_spans()), "acme")
    return trace_ids


def _reference(turns: list[Turn], trace_ids: list[str], inactivity: int, as_of: int) -> tuple[dict, dict]:
    """(trace id -> (key, seq, turn number), (key, seq) -> status) by the rule in docs/conversations.md."""
    placed, status = {}, {}
    for key in {t.key for t in turns}:
        mine = sorted((T0 + t.start * MINUTE, trace_id, t) for t, trace_id in zip(turns, trace_ids, strict=True)
                      if t.key == key)
        seq = number = 0
        key_end: int | None = None  # the gap is measured from every earlier turn of the id, even across an end marker
        last_end = 0  # the last end of the current conversation
        ended = False
        for start, trace_id, turn in mine:
            if key_end is None or ended or start >= key_end + inactivity * MINUTE:
                seq, number, last_end = seq + 1, 0, 0
            number += 1
            end = start + turn.minutes * MINUTE
            key_end, last_end = max(key_end or end, end), max(last_end, end)
            ended = turn.end_marker
            placed[trace_id] = (key, seq, number)
            status[(key, seq)] = "closed" if ended or last_end + inactivity * MINUTE <= as_of else "open"
    return placed, status


# Explicit cases first: the end marker cuts before the gap would; a turn exactly `inactivity` after the last end
# starts the next conversation, and the first one is closed at that instant.
@example(turns=[Turn("k1", 0, 1, True), Turn("k1", 2, 1, False)], inactivity=30, as_of=3)
@example(turns=[Turn("k1", 0, 1, False), Turn("k1", 0, 2, True), Turn("k1", 2, 1, False)], inactivity=1, as_of=0)
@example(turns=[Turn("k1", 0, 5, False), Turn("k1", 15, 1, False)], inactivity=10, as_of=15)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
@given(turns=turns_strategy, inactivity=st.sampled_from([1, 10, 30, 90]), as_of=st.integers(0, 300))
def test_turns_and_status_match_the_reference(turns, inactivity, as_of):
    data_dir = Path(tempfile.mkdtemp()) / "data"
    try:
        lake.prepare(data_dir)
        trace_ids = _land(turns, data_dir)
        con = open_scoped(data_dir, validate_tenant_id("acme"))
        got_turns = {trace_id: (key, seq, number) for key, seq, number, trace_id in con.execute(
            f"SELECT conversation_id, conversation_seq, turn, trace_id FROM conversation_turns_within({inactivity})"
        ).fetchall()}
        got_status = {(key, seq): status for key, seq, status in con.execute(
            f"SELECT conversation_id, conversation_seq, status FROM conversations_at("
            f"make_timestamp_ns({T0 + as_of * MINUTE}), {inactivity})").fetchall()}
        con.close()
    finally:
        shutil.rmtree(data_dir.parent)
    want_turns, want_status = _reference(turns, trace_ids, inactivity, T0 + as_of * MINUTE)
    assert got_turns == want_turns
    assert got_status == want_status
