"""What a unit or judge is given means what it says: a field of the dependency wins over its unit's short name
in a template; an unknown keyword is a TypeError naming it, never a field sent to the server; parameters a
server takes beyond the sampling ones go in explicitly (extra_body=); seed 003's `provider=` is understood or
refused with a TypeError saying what to pass."""

from __future__ import annotations

import pytest

from verdict.graph import Layer, Pipeline, Schema, Unit
from verdict.graph.errors import ConfigurationError
from verdict.judges import DEFAULT_RUBRIC, Judge, JudgeUnit, PairwiseJudge
from verdict.models.openai_model import OpenAIModel
from verdict.models.ratelimit import RateLimits
from verdict.models.retry import RetryPolicy
from verdict.models.scripted import ScriptedModel
from verdict_demo.fake_llm.behaviours import Reply


class RubricUnit(Unit):
    class ResponseSchema(Schema):
        rubric: list[str]


def test_a_field_of_the_single_dependency_wins_over_its_short_name():
    writer = ScriptedModel(['{"rubric": ["polite", "clear"]}'])
    judge = ScriptedModel(['{"score": 4}'], record=True)
    pipeline = Pipeline() \
        >> RubricUnit().prompt("Rubric for {source.topic}").via(writer) \
        >> JudgeUnit().prompt('{"\\n".join(f"{i+1}. {item}" for i, item in enumerate(previous.rubric))}').via(judge)
    assert pipeline.run({"topic": "support"}).ok
    assert judge.requests[0].messages[-1].content == "1. polite\n2. clear"


def test_the_whole_output_of_a_dependency_stays_reachable_by_position():
    writer = ScriptedModel(['{"rubric": ["polite", "clear"]}'])
    judge = ScriptedModel(['{"score": 4}'], record=True)
    pipeline = Pipeline() >> RubricUnit().prompt("r").via(writer) \
        >> JudgeUnit().prompt("{previous[0].rubric} {len(previous.rubric)}").via(judge)
    assert pipeline.run({"a": 1}).ok
    assert judge.requests[0].messages[-1].content == "['polite', 'clear'] 2"


def test_with_several_dependencies_a_name_is_still_the_units():
    writers = [RubricUnit(name="rubric").prompt("r").via(ScriptedModel([f'{{"rubric": ["r{i}"]}}']))
               for i in range(2)]
    judge = ScriptedModel(['{"score": 4}'], record=True)
    pipeline = Pipeline() >> Layer(writers) >> JudgeUnit().prompt("{previous.rubric[1].rubric}").via(judge)
    assert pipeline.run({"a": 1}).ok
    assert judge.requests[0].messages[-1].content == "['r1']"


@pytest.mark.parametrize("make", [
    lambda: Judge(ScriptedModel(["{}"]), tempreature=0.0),
    lambda: PairwiseJudge(ScriptedModel(["[[A]]"]), tempreature=0.0),
    lambda: JudgeUnit().via(ScriptedModel(["1"]), tempreature=0.0),
    lambda: Layer([JudgeUnit()]).via(ScriptedModel(["1"]), tempreature=0.0),
])
def test_a_misspelt_keyword_is_a_type_error_naming_it(make):
    with pytest.raises(TypeError, match="unexpected keyword argument.*'tempreature'.*extra_body"):
        make()


def test_extra_body_must_be_a_mapping():
    with pytest.raises(TypeError, match="extra_body must be a mapping"):
        Judge(ScriptedModel(["{}"]), extra_body=["min_p", 0.1])


def test_server_parameters_reach_the_server_only_when_passed_explicitly(fake_openai):
    fake_openai.enqueue(Reply(text="[[A]]"), Reply(text="[[B]]"))
    model = OpenAIModel("smollm2", base_url=fake_openai.base_url, retry=RetryPolicy(max_attempts=1),
                        rate_limits=RateLimits(None, None))
    judgment = PairwiseJudge(model, retries=0, top_k=20, extra_body={"min_p": 0.05}).compare("q", "a", "b")
    assert judgment.is_usable
    bodies = [r.body for r in fake_openai.requests]
    assert all(b["min_p"] == 0.05 and b["top_k"] == 20 and b["temperature"] == 0.1 for b in bodies)
    assert not any("tempreature" in b or "extra_body" in b for b in bodies)


# --- seed 003's provider= ----------------------------------------------------------------------------------
def test_provider_as_a_model_with_its_own_name():
    model = ScriptedModel(["[[A]]", "[[B]]"])
    judge = PairwiseJudge(provider=model, model=model.name)
    assert judge.model is model and judge.compare(query="q", response_a="a", response_b="b").is_usable


def test_provider_as_a_provider_name(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    judge = Judge(provider="openai", model="gpt-4o-mini")
    assert judge.model.name == "openai/gpt-4o-mini" and "provider" not in judge.params


def test_a_provider_adapter_object_is_refused_saying_what_to_pass():
    class AnthropicAdapter:  # seed 003's verdict_eval.providers adapter, as a user would bring it
        pass

    with pytest.raises(TypeError, match="provider= takes a provider name .* not AnthropicAdapter.*"
                                        "PairwiseJudge\\('openai/<model>'\\)"):
        PairwiseJudge(provider=AnthropicAdapter(), model="claude-haiku-4-5")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"provider": "openai", "model": "openai/gpt-4o"}, "model= is the model's name on that provider"),
    ({"provider": ScriptedModel(["x"]), "model": "other"}, "names another model"),
    ({}, "needs a model"),
])
def test_provider_and_model_that_do_not_fit_are_refused(kwargs, message):
    with pytest.raises(TypeError, match=message):
        Judge(**kwargs)


def test_the_rubric_stays_the_second_positional_argument():
    with pytest.raises(ConfigurationError, match="rubric must be a Rubric"):
        Judge(ScriptedModel(["{}"]), "not a rubric")  # type: ignore[arg-type]  # the wrong type is the point
    assert Judge(ScriptedModel(["{}"]), DEFAULT_RUBRIC).rubric is DEFAULT_RUBRIC
