"""The seed documents' code blocks (tests/seed_documents.py: Haize Labs' `verdict` README and docs, the
`verdict_eval` README), run as written — imports, bare model strings, `policy_or_name=`, one-argument
`.propagate`, `provider=` — against the local server standing in for OpenAI (OPENAI_BASE_URL). Only running
the DSL's pipelines uses this engine's API (`run`), since the seed's runner returns a pandas frame. Asserted:
each block builds, every unit lands in a defined state, and what a result says is what the replies state.
"""

from __future__ import annotations

import pytest

from tests.seed_documents import (
    DOCS_PROMPT_TEMPLATING,
    DOCS_QUICKSTART,
    DOCS_UNIT,
    EVAL_PAIRWISE,
    README_HIERARCHICAL,
    run_block,
)
from verdict.graph import Pipeline
from verdict.graph.errors import UnitError
from verdict.judges.pairwise import read_marker
from verdict.judges.units import JudgeUnit
from verdict.models import registry
from verdict.models.openai_model import OpenAIModel

SAMPLES = {
    "readme": {"conversation": "Customer: my order is late.\nAgent: Sorry about that! It ships today."},
    "unit": {"conversation": "Customer: my order is late.\nAgent: Sorry about that! It ships today."},
    "quickstart": {"doc": "Paris is the capital of France.", "claim": "The capital of France is Paris."},
}


class _Capped(OpenAIModel):
    """The client `"gpt-4o"` resolves to, with a cap on the reply length for calls that set none: the seed
    snippets give no max_tokens, and a 135M model at temperature 1.4 would otherwise write until its context
    is full, minutes per call on two cores."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent: list = []  # the requests, to check what the model was shown

    def _attempt(self, request, params):
        self.sent.append(request)
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
    run_block(snippet, namespace, sample)
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


def _defined(row) -> None:
    for path, output in row.outputs.items():
        if isinstance(output, UnitError):
            assert output.kind in ("extraction", "upstream"), f"{path}: {output}"


def test_seed_002_prompt_templating_shows_the_rubric_items(seed_environment):
    graph = run_block(DOCS_PROMPT_TEMPLATING, {"JudgeUnit": JudgeUnit}, "prompt templating")
    row = (Pipeline() >> graph).via("gpt-4o-mini").run({"support_response": "Sorry for the wait! It ships today."})
    _defined(row)
    rubric = row["rubric"]
    if not isinstance(rubric, UnitError):  # the judge was shown one numbered line per rubric item
        judge_prompts = [m.content for r in seed_environment["openai/gpt-4o-mini"].sent for m in r.messages
                         if m.role == "user" and "Use the following rubric" in m.content]
        lines = "\n".join(f"{i + 1}. {item}" for i, item in enumerate(rubric.rubric))
        assert judge_prompts and all(lines in prompt for prompt in judge_prompts)


def test_seed_003_pairwise_gives_what_the_rounds_state_or_refuses(seed_environment):
    provider = seed_environment["openai/gpt-4o-mini"]
    namespace = {"provider": provider, "model": provider.name, "query": "What is the capital of France?",
                 "response_a": "Paris is the capital of France.", "response_b": "I do not know."}
    try:
        run_block(EVAL_PAIRWISE, namespace, "verdict_eval pairwise")
    except RuntimeError as error:  # the block's own refusal of an unusable comparison
        assert str(error) == "pairwise comparison was not usable"
        return
    assert namespace["winner"] is not None
    # A usable winner rests on replies that state a marker (re-read here by the documented grammar).
    assert all(read_marker(r.reply) == r.marker for r in namespace["judgment"].rounds)
