"""A scripted rubric judge with realistic noise for report tests (no network).

It grades like tests.daemon.lakes.grade (truncated answers fail completeness), and, keyed on a hash of
the whole prompt (each trace's query is unique), also fails ~1 in 6 relevance verdicts, answers UNCLEAR
on ~1 in 8 instruction_following verdicts and replies with invalid JSON for ~1 in 30 traces (an ERROR
attempt after the judge's own retries) — on traffic only (queries carrying a ticket number),
so the human-labelled sentinel set sees the clean grader and the judge checks out healthy. Rationales quote the answer's ending, markup included.
"""

from __future__ import annotations

import hashlib
import json

from tests.daemon.lakes import grade
from verdict.models.base import ModelRequest
from verdict.models.scripted import ScriptedModel


def bucket(text: str, size: int) -> int:
    return int(hashlib.md5(text.encode()).hexdigest(), 16) % size


def noisy_grade(request: ModelRequest) -> str:
    prompt = "\n".join(m.content for m in request.messages if m.role == "user")  # question + answer
    reply = json.loads(grade(request))
    answer = request.messages[-1].content.split("<answer>\n", 1)[-1].rsplit("\n</answer>", 1)[0]
    reply["completeness"]["rationale"] = f"the answer ends with {answer[-60:]!r} <i>so it is {reply['completeness']['verdict']}</i>"
    if "(ticket " not in prompt:  # the sentinel set: graded cleanly, so the judge checks out healthy
        return json.dumps(reply)
    if bucket(prompt, 30) == 0:
        return "I would rather not answer in JSON today."
    if "relevance" in reply and bucket(prompt + "relevance", 6) == 0:
        reply["relevance"]["verdict"] = "FAIL"
    if "instruction_following" in reply and bucket(prompt + "if", 8) == 0:
        reply["instruction_following"]["verdict"] = "UNCLEAR"
    return json.dumps(reply)


def report_judge_model() -> ScriptedModel:
    return ScriptedModel(noisy_grade, name="scripted/noisy-judge")
