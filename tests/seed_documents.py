"""The seed documents' code blocks, verbatim: what users of the libraries this one follows come with.

Verdict's seeds are public documents: Haize Labs' `verdict` (the judge-graph DSL: its README, and its docs
pages "Unit", "Quickstart" and "Prompt Templating", seed 002's example) and cognifityai's `verdict_eval`
README (seed 003: the judge, drift and pairwise names). Every Python block of those pages that is code
(not a placeholder such as `provider.messages.create(...)`) is here as written; `run_block` executes one and
returns the value of its last expression. tests/engine/test_seed_documents.py runs them against a scripted
model, tests/realmodel/test_seed.py against llama.cpp.
"""

from __future__ import annotations

import ast
from typing import Any

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

# Haize docs, "Prompt Templating" (seed 002's example): a RubricUnit whose field `rubric` the judge
# enumerates as `previous.rubric`. The page's blocks use `JudgeUnit` as imported on the pages before it.
DOCS_PROMPT_TEMPLATING = '''
from verdict import Unit
from verdict.schema import Schema
from typing import List

class RubricUnit(Unit):
    class ResponseSchema(Schema):
        rubric: List[str]

RubricUnit().prompt("""
    Design an evaluation rubric to evaluate the following support response on politeness.

    Support Response:
    {source.support_response}
""") \\
>> JudgeUnit().prompt("""
    @system
    You are the best LLM judge in the world.

    @user
    Use the following rubric to evaluate the following support response on politeness.

    Rubric:
    {"\\n".join(f"{i+1}. {item}" for i, item in enumerate(previous.rubric))}

    Support Response:
    {source.support_response}
""")
'''

# Haize docs, "Prompt Templating", "Registering a Prompt".
DOCS_REGISTERED_PROMPT = '''
from verdict.prompt import Prompt

class HallucinationDetectionPrompt(Prompt):
    """
        Judge the following response on a hallucination detection task.

        Question:
        {source.question}

        Answer:
        {source.answer}
    """
'''

# verdict_eval README (seed 003), "Pairwise result contract"; `provider`, `model`, `query`, `response_a` and
# `response_b` are the reader's own.
EVAL_PAIRWISE = '''
from verdict_eval import PairwiseJudge, PairwiseStatus

judgment = PairwiseJudge(provider=provider, model=model).compare(
    query=query,
    response_a=response_a,
    response_b=response_b,
)
if judgment.status is not PairwiseStatus.VALID:
    raise RuntimeError("pairwise comparison was not usable")
winner = judgment.verdict
'''

# verdict_eval README (seed 003), its closing import block, and the shorter one of its first version.
EVAL_IMPORTS = '''
from verdict_eval import (
    DEFAULT_RUBRIC,
    CorruptionInjector,
    DriftDetector,
    Judge,
    PairwiseJudge,
    PairwiseStatus,
)
'''
EVAL_IMPORTS_FIRST = '''
from verdict_eval import Judge, DEFAULT_RUBRIC, DriftDetector, CorruptionInjector
'''


def run_block(block: str, namespace: dict[str, Any], name: str) -> Any:
    """Execute a block as written in `namespace`; the value of its last statement if that is an expression."""
    tree = ast.parse(block)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body[-1] = ast.Assign([ast.Name("_last_expression", ast.Store())], last.value)
        ast.fix_missing_locations(tree)
    # dont_inherit: this module's `from __future__ import annotations` must not change the block's classes.
    exec(compile(tree, f"<seed {name}>", "exec", dont_inherit=True), namespace)  # noqa: S102 - the documents' code, verbatim
    return namespace.pop("_last_expression", None)
