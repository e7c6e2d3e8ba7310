"""The judges against llama.cpp through the real `openai` client: every request is accepted (HTTP 200,
no parameter refused), structured replies are constrained where the server can, logprobs are read from
the server's own shape, and every judgment lands in a defined state. The tiny model's judgement is never
asserted: only that what it said was read, validated and classified as the protocol says."""

from __future__ import annotations

import json
import math
from typing import Any

from verdict.extract import TokenProbabilityExtractor, json_schema
from verdict.graph.pipeline import Pipeline
from verdict.judges.judge import DimensionReply, Judge, JudgmentStatus
from verdict.judges.pairwise import PairwiseJudge, PairwiseStatus
from verdict.judges.rubric import DEFAULT_RUBRIC, Rubric
from verdict.judges.units import JudgeUnit
from verdict.models.base import Message, ModelRequest
from verdict.scale import DiscreteScale

ITEM = {"answer": "Paris is the capital of France.", "query": "What is the capital of France?",
        "context": "Paris is the capital and largest city of France."}
TWO = Rubric("realmodel", "1", tuple(d for d in DEFAULT_RUBRIC.dimensions if d.name in ("relevance", "safety")))


def _protocol_failure(error: str | None) -> bool:
    """A failure of the request itself (refused, unreachable), as opposed to a reply the judge rejected."""
    return error is not None and "extraction: " not in error


def test_the_default_judge_is_accepted_and_lands_in_a_defined_state(recorded):
    client = recorded()
    # The default prompt, rubric and schema; the budget capped to keep the tier short (a cut reply is ERROR).
    judgment = Judge(client.model, retries=0, max_tokens=256, seed=0).grade(**ITEM)
    assert len(client.posts()) == 1 and set(client.statuses()) == {200}, client.exchanges
    assert judgment.status in (JudgmentStatus.VALID, JudgmentStatus.ERROR)
    assert not _protocol_failure(judgment.error), judgment.error
    assert judgment.usage.output_tokens > 0 and judgment.attempts == 1
    if judgment.status is JudgmentStatus.VALID:
        assert set(judgment.verdicts) == set(DEFAULT_RUBRIC.dimension_names)


def test_the_per_dimension_judge_makes_one_accepted_call_per_dimension_until_one_fails(recorded):
    client = recorded()
    judge = Judge(client.model, TWO, per_dimension=True, retries=0, seed=0)
    assert judge.params["max_tokens"] < 256  # a budget sized to one verdict-first reply, not 2048
    judgment = judge.grade(**ITEM)
    assert set(client.statuses()) == {200}, client.exchanges
    asked = client.posts()
    assert judgment.status in (JudgmentStatus.VALID, JudgmentStatus.ERROR)
    assert not _protocol_failure(judgment.error), judgment.error
    if judgment.status is JudgmentStatus.ERROR:  # the dimension that failed is named, and was the last one asked
        failed = (judgment.error or "").split(":")[0]
        assert failed in TWO.dimension_names
        assert len(asked) == list(TWO.dimension_names).index(failed) + 1, client.exchanges
    else:
        assert set(judgment.verdicts) == set(TWO.dimension_names) and len(asked) == 2, client.exchanges


def test_structured_output_is_honoured_by_the_server(recorded):
    """A one-dimension reply asked with its JSON schema comes back as that JSON (constrained decoding on
    llama.cpp) unless the budget cut it off."""
    client = recorded()
    request = ModelRequest((Message("system", "Grade the answer. Reply in JSON."),
                            Message("user", "Answer: Paris is the capital of France.")),
                           {"max_tokens": 96, "temperature": 0, "seed": 0}, json_schema(DimensionReply))
    response = client.model.complete(request)
    assert set(client.statuses()) == {200}
    if not response.truncated:
        DimensionReply.model_validate(json.loads(response.text))


def test_pairwise_rounds_are_accepted_and_each_is_valid_or_invalid(recorded):
    client = recorded()
    judgment = PairwiseJudge(client.model, retries=0, max_tokens=64, seed=0).compare(
        "What is the capital of France?", "Paris.", "It is Lyon, I think.")
    assert set(client.statuses()) == {200} and len(client.posts()) == 2, client.exchanges
    for round_ in judgment.rounds:
        assert round_.status in (PairwiseStatus.VALID, PairwiseStatus.INVALID), round_.error
        assert round_.usage.output_tokens > 0
    assert judgment.status in (PairwiseStatus.VALID, PairwiseStatus.INVALID)
    assert (judgment.verdict is None) == (judgment.status is PairwiseStatus.INVALID)


def test_token_probabilities_come_from_the_servers_logprobs(recorded):
    client = recorded()
    response = client.model.complete(ModelRequest(
        (Message("user", "Rate from 1 to 5 how polite this is: 'Thank you so much!'. Answer with one digit."),),
        {"max_tokens": 1, "temperature": 0}, top_logprobs=5))
    assert set(client.statuses()) == {200}
    assert response.logprobs, "llama.cpp returned no logprobs for logprobs=True"
    first = response.logprobs[0]
    assert first.top and all(math.isfinite(lp) and lp <= 0 for _, lp in first.top)

    unit = JudgeUnit(DiscreteScale((1, 5))).prompt(
        "Rate from 1 to 5 how polite this is: {source.text}\nAnswer with one digit.").extract(
        TokenProbabilityExtractor()).via(client.model, retries=0, max_tokens=1, temperature=0)
    row = (Pipeline() >> unit).run({"text": "Thank you so much!"})
    assert set(client.statuses()) == {200}
    result: Any = row[unit.name]  # the extractor's output schema, or a UnitError
    if row.ok:  # a score only with its distribution over the scale
        assert result.score in (1, 2, 3, 4, 5)
        assert math.isclose(sum(result.score_distribution.values()), 1.0, rel_tol=1e-6)
    else:  # the reply did not start with a scale value: an extraction error, never a made-up score
        assert result.kind == "extraction", result


def test_a_timed_out_dimension_sends_the_clients_attempts_and_ends_the_judgment(recorded):
    """A timeout no reply can meet on a serial server: the client's two attempts are the only requests (the
    engine does not retry a ModelError), the error says so, and the other dimension is never asked."""
    from verdict.models.retry import RetryPolicy

    client = recorded(timeout=0.05, max_concurrency=1, retry=RetryPolicy(max_attempts=2, base_delay=0.01))
    judgment = Judge(client.model, TWO, per_dimension=True, retries=2, seed=0).grade(**ITEM)
    assert judgment.status is JudgmentStatus.ERROR
    assert (judgment.error or "").startswith("relevance: model: timeout: "), judgment.error
    assert "(2 requests sent)" in (judgment.error or "") and judgment.usage.requests == 2
    assert judgment.reply is None  # no reply came back to keep


def test_a_reply_over_its_budget_is_an_error_that_keeps_the_reply(recorded):
    client = recorded()
    judgment = Judge(client.model, TWO, per_dimension=True, retries=1, max_tokens=4, seed=0).grade(**ITEM)
    assert set(client.statuses()) == {200}, client.exchanges
    assert judgment.status is JudgmentStatus.ERROR
    assert "truncated (finish_reason=length)" in (judgment.error or ""), judgment.error
    assert judgment.usage.requests == 2 and judgment.usage.output_tokens <= 8  # the retry, then no other dimension
    assert judgment.reply  # what the model said before the budget cut it, kept as evidence
