"""The engine through the real `openai` client against the local fake OpenAI server (tests/fakes)."""

import json
import math

import pytest

from tests.fakes import Fail, Reply, TokenLogprob
from verdict.graph import Layer, Pipeline
from verdict.judges import JudgeUnit
from verdict.models.openai_model import OpenAIModel
from verdict.transform import MeanPoolUnit


@pytest.fixture
def model(fake_openai):
    return OpenAIModel("gpt-4o-mini", base_url=fake_openai.base_url, api_key="test-key", rate_limits=None)


def score_reply(request):
    """Score 1..5 from the sample's answer length, with a scripted distribution on the first token."""
    prompt = request.body["messages"][-1]["content"]
    score = min(5, len(prompt.split("answer: ")[1].split("\n")[0]))
    top = ((str(score), math.log(0.7)), (str(max(1, score - 1)), math.log(0.2)), ("The", math.log(0.1)))
    return Reply(str(score), logprobs=[TokenLogprob(str(score), math.log(0.7), top)])


def test_layer_and_pool_through_the_openai_client(fake_openai, model):
    fake_openai.handler = score_reply
    samples = [{"answer": "x" * n} for n in (1, 3, 5)]
    rows = (Pipeline() >> Layer(JudgeUnit(), 3) >> MeanPoolUnit("score")).via(model).run_from_dataset(samples)
    assert [r.output.score for r in rows] == [1.0, 3.0, 5.0]
    # default extractor on a logprobs-capable model: token probabilities over the scale, no JSON mode
    body = fake_openai.requests_to("/v1/chat/completions")[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and "response_format" not in body
    dist = rows[1]["layer.judge[0]"].score_distribution
    assert dist == pytest.approx({3: 0.7 / 0.9, 2: 0.2 / 0.9})
    assert fake_openai.request_count == 9
    assert rows.usage.input_tokens > 0 and rows.usage.output_tokens == 9


def test_repeated_members_stay_independent_samples_when_rerun_from_the_cache(fake_openai, tmp_path):
    replies = iter(["1", "3", "5"])

    def reply(request):
        score = next(replies)
        return Reply(score, logprobs=[TokenLogprob(score, 0.0, ((score, 0.0),))])

    fake_openai.handler = reply

    def run():
        cached = OpenAIModel("gpt-4o-mini", base_url=fake_openai.base_url, api_key="k", rate_limits=None,
                             cache=tmp_path)
        pipeline = (Pipeline() >> Layer(JudgeUnit(), 3)).via(cached)
        row = pipeline.run({"answer": "a"})
        return sorted(row[f"layer.judge[{i}]"].score for i in range(3))

    assert run() == [1, 3, 5]
    assert run() == [1, 3, 5] and fake_openai.request_count == 3  # the rerun paid nothing, kept all three
    assert all("cache_salt" not in r.body for r in fake_openai.requests_to("/v1/chat/completions"))


def test_structured_output_uses_json_schema_mode(fake_openai, model):
    fake_openai.default = Reply(json.dumps({"explanation": "short and right", "score": 4}))
    row = (Pipeline() >> JudgeUnit(explanation=True)).via(model).run({"answer": "42"})
    assert (row.output.score, row.output.explanation) == (4, "short and right")
    response_format = fake_openai.last_request.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"]["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]


def test_provider_error_becomes_an_error_row(fake_openai, model):
    fake_openai.enqueue(Fail(400, "context length exceeded"))
    fake_openai.default = Reply(json.dumps({"explanation": "ok", "score": 2}))
    rows = (Pipeline() >> JudgeUnit(explanation=True)).via(model, retries=0).run_from_dataset(
        [{"answer": "a"}, {"answer": "b"}], max_workers=1)
    assert rows[0].error.startswith("judge: model: bad_request") and rows[1].output.score == 2


def test_a_timed_out_unit_sends_only_the_clients_attempts(fake_openai):
    from verdict.graph import UnitError
    from verdict.models.retry import RetryPolicy

    fake_openai.handler = lambda request: Reply("3", latency=0.6)
    slow = OpenAIModel("gpt-4o-mini", base_url=fake_openai.base_url, api_key="k", rate_limits=None, timeout=0.2,
                       retry=RetryPolicy(max_attempts=2, base_delay=0))
    row = (Pipeline() >> JudgeUnit()).via(slow, retries=3).run({"answer": "a"})
    assert isinstance(row.output, UnitError) and row.output.kind == "model" and row.output.attempts == 1
    assert "timeout" in row.output.message and "(2 requests sent)" in row.output.message
    assert fake_openai.request_count == 2  # the engine's retries=3 is for replies it cannot use, not for this


def test_every_unit_sends_an_output_budget_by_default(fake_openai, model):
    from verdict.extract import StructuredExtractor
    from verdict.graph.build import ANSWER_TOKEN_BUDGET, REPLY_BUDGET

    fake_openai.handler = score_reply
    (Pipeline() >> JudgeUnit()).via(model).run({"answer": "abc"})  # token probabilities: the answer token
    assert fake_openai.last_request.body["max_tokens"] == ANSWER_TOKEN_BUDGET
    fake_openai.handler = lambda request: Reply('{"score": 3}')
    (Pipeline() >> JudgeUnit().extract(StructuredExtractor())).via(model).run({"answer": "abc"})
    assert fake_openai.last_request.body["max_tokens"] == REPLY_BUDGET
    (Pipeline() >> JudgeUnit()).via(model, max_tokens=3).run({"answer": "abc"})  # the user's own wins
    assert fake_openai.last_request.body["max_tokens"] == 3
