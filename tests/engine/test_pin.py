"""Pinned units run once per run and share their result; pins that depend on per-sample data are refused."""

import pytest

from verdict.graph import ConfigurationError, Pipeline, Schema, Unit
from verdict.judges import JudgeUnit
from verdict.models.scripted import ScriptedModel


class Rubric(Schema):
    criteria: list[str]


class RubricUnit(Unit):
    ResponseSchema = Rubric


def test_pinned_unit_runs_once_and_every_sample_sees_its_result():
    writer = ScriptedModel(['{"criteria": ["accurate", "brief"]}'], name="scripted/writer")
    judge_model = ScriptedModel(['{"score": 4}'], record=True)
    rubric = RubricUnit().prompt("Write a rubric for support answers.").via(writer).pin()
    judge = JudgeUnit().prompt('{"; ".join(previous.criteria)} | {source.answer}')
    rows = (Pipeline() >> rubric >> judge).via(judge_model).run_from_dataset(
        [{"answer": f"a{i}"} for i in range(50)], max_workers=8)
    assert writer.calls == 1
    assert judge_model.calls == 50 and all(r.ok for r in rows)
    assert sorted(r.messages[0].content for r in judge_model.requests) == \
        sorted(f"accurate; brief | a{i}" for i in range(50))
    # the shared result is addressable from every row
    assert rows[7]["rubric"].criteria == ["accurate", "brief"]


def test_pinned_unit_reading_source_is_rejected_at_build():
    rubric = RubricUnit().prompt("Write a rubric for {source.topic}").pin()
    with pytest.raises(ConfigurationError, match="rubric is pinned .* reads \\{source...\\}"):
        (Pipeline() >> rubric >> JudgeUnit()).via(ScriptedModel(["{}"])).build()


def test_pinned_root_unit_reading_input_is_rejected_at_build():
    # `input` of a unit without dependencies is the sample, so it differs per sample just like `source`.
    for prompt in ("Rubric for {input.topic}", "{[t for t in source.topics]}"):
        rubric = RubricUnit().prompt(prompt).pin()
        with pytest.raises(ConfigurationError, match="rubric is pinned .* reads \\{(input|source)...\\}"):
            (Pipeline() >> rubric >> JudgeUnit()).via(ScriptedModel(["{}"])).build()


def test_pinned_unit_after_per_sample_unit_is_rejected():
    pinned = RubricUnit().prompt("static").pin()
    with pytest.raises(ConfigurationError, match="depends on per-sample units: judge"):
        (Pipeline() >> JudgeUnit() >> pinned).via(ScriptedModel(["{}"])).build()


def test_failed_pin_is_an_error_in_every_row_not_a_crash():
    rubric = RubricUnit().prompt("static").via(ScriptedModel(["not json"]), retries=0).pin()
    rows = (Pipeline() >> rubric >> JudgeUnit()).via(ScriptedModel(['{"score": 1}'])).run_from_dataset(
        [{"q": 1}, {"q": 2}])
    assert len(rows) == 2
    assert all(r.error.startswith("rubric: extraction") for r in rows)
    assert rows[0]["judge"].kind == "upstream"
