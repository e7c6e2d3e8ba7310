"""Every code block of the seed documents (tests/seed_documents.py) runs verbatim against a scripted model and
means what it says: the bare model names resolve, the prompts the model sees are the ones the page describes,
and each result is what the scripted replies state. The same blocks run against llama.cpp in
tests/realmodel/test_seed.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.seed_documents import (
    DOCS_PROMPT_TEMPLATING,
    DOCS_QUICKSTART,
    DOCS_REGISTERED_PROMPT,
    DOCS_UNIT,
    EVAL_IMPORTS,
    EVAL_IMPORTS_FIRST,
    EVAL_PAIRWISE,
    README_HIERARCHICAL,
    run_block,
)
from verdict.graph import Pipeline
from verdict.judges import PairwiseVerdict
from verdict.judges.units import JudgeUnit
from verdict.models import registry
from verdict.models.base import ModelRequest
from verdict.models.scripted import ScriptedModel

RUBRIC = ["Greets the customer", "Apologises for the delay"]


def _value(name: str, spec: dict[str, Any]) -> Any:
    """A valid value for one property of a reply schema: the best of an enum, a rubric list, a sentence."""
    if "enum" in spec:
        return "yes" if "yes" in spec["enum"] else 4 if 4 in spec["enum"] else spec["enum"][0]
    if spec.get("type") == "array":
        return RUBRIC
    if spec.get("type") == "boolean":
        return "yes"  # as the README's prompt asks; read as true
    return f"The {name} is clear."


def answer(request: ModelRequest) -> str:
    """A scripted judge that answers every unit with a valid JSON reply of the unit's schema (a free-text
    request, for a regex, with a sentence stating one score)."""
    schema = request.json_schema
    if schema is None:
        return "On a scale of 1 to 5, I give it 4."
    return json.dumps({name: _value(name, spec) for name, spec in schema.get("properties", {}).items()})


@pytest.fixture
def scripted_openai(monkeypatch) -> ScriptedModel:
    """The bare names the blocks use (`gpt-4o`, `gpt-4o-mini`) resolve to one recording scripted model."""
    model = ScriptedModel(answer, record=True)
    monkeypatch.setattr(registry, "_instances", {"openai/gpt-4o": model, "openai/gpt-4o-mini": model})
    return model


def test_readme_hierarchical_reasoning(scripted_openai):
    namespace: dict[str, Any] = {}
    run_block(README_HIERARCHICAL, namespace, "readme")
    row = namespace["pipeline"].run({"conversation": "Customer: late order.\nAgent: Sorry! It ships today."})
    assert row.ok and row.output.score is True  # BooleanScale: the scripted "yes"
    verify = scripted_openai.requests[-1].messages[-1].content
    assert "Politeness Score: 4" in verify and "Explanation: The explanation is clear." in verify
    assert [r.params["temperature"] for r in scripted_openai.requests] == [0.4, 0.0]


def test_docs_unit_propagates_the_score_as_a_fraction(scripted_openai):
    namespace: dict[str, Any] = {}
    run_block(DOCS_UNIT, namespace, "unit")
    row = namespace["pipeline"].run({"conversation": "Customer: hi"})
    assert row.ok and row["CXEmpathyJudge"].score == 0.8  # the reply's 4 of 5


def test_docs_quickstart_max_pools_three_verified_judges(scripted_openai):
    namespace: dict[str, Any] = {}
    run_block(DOCS_QUICKSTART, namespace, "quickstart")
    row = namespace["pipeline"].run({"doc": "Paris is the capital of France.", "claim": "Paris is France's capital."})
    assert row.ok and row.output.choice == "yes"
    assert len(scripted_openai.requests) == 6  # judge then verify, three times


def test_docs_prompt_templating_shows_the_judge_the_rubric_items(scripted_openai):
    """Seed 002's example: `previous.rubric` is the RubricUnit's field, so the judge sees one line per item."""
    graph = run_block(DOCS_PROMPT_TEMPLATING, {"JudgeUnit": JudgeUnit}, "prompt templating")
    row = (Pipeline() >> graph).via("gpt-4o-mini").run({"support_response": "Sorry for the wait!"})
    assert row.ok and row.output.score == 4
    system, user = scripted_openai.requests[-1].messages
    assert system.content == "You are the best LLM judge in the world."
    assert "Rubric:\n1. Greets the customer\n2. Apologises for the delay\n" in user.content


def test_docs_registered_prompt(scripted_openai):
    namespace: dict[str, Any] = {}
    run_block(DOCS_REGISTERED_PROMPT, namespace, "registered prompt")
    unit = JudgeUnit().prompt(namespace["HallucinationDetectionPrompt"]).via("gpt-4o")
    assert (Pipeline() >> unit).run({"question": "Capital of France?", "answer": "Paris"}).ok
    assert scripted_openai.requests[-1].messages[-1].content == (
        "Judge the following response on a hallucination detection task.\n\nQuestion:\nCapital of France?\n\n"
        "Answer:\nParis")


def test_verdict_eval_pairwise_contract():
    """Seed 003: `provider=` a Model client and `model=` its name; the winner is what both rounds state."""
    def prefers_paris(request: ModelRequest) -> str:
        shown_first = request.messages[-1].content.split("<response_a>\n", 1)[1]
        return "Paris is named. [[A]]" if shown_first.startswith("Paris") else "Paris is named. [[B]]"

    provider = ScriptedModel(prefers_paris)
    namespace = {"provider": provider, "model": provider.name, "query": "Capital of France?",
                 "response_a": "Paris.", "response_b": "Lyon."}
    run_block(EVAL_PAIRWISE, namespace, "verdict_eval pairwise")
    assert namespace["winner"] is PairwiseVerdict.A


@pytest.mark.parametrize("block", [EVAL_IMPORTS, EVAL_IMPORTS_FIRST])
def test_verdict_eval_imports_are_the_real_names(block):
    namespace: dict[str, Any] = {}
    run_block(block, namespace, "verdict_eval imports")
    import verdict

    for name in ("Judge", "DEFAULT_RUBRIC", "DriftDetector", "CorruptionInjector"):
        assert namespace[name] is getattr(verdict, name)
