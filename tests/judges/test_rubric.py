"""Rubrics: the default rubric, YAML loading, and precise errors for bad definitions."""

import pytest

from verdict.judges.rubric import DEFAULT_RUBRIC, Dimension, Rubric, RubricError, load_rubric


def test_default_rubric_has_the_five_binary_dimensions():
    assert DEFAULT_RUBRIC.dimension_names == (
        "groundedness", "relevance", "completeness", "safety", "instruction_following")
    assert [d.name for d in DEFAULT_RUBRIC.dimensions if d.requires_context] == ["groundedness"]
    assert DEFAULT_RUBRIC.version == "1"


def test_rubric_loads_from_yaml(tmp_path):
    path = tmp_path / "support.yaml"
    path.write_text("""
name: support-quality
version: 2
dimensions:
  - name: groundedness
    description: Claims are supported by the context.
    requires_context: true
  - name: politeness
    description: The answer is courteous.
""")
    rubric = load_rubric(path)
    assert rubric == Rubric("support-quality", "2", (
        Dimension("groundedness", "Claims are supported by the context.", requires_context=True),
        Dimension("politeness", "The answer is courteous.")))


@pytest.mark.parametrize(("text", "message"), [
    ("name: r\nversion: 1\n", "missing 'dimensions'"),
    ("name: r\nversion: 1\ndimensions: []\n", "has no dimensions"),
    ("name: r\nversion: 1\ndimensions:\n  - name: Bad Name\n    description: x\n",
     "dimensions[0]: dimension name 'Bad Name' is not valid"),
    ("name: r\nversion: 1\ndimensions:\n  - name: a\n    description: x\n  - name: a\n    description: y\n",
     "repeats dimension(s) ['a']"),
    ("name: r\nversion: 1\ndimensions:\n  - name: a\n", "dimensions[0]: needs 'name' and 'description'"),
    ("name: r\nversion: 1\ndimensions:\n  - name: a\n    description: x\n    weight: 2\n",
     "dimensions[0]: unknown key(s) ['weight']"),
    ("name: r\nversion: ''\ndimensions:\n  - name: a\n    description: x\n", "needs a non-empty version"),
    ("name: r\nversion: 1\ndimensions:\n  - name: a\n    description: x\n    requires_context: maybe\n",
     "requires_context must be true or false"),
    ("- just\n- a list\n", "expected a mapping"),
    ("name: [unclosed\n", "not valid YAML at line"),
])
def test_bad_yaml_rubrics_name_file_and_field(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(RubricError) as caught:
        load_rubric(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_missing_rubric_file_is_a_rubric_error(tmp_path):
    with pytest.raises(RubricError, match="cannot read the rubric"):
        load_rubric(tmp_path / "absent.yaml")


def test_dimension_lookup_names_the_known_dimensions():
    assert DEFAULT_RUBRIC.dimension("safety").name == "safety"
    with pytest.raises(KeyError, match="has: groundedness, relevance"):
        DEFAULT_RUBRIC.dimension("tone")


def test_importing_the_judges_stays_light():
    from tests.imports import loaded_after

    code = ("import verdict.judges.judge, verdict.judges.ensemble, verdict.judges.pairwise, "
            "verdict.judges.ranking, verdict.judges.bias")
    assert loaded_after(code, ("numpy", "scipy", "duckdb", "yaml", "openai", "anthropic")) == []


def test_the_single_call_rubric_schema_is_closed():
    # A grammar-constrained model given an open schema added a `title` key and lost the reply (issue 26).
    from verdict.extract import json_schema
    from verdict.judges.judge import RubricUnit
    from verdict.models.openai_model import strict_compatible

    unit = RubricUnit(DEFAULT_RUBRIC, DEFAULT_RUBRIC.dimensions)
    schema = json_schema(unit.ResponseSchema)
    assert schema["additionalProperties"] is False
    objects = [d for d in schema["$defs"].values() if d.get("type") == "object"]
    assert objects and all(d.get("additionalProperties") is False for d in objects)
    assert strict_compatible(schema)
