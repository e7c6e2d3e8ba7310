"""Test helpers: span-lake segments written with the collector's own writer and schema, and a
scripted judge that inspects the graded answer (refusals and truncations fail)."""

from __future__ import annotations

import json
import os
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from collector import lake
from collector.schema import arrow_schema
from verdict.inject import CorruptionInjector, CorruptionKind
from verdict.models.base import ModelRequest
from verdict.models.scripted import ScriptedModel
from verdict.semconv import COLUMN_NAMES

INJECTOR = CorruptionInjector(seed=7)
REFUSAL_MARKERS = ("I'm sorry", "I am unable", "I cannot", "As an AI")


def span_row(trace_id: str, start: datetime, *, intent: str | None, query: str, answer: str,
             workload: str | None = None, status: str = "UNSET", span_id: str | None = None) -> dict:
    start_ns = int(start.timestamp() * 1e9)
    row = dict.fromkeys(COLUMN_NAMES)
    row.update(
        trace_id=trace_id, span_id=span_id or trace_id[:16], name="chat gpt-4o-mini", kind="CLIENT",
        start_time=start_ns, end_time=start_ns + 50_000_000, duration_ns=50_000_000, status_code=status,
        operation="chat", provider="openai", request_model="gpt-4o-mini", intent_key=intent, workload=workload,
        error_type="APIError" if status == "ERROR" else None,
        input_messages=json.dumps([{"role": "user", "parts": [{"type": "text", "content": query}]}]),
        output_messages=json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}],
                                     "finish_reason": "stop"}]),
        received_at=start_ns + 60_000_000, attributes="{}", resource_attributes="{}", events="[]", links="[]")
    return row



def plain_span(trace_id: str, span_id: str, parent: str | None, start: datetime, *, name: str, intent: str | None,
               scope: str, **extra) -> dict:
    """A span that is no LLM call (operation NULL): an app's request span, an agent or an unmapped peer span."""
    row = span_row(trace_id, start, intent=intent, query="", answer="", span_id=span_id)
    row.update(operation=None, provider=None, request_model=None, input_messages=None, output_messages=None,
               parent_span_id=parent, name=name, scope_name=scope, kind="INTERNAL", **extra)
    return row

def write_rows(data_dir: Path, tenant: str, rows: list[dict]) -> None:
    """One segment per date partition, as the collector would land them."""
    import pyarrow as pa

    by_date: dict[str, list[dict]] = {}
    for row in rows:
        day = datetime.fromtimestamp(row["start_time"] / 1e9, UTC).date().isoformat()
        by_date.setdefault(day, []).append(row)
    lake.prepare(data_dir)
    schema = arrow_schema()
    for day, day_rows in by_date.items():
        table = pa.Table.from_pylist(day_rows, schema=schema)
        lake.write_segment(data_dir, tenant, day, table)


def answer_for(query: str) -> str:
    return f"Here is the answer to '{query}'. First, open the settings page. Then choose the option you need."


def synthetic_days(now: datetime, *, intents: tuple[str, ...], per_day: int, days: int = 9,
                   corrupt: str | None = None, seed: int = 0) -> list[dict]:
    """`per_day` traces per intent per day over the `days` before `now`; the `corrupt` intent's last-day
    answers are truncated by CorruptionInjector."""
    rng = random.Random(seed)
    rows = []
    for day in range(days):
        day_start = now - timedelta(days=days - day)
        for intent in intents:
            for i in range(per_day):
                start = day_start + timedelta(seconds=rng.uniform(60, 86_000))
                query = f"How do I change setting {i} for {intent}?"
                answer = answer_for(query)
                if intent == corrupt and day == days - 1:
                    answer = INJECTOR.corrupt(answer, CorruptionKind.TRUNCATION, key=query).corrupted
                trace_id = f"{rng.getrandbits(128):032x}"
                rows.append(span_row(trace_id, start, intent=intent, query=query, answer=answer))
    return rows


def grade(request: ModelRequest) -> str:
    """A scripted rubric judge: reads the <answer> block and fails what it can see is wrong."""
    text = request.messages[-1].content
    answer = text.split("<answer>\n", 1)[-1].rsplit("\n</answer>", 1)[0]
    # Grade exactly the dimensions the prompt asks for (groundedness is skipped without context).
    keys = re.search(r"with exactly the keys ([a-z_, ]+):", request.messages[0].content)
    assert keys is not None, request.messages[0].content
    asked = keys.group(1).split(", ")
    refused = any(marker in answer for marker in REFUSAL_MARKERS)
    truncated = not answer.rstrip().endswith((".", "!", "?"))
    verdicts = {d: "PASS" for d in asked}
    if refused:
        verdicts["completeness"] = verdicts["relevance"] = "FAIL"
    if truncated:
        verdicts["completeness"] = "FAIL"
    return json.dumps({d: {"rationale": f"{d} checked", "evidence": [], "verdict": v} for d, v in verdicts.items()})


def scripted_judge_model() -> ScriptedModel:
    return ScriptedModel(grade, name="scripted/inspecting-judge")


def prose_judge_model() -> ScriptedModel:
    """A judge that answers prose, never the rubric's JSON: no judgment is ever usable."""
    return ScriptedModel(lambda _: "The answer looks helpful and complete to me.", name="scripted/prose-judge")


def slow_judge_model() -> ScriptedModel:
    """The same judge with 20 ms per call, so a test can stop the daemon mid-judging."""
    return ScriptedModel(grade, name="scripted/inspecting-judge", latency=0.02)


JUDGE_CALLS_ENV = "VERDICT_TEST_JUDGE_CALLS"


def _graded_and_counted(request: ModelRequest) -> str:
    reply = grade(request)
    with open(os.environ[JUDGE_CALLS_ENV], "a") as calls:  # one line per answered call, for the test to wait on
        calls.write("answered\n")
    return reply


def counted_slow_judge_model() -> ScriptedModel:
    """`slow_judge_model` that also appends a line per answered call to the file named by JUDGE_CALLS_ENV,
    so a test can stop the daemon once judging has really produced something (not after a guessed sleep)."""
    return ScriptedModel(_graded_and_counted, name="scripted/inspecting-judge", latency=0.05)


def hung_judge_model() -> ScriptedModel:
    """A judge whose calls never return in a test's lifetime (a provider that accepts and stalls)."""
    return ScriptedModel(grade, name="scripted/hung-judge", latency=3600)


def lenient_grade(request: ModelRequest) -> str:
    """A deliberately bad rubric judge: PASS on every dimension it is asked about, whatever the answer."""
    keys = re.search(r"with exactly the keys ([a-z_, ]+):", request.messages[0].content)
    assert keys is not None, request.messages[0].content
    asked = keys.group(1).split(", ")
    return json.dumps({d: {"rationale": f"{d} looks fine", "evidence": [], "verdict": "PASS"} for d in asked})


def refusing_judge_model() -> ScriptedModel:
    """A judge whose server refuses every call the same way (a parameter it does not accept)."""
    from verdict.models.base import ModelError

    return ScriptedModel(lambda request: ModelError("bad_request", "HTTP 422: frequency_penalty is not a number"),
                         name="scripted/refused")


def lenient_judge_model() -> ScriptedModel:
    return ScriptedModel(lenient_grade, name="scripted/lenient-judge")
