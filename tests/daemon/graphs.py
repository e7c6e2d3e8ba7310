"""A user judge graph for `kind = "graph"` evaluators: one unit that answers {complete: bool, note: str}."""

from __future__ import annotations

import json

from verdict.graph import Pipeline, Schema, Unit
from verdict.models.scripted import ScriptedModel


class Completeness(Schema):
    note: str
    complete: bool


class CompletenessUnit(Unit):
    ResponseSchema = Completeness


def _reply(request) -> str:
    answer = request.messages[-1].content
    return json.dumps({"note": "checked the ending", "complete": answer.rstrip().endswith(".")})


def completeness_graph() -> Pipeline:
    unit = CompletenessUnit().prompt("@user\n{source.response}").via(ScriptedModel(_reply, name="scripted/graph"))
    return Pipeline("completeness") >> unit


def broken_factory() -> Pipeline:
    raise RuntimeError("no judge today")
