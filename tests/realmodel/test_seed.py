"""The seed library's documented snippets (its README and docs, Haize Labs' `verdict`), run as written —
imports, bare model strings, `policy_or_name=`, one-argument `.propagate` — against the local server
standing in for OpenAI (OPENAI_BASE_URL). Only running them uses this engine's API (`run`), since the
seed's runner returns a pandas frame. Asserted: each snippet builds and every unit lands in a defined state.
"""

from __future__ import annotations

import pytest

from verdict.graph.errors import UnitError
from verdict.models import registry
from verdict.models.openai_model import OpenAIModel

# README, "A Simple Example of Hierarchical Reasoning" (its elided prompt filled in from the first snippet).
README_HIERARCHICAL = '''
from verdict import Pipeline
from verdict.common.judge import JudgeUnit
from verdict.scale import BooleanScale, DiscreteScale

pipeline = Pipeline() \\
  >> JudgeUnit(DiscreteScale((1, 5)), explanation=True).prompt("""
    Evaluate the following customer support interaction on politeness.

    {source.conversation}

    Respond with a score between 1 and 5.
    - 1: Extremely impolite, rude, hostile, or disrespectful
    - 5: Extremely polite. Consistently respectful, friendly, and courteous.
  """).via('gpt-4o-mini', retries=3, temperature=0.4) \\
  >> JudgeUnit(BooleanScale()).prompt("""
    Check if the given explanation correctly references the source conversation.

    Conversation: {source.conversation}
    Politeness Score: {previous.score}
    Explanation: {previous.explanation}

    Return "yes" if the explanation correctly references the source, and "no" otherwise.
  """).via('gpt-4o-mini', retries=3, temperature=0.0)
'''

# docs, "Unit".
DOCS_UNIT = '''
from verdict import Pipeline
from verdict.common.judge import JudgeUnit
from verdict.extract import RegexExtractor
from verdict.scale import DiscreteScale
from verdict.schema import Schema

unit = (JudgeUnit(DiscreteScale((1, 5)), name="CXEmpathyJudge")
    .via('gpt-4o', retries=3, temperature=1.4)
    .prompt("""
        Score the following customer support conversation on empathy.

        <conversation>
        {source.conversation}
        </conversation>
    """)
    .extract(RegexExtractor(pattern=RegexExtractor.FIRST_INT))
    .propagate(lambda output: Schema.of(score=output.score / 5)))
pipeline = Pipeline() >> unit
'''

# docs, "Quickstart" (the judge-then-verify protocol, three times, max-pooled).
DOCS_QUICKSTART = '''
from verdict import Block, Layer, Pipeline
from verdict.common.judge import CategoricalJudgeUnit
from verdict.prompt import Prompt
from verdict.scale import DiscreteScale
from verdict.schema import Schema
from verdict.transform import MaxPoolUnit

judge_prompt = """
Determine whether the provided claim is consistent with the corresponding document. Consistency in this context implies that
all information presented in the claim is substantiated by the document. If not, it should be considered inconsistent.
Document: {source.doc}
Claim: {source.claim}
Please assess the claim’s consistency with the document by responding with either "yes" or "no".
Answer:
"""

verify_prompt = """
Check if the given answer correctly reflects whether the claim is consistent with the corresponding document. Consistency in this context implies that
all information presented in the claim is substantiated by the document. If not, it should be considered inconsistent. "yes" means the claim is consistent with the document, and "no" means the claim is not consistent with the document.

Document: {source.doc}
Claim: {source.claim}
Answer: {previous.choice}
Answer Justification: {previous.explanation}

If you think the answer is correct, return the answer as is. If it's incorrect, return the opposite (if answer = "yes", return "no", and if answer = "no", return "yes").
"""

hierarchical_protocol = (
    Block()
    >> CategoricalJudgeUnit(
        name="judge", categories=DiscreteScale(["yes", "no"]), explanation=True
    )
    .prompt(judge_prompt)
    .via(policy_or_name="gpt-4o", retries=3, temperature=0.7)
    >> CategoricalJudgeUnit(name="verify", categories=DiscreteScale(["yes", "no"]))
    .prompt(verify_prompt)
    .via(policy_or_name="gpt-4o", retries=3, temperature=0)
)

pipeline = Pipeline() >> Layer([hierarchical_protocol], repeat=3) >> MaxPoolUnit()
'''

SAMPLES = {
    "readme": {"conversation": "Customer: my order is late.\nAgent: Sorry about that! It ships today."},
    "unit": {"conversation": "Customer: my order is late.\nAgent: Sorry about that! It ships today."},
    "quickstart": {"doc": "Paris is the capital of France.", "claim": "The capital of France is Paris."},
}


class _Capped(OpenAIModel):
    """The client `"gpt-4o"` resolves to, with a cap on the reply length for calls that set none: the seed
    snippets give no max_tokens, and a 135M model at temperature 1.4 would otherwise write until its context
    is full, minutes per call on two cores."""

    def _attempt(self, request, params):
        return super()._attempt(request, {"max_tokens": REPLY_CAP, **params})


REPLY_CAP = 48


@pytest.fixture
def seed_environment(llama_server, monkeypatch):
    """What a seed user has: the OpenAI client configured from the environment (here OPENAI_BASE_URL points at
    llama.cpp, with default options: the client must find out what the server accepts by itself)."""
    monkeypatch.setenv("OPENAI_BASE_URL", llama_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    clients = {f"openai/{name}": _Capped(name, timeout=300.0) for name in ("gpt-4o", "gpt-4o-mini")}
    monkeypatch.setattr(registry, "_instances", dict(clients))  # what the bare names must resolve to
    return clients


@pytest.mark.parametrize(("snippet", "sample"), [(README_HIERARCHICAL, "readme"), (DOCS_UNIT, "unit"),
                                                 (DOCS_QUICKSTART, "quickstart")])
def test_a_seed_snippet_runs_as_written(seed_environment, snippet, sample):
    namespace: dict = {}
    exec(compile(snippet, f"<seed {sample}>", "exec"), namespace)
    pipeline = namespace["pipeline"]
    used = {node.model for node in pipeline.build().nodes if node.kind == "io"}
    assert used and used <= set(seed_environment.values()), "the bare model names did not resolve to OpenAI"
    row = pipeline.run(SAMPLES[sample], max_workers=4)
    outputs = row.outputs
    assert outputs, "the snippet's pipeline has no units"
    for path, output in outputs.items():
        # Every unit either produced its schema or failed on the tiny model's reply (or upstream of one):
        # never because a request was refused or the model string was not understood.
        if isinstance(output, UnitError):
            assert output.kind in ("extraction", "upstream"), f"{path}: {output}"
    if sample == "unit" and row.ok:  # the one-argument propagate turned the 1-5 score into a fraction
        assert 0.2 <= row["CXEmpathyJudge"].score <= 1.0
