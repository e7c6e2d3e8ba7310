"""Unit directives and hooks: names, .via params, .propagate, process/OutputSchema, root InputSchema."""

import pytest

from verdict.graph import ConfigurationError, Pipeline, Schema, Unit, UnitError
from verdict.judges import CategoricalJudgeUnit, JudgeUnit, PairwiseJudgeUnit
from verdict.models.scripted import ScriptedModel
from verdict.scale import DiscreteScale, Scale


def test_default_short_names():
    assert JudgeUnit().name == "judge"
    assert PairwiseJudgeUnit().name == "pairwisejudge"
    assert JudgeUnit(name="strict").name == "strict"


def test_via_params_reach_the_model_request():
    model = ScriptedModel(['{"score": 3}'], record=True)
    (Pipeline() >> JudgeUnit().via(model, retries=1, temperature=1.4, max_tokens=5)).run({"q": 1})
    assert dict(model.requests[0].params) == {"temperature": 1.4, "max_tokens": 5}


def test_propagate_replaces_the_output():
    seen: dict[str, object] = {}

    def add_margin(unit, previous, input, output):
        seen.update(unit=unit.name, input=input.q, score=output.score)
        return Schema.of(score=output.score, passed=output.score >= 3)

    row = (Pipeline() >> JudgeUnit().propagate(add_margin)).via(ScriptedModel(['{"score": 4}'])).run({"q": "Q"})
    assert (row.output.score, row.output.passed) == (4, True)
    assert seen == {"unit": "judge", "input": "Q", "score": 4}


def test_process_maps_response_to_a_different_output_schema():
    class Reply(Schema):
        score: Scale = DiscreteScale((1, 10))

    class Normalised(Schema):
        normalised: float

    class TenPointUnit(Unit):
        ResponseSchema = Reply
        OutputSchema = Normalised

        def process(self, input, response):
            return Normalised(normalised=(response.score - 1) / 9)

    row = (Pipeline() >> TenPointUnit().prompt("{source.q}")).via(ScriptedModel(['{"score": 10}'])).run({"q": 1})
    assert row.output.normalised == 1.0


def test_root_input_schema_validates_the_sample():
    class Question(Schema):
        q: str

    class Asking(JudgeUnit):
        InputSchema = Question

    model = ScriptedModel(['{"score": 2}'])
    rows = (Pipeline() >> Asking().prompt("{input.q}")).via(model).run_from_dataset([{"q": "fine"}, {"x": 1}])
    assert rows[0].output.score == 2
    error = rows[1].output
    assert isinstance(error, UnitError) and error.kind == "unit" and "q: Field required" in error.message


def test_pairwise_and_categorical_judges():
    pairwise = PairwiseJudgeUnit(allow_tie=True)
    model = ScriptedModel(['{"choice": "tie"}'], record=True)
    row = (Pipeline() >> pairwise).via(model).run({"response_a": "Paris", "response_b": "paris"})
    assert row.output.choice == "tie"
    assert "Response A:\nParis\n\nResponse B:\nparis" in model.requests[0].messages[1].content
    categorical = CategoricalJudgeUnit(["billing", "shipping"], explanation=True)
    model = ScriptedModel(['{"explanation": "mentions an invoice", "category": "billing"}'], record=True)
    row = (Pipeline() >> categorical).via(model).run({"text": "where is my invoice"})
    assert row.output.category == "billing"
    assert "a short explanation, then the category (one of billing, shipping" in model.requests[0].messages[1].content
    bad = (Pipeline() >> CategoricalJudgeUnit(["billing", "shipping"])).via(
        ScriptedModel(['{"category": "refund"}'])).run({"text": "t"})
    assert bad.output.kind == "extraction"


def test_unit_without_response_schema_or_prompt_fails_at_build():
    class Bare(Unit):
        pass

    with pytest.raises(ConfigurationError, match="declares no ResponseSchema"):
        (Pipeline() >> Bare().prompt("x")).via(ScriptedModel(["{}"])).build()

    class NoPrompt(Unit):
        ResponseSchema = Schema.of_type(text=str)

    with pytest.raises(ConfigurationError, match="noprompt: no prompt"):
        (Pipeline() >> NoPrompt()).via(ScriptedModel(["{}"])).build()
