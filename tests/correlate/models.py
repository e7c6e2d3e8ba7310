"""A scripted rubric judge for the correlation tests: the daemon tests' inspecting judge, except that
relevance FAILs when the query's setting number is 1 mod 5 and is UNCLEAR when it is 3 mod 7."""

from __future__ import annotations

import json

from tests.daemon.lakes import grade
from tests.review.models import setting_number
from verdict.models.scripted import ScriptedModel


def expected_overall(query: str) -> str:
    n = setting_number(query)
    return "FAIL" if n % 5 == 1 else "UNCLEAR" if n % 7 == 3 else "PASS"


def _reply(request) -> str:
    answer = json.loads(grade(request))
    verdict = expected_overall(request.messages[-1].content)
    if verdict != "PASS":
        answer["relevance"]["verdict"] = verdict
    return json.dumps(answer)


def graded() -> ScriptedModel:
    return ScriptedModel(_reply, name="scripted/graded-judge")
