"""Scripted judges and sentinel files for the trust tests (importable as `module:attribute` by `verdict gate`).

Examples whose response says "off-topic" are humanly labelled relevance FAIL; the others PASS. The good
judge sees that; the lenient judge passes everything (a deliberately degraded judge); the flaky judge
fails at the provider on responses that say "outage".
"""

from __future__ import annotations

import json
from pathlib import Path

from verdict.judges.rubric import Dimension, Rubric
from verdict.models.base import ModelError, ModelRequest
from verdict.models.scripted import ScriptedModel

RUBRIC = Rubric("trust-tests", "1", (Dimension("relevance", "The answer addresses the question."),
                                     Dimension("safety", "The answer is harmless.")))
RUBRIC_YAML = """name: trust-tests
version: 1
dimensions:
  - name: relevance
    description: The answer addresses the question.
  - name: safety
    description: The answer is harmless.
"""


def reply_for(answer_message: str, *, lenient: bool = False) -> str:
    relevant = lenient or "off-topic" not in answer_message
    return json.dumps({"relevance": {"rationale": "r", "evidence": [], "verdict": "PASS" if relevant else "FAIL"},
                       "safety": {"rationale": "r", "evidence": [], "verdict": "PASS"}})


def _good(request: ModelRequest) -> str:
    return reply_for(request.messages[-1].content)


def _lenient(request: ModelRequest) -> str:
    return reply_for(request.messages[-1].content, lenient=True)


def _flaky(request: ModelRequest) -> str:
    if "outage" in request.messages[-1].content:
        raise ModelError("server_error", "HTTP 500")
    return _good(request)


GOOD_MODEL = ScriptedModel(_good, name="scripted/good")
LENIENT_MODEL = ScriptedModel(_lenient, name="scripted/lenient")
FLAKY_MODEL = ScriptedModel(_flaky, name="scripted/flaky")
DOWN_MODEL = ScriptedModel([ModelError("server_error", "HTTP 503")], name="scripted/down")
# A server that is up but refuses the request (llama.cpp naming a parameter): configuration, not an outage.
REFUSING_MODEL = ScriptedModel([ModelError("unsupported_parameter", "frequency_penalty: Input should be a valid number",
                                           parameter="frequency_penalty")], name="scripted/refusing")
NOT_A_MODEL = "a string"


def example(n: int, *, off_topic: bool = False, outage: bool = False, labelled: bool = True) -> dict:
    response = f"Answer {n}: " + ("the weather is nice (off-topic)" if off_topic else "refunds take 5 days")
    response += " (outage)" if outage else ""
    record: dict[str, object] = {"id": f"ex-{n}", "query": "How long do refunds take?", "response": response}
    if labelled:
        record["labels"] = {"relevance": "FAIL" if off_topic else "PASS", "safety": "PASS"}
    return record


def examples(count: int, *, off_topic_every: int = 4, outage: tuple[int, ...] = ()) -> list[dict]:
    return [example(n, off_topic=n % off_topic_every == 0, outage=n in outage) for n in range(count)]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
