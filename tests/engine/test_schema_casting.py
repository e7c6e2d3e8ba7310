"""Schema.of, scale-typed fields, and name-casting between units (checked when the pipeline is built)."""

from typing import Annotated

import pytest
from pydantic import Field, ValidationError

from verdict.graph import ConfigurationError, Pipeline, Schema, Unit
from verdict.models.scripted import ScriptedModel
from verdict.scale import ContinuousScale, DiscreteScale, Scale


class Scored(Schema):
    explanation: str
    score: Scale = DiscreteScale((1, 5))


class Rated(Schema):
    rating: Scale = DiscreteScale((1, 5))


def _unit(response: type[Schema], input_schema: type[Schema] | None = None, prompt: str = "{source.q}",
          name: str | None = None) -> Unit:
    cls = type(f"{response.__name__}Unit", (Unit,),
               {"ResponseSchema": response, "InputSchema": input_schema})
    return cls(name=name).prompt(prompt)


def test_schema_of_infers_fields_and_keeps_values():
    s = Schema.of(score=3, explanation="fine")
    assert s.score == 3 and s.explanation == "fine"
    assert type(s).model_fields["score"].annotation is int
    # ad-hoc classes are cached: the same field types give the same class
    assert type(Schema.of(score=1, explanation="x")) is type(s)


def test_scale_field_is_required_and_validated():
    assert Scored(explanation="e", score=5).score == 5  # type: ignore[comparison-overlap]  # a Scale field holds the validated value
    with pytest.raises(ValidationError):
        Scored(explanation="e", score=6)
    with pytest.raises(ValidationError):
        Scored(explanation="e")  # the scale is the type, not a default


def test_continuous_scale_field_enforces_range():
    class Prob(Schema):
        p: Scale = ContinuousScale(0, 1)

    assert Prob(p=0.25).p == 0.25  # type: ignore[comparison-overlap]  # a Scale field holds the validated value
    with pytest.raises(ValidationError):
        Prob(p=1.5)


def test_cast_copies_first_compatible_field_and_keeps_the_rest():
    first = _unit(Scored)
    second = _unit(Rated, input_schema=Rated, prompt="{input.rating} {input.score} {input.explanation}")
    model = ScriptedModel(['{"explanation": "ok", "score": 4}', '{"rating": 2}'], record=True)
    row = (Pipeline() >> first >> second).via(model).run({"q": "x"})
    assert row.ok, row.error
    # the second prompt saw rating (cast from score) next to the untouched source fields
    assert model.requests[1].messages[0].content == "4 4 ok"


def test_cast_fills_defaults():
    class WithDefault(Schema):
        rating: Scale = DiscreteScale((1, 5))
        style: str = "terse"

    unit = _unit(Rated, input_schema=WithDefault, prompt="{input.rating}/{input.style}")
    model = ScriptedModel(['{"explanation": "e", "score": 2}', '{"rating": 1}'], record=True)
    row = (Pipeline() >> _unit(Scored) >> unit).via(model).run({"q": "x"})
    assert row.ok, row.error
    assert model.requests[1].messages[0].content == "2/terse"


def test_incompatible_constraints_fail_at_build_naming_both_schemas():
    class Tenths(Schema):
        rating: Annotated[int, Field(ge=0, le=10)]

    pipeline = (Pipeline() >> _unit(Scored) >> _unit(Rated, input_schema=Tenths)).via(ScriptedModel(["{}"]))
    with pytest.raises(ConfigurationError) as err:
        pipeline.build()
    message = str(err.value)
    assert "Scored{explanation: str, score:" in message and "Tenths{rating: int}" in message
    assert "no field compatible with 'rating'" in message


def test_same_name_with_other_type_is_rejected():
    class TextScore(Schema):
        score: str

    pipeline = (Pipeline() >> _unit(Scored) >> _unit(Rated, input_schema=TextScore)).via(ScriptedModel(["{}"]))
    with pytest.raises(ConfigurationError, match="field 'score' has a different type"):
        pipeline.build()


def test_casting_error_is_raised_before_any_model_call():
    model = ScriptedModel(["{}"])

    class Needs(Schema):
        verdict: bool

    pipeline = (Pipeline() >> _unit(Scored) >> _unit(Rated, input_schema=Needs)).via(model)
    with pytest.raises(ConfigurationError):
        pipeline.run_from_dataset([{"q": "x"}] * 3)
    assert model.calls == 0


def test_cast_requires_the_same_type_and_the_same_constraints():
    from verdict.graph.casting import plan_cast

    class Source(Schema):
        explanation: str
        label: Annotated[str, Field(pattern="^[AB]$")]
        wide: Annotated[int, Field(ge=0, le=10)]
        narrow: Annotated[int, Field(ge=1, le=5)]
        narrow_too: Annotated[int, Field(ge=1, le=5)]

    class Choice(Schema):
        choice: Annotated[str, Field(pattern="^[AB]$")]  # not `explanation`: a plain str lacks the pattern

    class Rating(Schema):
        rating: Annotated[int, Field(ge=1, le=5)]  # not `wide` (other bounds); the first of two matches

    class Percent(Schema):
        percent: Annotated[int, Field(ge=0, le=100)]

    class Verdict(Schema):
        verdict: Annotated[str, Field(pattern="^[ABC]$")]

    fields = Source.model_fields
    assert plan_cast(fields, "Source", Choice).renames == (("choice", "label"),)
    assert plan_cast(fields, "Source", Rating).renames == (("rating", "narrow"),)
    with pytest.raises(ConfigurationError, match="no field compatible with 'percent'"):
        plan_cast(fields, "Source", Percent)
    with pytest.raises(ConfigurationError, match="no field compatible with 'verdict'"):
        plan_cast(fields, "Source", Verdict)
    cast = plan_cast(fields, "Source", Rating).apply(
        {"explanation": "e", "label": "A", "wide": 9, "narrow": 2, "narrow_too": 3})
    assert isinstance(cast, Rating)
    assert (cast.rating, cast.narrow, cast.wide, cast.explanation) == (2, 2, 9, "e")  # append-only
