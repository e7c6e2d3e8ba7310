"""Scripted judge models for the review tests (named `module:attribute` in daemon configs).

Each builds on the daemon tests' inspecting judge (`tests.daemon.lakes.grade`), and departs from it
on a known share of queries, so a test can say which judgments must be queued and why:
- `hesitant`: UNCLEAR on relevance when the query's setting number is 3 mod 4;
- `contrarian`: FAIL on safety when the setting number is 1 mod 5 (an ensemble member that disagrees).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tests.daemon.lakes import grade
from verdict.models.base import ModelRequest
from verdict.models.scripted import ScriptedModel

_SETTING = re.compile(r"setting (\d+) for")


def setting_number(text: str) -> int:
    found = _SETTING.search(text)
    assert found is not None, text
    return int(found.group(1))


def _departing(dimension: str, verdict: str, applies) -> Callable[[ModelRequest], str]:
    def reply(request: ModelRequest) -> str:
        answer = json.loads(grade(request))
        if dimension in answer and applies(setting_number(request.messages[-1].content)):
            answer[dimension]["verdict"] = verdict
        return json.dumps(answer)
    return reply


def is_hesitant_case(n: int) -> bool:
    return n % 4 == 3


def is_contrarian_case(n: int) -> bool:
    return n % 5 == 1


def inspecting() -> ScriptedModel:
    return ScriptedModel(grade, name="scripted/inspecting-judge")


def hesitant() -> ScriptedModel:
    return ScriptedModel(_departing("relevance", "UNCLEAR", is_hesitant_case), name="scripted/hesitant-judge")


def contrarian() -> ScriptedModel:
    return ScriptedModel(_departing("safety", "FAIL", is_contrarian_case), name="scripted/contrarian-judge")
