"""The seed library's spellings (Haize Labs' `verdict`, the reference its users come with): import paths,
bare model names, `.via(policy_or_name=...)`, one-argument `.propagate`, `MaxPoolUnit()` over categorical
judges answering `choice`. The same snippets run verbatim against a real server in tests/realmodel."""

import importlib

import pytest

from verdict.graph import ConfigurationError, Pipeline, Schema
from verdict.judges import JudgeUnit
from verdict.models.registry import qualified, resolve_model
from verdict.models.scripted import ScriptedModel
from verdict.scale import DiscreteScale


@pytest.mark.parametrize(("module", "names"), [
    ("verdict.common.judge", ["JudgeUnit", "CategoricalJudgeUnit", "PairwiseJudgeUnit"]),
    ("verdict.schema", ["Schema"]),
    ("verdict.prompt", ["Prompt"]),
    ("verdict.transform", ["MaxPoolUnit", "MeanPoolUnit", "MapUnit"]),
    ("verdict.scale", ["DiscreteScale", "BooleanScale", "ContinuousScale"]),
    ("verdict.extract", ["RegexExtractor", "StructuredExtractor", "TokenProbabilityExtractor"]),
])
def test_the_seed_import_paths_exist(module, names):
    imported = importlib.import_module(module)
    assert all(hasattr(imported, name) for name in names)


def test_the_aliases_are_the_real_classes():
    from verdict.common.judge import JudgeUnit as SeedJudgeUnit
    from verdict.graph.schema import Schema as RealSchema
    from verdict.schema import Schema as SeedSchema

    assert SeedJudgeUnit is JudgeUnit and SeedSchema is RealSchema


@pytest.mark.parametrize(("name", "provider"), [
    ("gpt-4o", "openai"), ("gpt-4o-mini", "openai"), ("o1", "openai"), ("o1-mini", "openai"), ("o3-mini", "openai"),
    ("o4-mini", "openai"), ("claude-haiku-4-5", "anthropic"), ("claude-sonnet-4-5-20250929", "anthropic"),
])
def test_bare_model_names_resolve_to_their_provider(name, provider):
    assert qualified(name) == f"{provider}/{name}"
    model = resolve_model(name, base_url="http://127.0.0.1:9/v1", api_key="k")
    assert model.name == f"{provider}/{name}"


@pytest.mark.parametrize("name", ["llama3", "o10-mini", "gpt4", "mistral-large", "claude"])
def test_other_bare_names_are_refused_naming_the_forms(name):
    assert qualified(name) == name
    with pytest.raises(ValueError, match=f"unknown model '{name}'.*bare"):
        resolve_model(name)


def test_the_explicit_form_is_kept_as_it_is():
    assert qualified("openai/gpt-4o") == "openai/gpt-4o"
    assert qualified("openai/claude-like-local-model") == "openai/claude-like-local-model"


def test_a_one_argument_propagate_gets_the_output():
    unit = JudgeUnit(DiscreteScale((1, 5))).via(ScriptedModel(['{"score": 4}'])) \
        .propagate(lambda output: Schema.of(score=output.score / 5))
    assert (Pipeline() >> unit).run({"q": 1}).output.score == 0.8


def test_via_takes_the_seeds_policy_or_name_keyword():
    model = ScriptedModel(['{"score": 2}'], record=True)
    row = (Pipeline() >> JudgeUnit().via(policy_or_name=model, retries=0, temperature=0)).run({"q": 1})
    assert row.output.score == 2 and dict(model.requests[0].params) == {"temperature": 0, "max_tokens": 1024}
    with pytest.raises(ConfigurationError, match="needs the model once"):
        JudgeUnit().via(model, policy_or_name=model)
    with pytest.raises(ConfigurationError, match="needs the model once"):
        (Pipeline() >> JudgeUnit()).via()


def test_max_pool_without_fields_pools_the_seed_categorical_choice():
    from verdict.common.judge import CategoricalJudgeUnit
    from verdict.graph import Layer
    from verdict.transform import MaxPoolUnit

    model = ScriptedModel(['{"choice": "yes"}', '{"choice": "no"}', '{"choice": "yes"}'])
    judge = CategoricalJudgeUnit(categories=DiscreteScale(["yes", "no"])).via(model, retries=0)
    row = (Pipeline() >> Layer([judge], repeat=3) >> MaxPoolUnit()).run({"q": 1}, max_workers=1)
    assert row.output.choice == "no"  # the value latest on the scale
