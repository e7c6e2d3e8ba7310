"""Evaluator fingerprints: everything behaviour-relevant changes them, nothing else does."""

import hashlib
import json
from dataclasses import replace

import pytest

from tests.judges.replies import rubric_reply
from verdict.judges.ensemble import JudgeEnsemble
from verdict.judges.fingerprint import canonical_json, evaluator_fingerprint
from verdict.judges.judge import DEFAULT_JUDGE_PROMPT, Judge, Verdict
from verdict.judges.pairwise import (
    DEFAULT_PAIRWISE_PROMPT,
    PairwiseJudge,
    PairwiseJudgeEnsemble,
    PairwiseVerdict,
)
from verdict.judges.rubric import DEFAULT_RUBRIC, Dimension
from verdict.models.scripted import ScriptedModel

MODEL = ScriptedModel([rubric_reply()], name="openai/gpt-4o-mini")
BASE = Judge(MODEL).fingerprint
CUSTOM_PROMPT = DEFAULT_JUDGE_PROMPT.replace("You are an impartial evaluator.", "You are a strict evaluator.")
_first = DEFAULT_RUBRIC.dimensions[0]
EDITED = replace(DEFAULT_RUBRIC, dimensions=(replace(_first, description=_first.description + " Strictly."),
                                             *DEFAULT_RUBRIC.dimensions[1:]))


@pytest.mark.parametrize("changed", [
    pytest.param(lambda: Judge(ScriptedModel(["x"], name="anthropic/gpt-4o-mini")), id="provider"),
    pytest.param(lambda: Judge(ScriptedModel(["x"], name="openai/gpt-4o")), id="model"),
    pytest.param(lambda: Judge(MODEL, replace(DEFAULT_RUBRIC, name="other")), id="rubric name"),
    pytest.param(lambda: Judge(MODEL, replace(DEFAULT_RUBRIC, version="2")), id="rubric version"),
    pytest.param(lambda: Judge(MODEL, EDITED), id="dimension description"),
    pytest.param(lambda: Judge(MODEL, replace(DEFAULT_RUBRIC, dimensions=DEFAULT_RUBRIC.dimensions[1:])),
                 id="dimension set"),
    pytest.param(lambda: Judge(MODEL, replace(DEFAULT_RUBRIC, dimensions=(
        Dimension("groundedness", _first.description), *DEFAULT_RUBRIC.dimensions[1:]))), id="requires_context"),
    pytest.param(lambda: Judge(MODEL, prompt=CUSTOM_PROMPT), id="prompt template"),
    pytest.param(lambda: Judge(MODEL, temperature=0.0), id="temperature"),
    pytest.param(lambda: Judge(MODEL, max_tokens=512), id="max tokens"),
    pytest.param(lambda: Judge(MODEL, top_p=0.5), id="other sampling parameter"),
    pytest.param(lambda: Judge(MODEL, skip_context_dependent_when_missing=False), id="context skipping"),
])
def test_behaviour_relevant_changes_change_the_fingerprint(changed):
    assert changed().fingerprint != BASE


@pytest.mark.parametrize("same", [
    pytest.param(lambda: Judge(MODEL), id="another instance"),
    pytest.param(lambda: Judge(ScriptedModel(["other replies"], name="openai/gpt-4o-mini", latency=0.01)),
                 id="another client of the same model"),
    pytest.param(lambda: Judge(MODEL, retries=7), id="retries"),
    pytest.param(lambda: Judge(MODEL, name="nightly"), id="unit name"),
    pytest.param(lambda: Judge(MODEL, cache_salt="run-2"), id="cache salt"),
])
def test_irrelevant_changes_keep_the_fingerprint(same):
    assert same().fingerprint == BASE


def test_concurrency_does_not_change_the_fingerprint_on_judgments():
    judge = Judge(MODEL)
    serial = judge.grade_many([{"answer": "a", "context": "c"}] * 4, max_workers=1)
    parallel = judge.grade_many([{"answer": "a", "context": "c"}] * 4, max_workers=4)
    assert {j.fingerprint for j in serial + parallel} == {BASE}


def test_the_fingerprint_is_sha256_of_canonical_json():
    fingerprint = evaluator_fingerprint(kind="k", models=["openai/m"], rubric=None, prompts={"p": "t"},
                                        params={"temperature": 0.5, "cache_salt": "x"}, contract={"reply": "json"})
    payload = {"fingerprint_version": 1, "kind": "k", "providers": ["openai"], "models": ["openai/m"],
               "rubric": None, "prompts": {"p": "t"}, "params": {"temperature": 0.5}, "contract": {"reply": "json"}}
    expected = hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert fingerprint == expected
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_pairwise_fingerprint_covers_model_prompt_and_params():
    model = ScriptedModel(["[[A]]"], name="openai/gpt-4o-mini")
    base = PairwiseJudge(model).fingerprint
    assert PairwiseJudge(model, retries=0).fingerprint == base
    assert PairwiseJudge(ScriptedModel(["[[A]]"], name="openai/gpt-4o")).fingerprint != base
    assert PairwiseJudge(model, temperature=0.7).fingerprint != base
    assert PairwiseJudge(model, prompt=DEFAULT_PAIRWISE_PROMPT + "Be brief.").fingerprint != base
    assert base != BASE  # a pairwise judge is never the rubric judge on the same model


def test_ensemble_fingerprints_ignore_member_order_but_not_members_or_tie_rule():
    a, b = Judge(MODEL), Judge(MODEL, temperature=0.0)
    assert JudgeEnsemble([a, b]).fingerprint == JudgeEnsemble([b, a]).fingerprint
    assert JudgeEnsemble([a, b]).fingerprint != JudgeEnsemble([a, a]).fingerprint
    assert JudgeEnsemble([a, b]).fingerprint != JudgeEnsemble([a, b], on_tie=Verdict.FAIL).fingerprint
    p = PairwiseJudge(MODEL)
    assert PairwiseJudgeEnsemble([p]).fingerprint != PairwiseJudgeEnsemble([p], on_tie=PairwiseVerdict.A).fingerprint
