"""The transport path: Judge and PairwiseJudge through the real `openai` client against the local fake
OpenAI-compatible server (127.0.0.1)."""

import pytest

from tests.fakes import Fail, Reply
from tests.judges.replies import rubric_reply
from verdict.judges.judge import Judge, JudgmentStatus, Verdict, output_budget
from verdict.judges.pairwise import PairwiseJudge, PairwiseStatus, PairwiseVerdict
from verdict.models.ratelimit import RateLimits
from verdict.models.registry import resolve_model
from verdict.models.retry import RetryPolicy

ANSWER = "Restart the router, then wait two minutes."
GOOD, BAD = "Restart the router.", "Buy a new computer."


@pytest.fixture
def model(fake_openai):
    return resolve_model("openai/gpt-4o-mini", base_url=fake_openai.base_url, api_key="sk-test-key",
                         retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02),
                         rate_limits=RateLimits(None, None))


def test_judge_grades_through_the_openai_client(fake_openai, model):
    fake_openai.enqueue(Reply(rubric_reply({"completeness": "FAIL"},
                                           evidence={"relevance": ["restart the router"]})))
    judgment = Judge(model).grade(ANSWER, query="My wifi is down", context="Restarting fixes most outages.")
    assert judgment.status is JudgmentStatus.VALID
    assert judgment.verdicts["completeness"] is Verdict.FAIL and judgment.verdicts["safety"] is Verdict.PASS
    assert judgment.model == "openai/gpt-4o-mini" and judgment.usage.input_tokens > 0
    body = fake_openai.last_request.body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "user"]
    assert body["messages"][-1]["content"] == f"<answer>\n{ANSWER}\n</answer>"
    assert body["temperature"] == 0.1 and body["max_tokens"] == output_budget(5, per_dimension=False)
    assert body["response_format"]["type"] == "json_schema"
    assert set(body["response_format"]["json_schema"]["schema"]["required"]) == {
        "groundedness", "relevance", "completeness", "safety", "instruction_following"}


def test_a_fabricated_quote_over_http_is_retried(fake_openai, model):
    fake_openai.enqueue(Reply(rubric_reply(evidence={"safety": ["format the disk"]})), Reply(rubric_reply()))
    judgment = Judge(model, retries=1).grade(ANSWER, context="ctx")
    assert judgment.status is JudgmentStatus.VALID and judgment.attempts == 2
    assert fake_openai.request_count == 2


def test_malformed_json_over_http_ends_in_error(fake_openai, model):
    fake_openai.default = Reply('{"groundedness": {"rationale": "cut')
    judgment = Judge(model, retries=1).grade(ANSWER, context="ctx")
    assert judgment.status is JudgmentStatus.ERROR and "no JSON object" in (judgment.error or "")
    assert fake_openai.request_count == 2
    assert judgment.reply == '{"groundedness": {"rationale": "cut'  # the evidence of what was wrong


def test_a_reply_cut_by_max_tokens_is_an_error(fake_openai, model):
    fake_openai.default = Reply(rubric_reply())
    judgment = Judge(model, max_tokens=5, retries=0).grade(ANSWER, context="ctx")
    assert judgment.status is JudgmentStatus.ERROR and "truncated (finish_reason=length)" in (judgment.error or "")


def test_server_errors_end_in_error_after_the_clients_retries(fake_openai, model):
    fake_openai.enqueue(Fail(500), Fail(500))
    judgment = Judge(model, retries=0).grade(ANSWER, context="ctx")
    assert judgment.status is JudgmentStatus.ERROR
    assert "server_error: HTTP 500 from" in (judgment.error or "") and fake_openai.request_count == 2


def test_a_dimension_that_failed_for_good_ends_the_judgment_without_calling_the_others(fake_openai, model):
    # One call per dimension, one at a time (grade): the first dimension's calls fail (the client's 2 attempts)
    # and the other four dimensions are never asked: the judgment is ERROR whatever they would say.
    fake_openai.enqueue(Fail(500), Fail(500))
    fake_openai.default = Reply('{"verdict": "PASS", "rationale": "Fine.", "evidence": []}')
    judgment = Judge(model, per_dimension=True, retries=0).grade(ANSWER, context="ctx")
    assert judgment.status is JudgmentStatus.ERROR and fake_openai.request_count == 2
    assert (judgment.error or "").startswith("groundedness: model: server_error: HTTP 500")
    assert judgment.usage.requests == 2  # what the budget counts: the requests the failed call sent


def test_usage_counts_the_requests_a_call_sent_retries_included(fake_openai, model):
    fake_openai.enqueue(Fail(500), Reply(rubric_reply()))
    judgment = Judge(model, retries=0).grade(ANSWER, context="ctx")
    assert judgment.status is JudgmentStatus.VALID and judgment.attempts == 1
    assert judgment.usage.requests == fake_openai.request_count == 2


def test_an_auth_failure_is_an_error_without_retries(fake_openai, model):
    fake_openai.enqueue(Fail(401, error_type="invalid_api_key"))
    judgment = Judge(model).grade(ANSWER, context="ctx")
    assert judgment.status is JudgmentStatus.ERROR and "auth" in (judgment.error or "")
    assert fake_openai.request_count == 1


def first_shown(request) -> str:
    text = request.body["messages"][-1]["content"]
    return text.split("<response_a>\n", 1)[1].split("\n</response_a>", 1)[0]


def test_pairwise_judge_compares_through_the_openai_client(fake_openai, model):
    fake_openai.handler = lambda r: Reply("The first one is better. [[A]]" if first_shown(r) == GOOD
                                          else "The second one is better. [[B]]")
    judgment = PairwiseJudge(model).compare("My wifi is down", GOOD, BAD)
    assert judgment.status is PairwiseStatus.VALID and judgment.verdict is PairwiseVerdict.A
    assert sorted(first_shown(r) for r in fake_openai.requests) == sorted([GOOD, BAD])
    assert all("response_format" not in r.body for r in fake_openai.requests)  # markers, not JSON


def test_pairwise_invalid_and_error_rounds_over_http(fake_openai, model):
    fake_openai.handler = lambda r: Reply("[[A]] no, [[B]]") if first_shown(r) == GOOD else Fail(503)
    judgment = PairwiseJudge(model, retries=0).compare("q", GOOD, BAD)
    assert judgment.status is PairwiseStatus.ERROR and judgment.verdict is None
    statuses = {r.order: r.status for r in judgment.rounds}
    assert statuses == {"AB": PairwiseStatus.INVALID, "BA": PairwiseStatus.ERROR}
    assert "conflicting markers" in (judgment.rounds[0].error or "")


def test_judge_through_the_anthropic_client_uses_forced_tool_output(fake_anthropic):
    model = resolve_model("anthropic/claude-haiku-4-5", base_url=fake_anthropic.base_url, api_key="sk-ant-test",
                          retry=RetryPolicy(max_attempts=1), rate_limits=RateLimits(None, None))
    fake_anthropic.enqueue(Reply(rubric_reply({"safety": "FAIL"}, evidence={"safety": ["Restart the router"]})))
    judgment = Judge(model).grade(ANSWER, context="ctx")
    assert judgment.status is JudgmentStatus.VALID and judgment.verdicts["safety"] is Verdict.FAIL
    body = fake_anthropic.last_request.body
    assert body["tool_choice"]["type"] == "tool" and body["system"].startswith("You are an impartial evaluator")
    assert body["messages"][-1] == {"role": "user", "content": f"<answer>\n{ANSWER}\n</answer>"}
