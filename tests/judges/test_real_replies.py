"""What real (small, local) judge models write: placeholder evidence, replies a retry must repair, judges that
fail every sentinel example. Replies are the ones SmolLM2-135M gave on llama.cpp, scripted."""

from __future__ import annotations

import pytest

from tests.judges.replies import rubric_reply
from tests.trust.scripted import RUBRIC, examples, write_jsonl
from verdict.graph.step import REPAIR
from verdict.judges.judge import Judge, JudgmentStatus, is_placeholder
from verdict.models.base import ModelError
from verdict.models.scripted import ScriptedModel
from verdict.sentinel import HealthStatus, evaluate_judge_health, load_sentinel_set

ANSWER = "Paris is the capital of France."


@pytest.mark.parametrize("placeholder", ["", "...", "…", " ... ", '"..."', "N/A", "none", "[...]"])
def test_a_placeholder_quote_is_no_evidence_not_a_failed_attempt(placeholder):
    reply = rubric_reply({"completeness": "FAIL"}, evidence={"completeness": [placeholder],
                                                             "relevance": ["Paris is the capital"]})
    judge = Judge(ScriptedModel([reply]), retries=0)
    judgment = judge.grade(ANSWER, query="Capital of France?", context="Paris is the capital.")
    assert judgment.status is JudgmentStatus.VALID, judgment.error
    assert judgment["completeness"].evidence == () and judgment["relevance"].evidence == ("Paris is the capital",)


@pytest.mark.parametrize("quote", ["Lyon", "Paris ... Lyon", "the capital of Germany"])
def test_real_quotes_are_still_checked_verbatim(quote):
    assert not is_placeholder(quote)
    judge = Judge(ScriptedModel([rubric_reply(evidence={"relevance": [quote]})]), retries=0)
    judgment = judge.grade(ANSWER, query="Capital of France?", context="Paris is the capital.")
    assert judgment.status is JudgmentStatus.ERROR and "does not occur in the graded answer" in (judgment.error or "")


def test_a_retry_feeds_the_reason_back_and_records_the_attempt_that_succeeded():
    truncated_json = '{"groundedness": {"rationale": "ok", "evidence": ["Lyon"], "verdict": "PASS"}'
    model = ScriptedModel([truncated_json, rubric_reply()], record=True)
    judgment = Judge(model, retries=2).grade(ANSWER, query="Capital of France?", context="Paris is the capital.")
    assert judgment.status is JudgmentStatus.VALID and judgment.attempts == 2
    first, second = model.requests
    assert second.messages[:len(first.messages)] == first.messages  # the same request, then the repair turns
    assistant, repair = second.messages[len(first.messages):]
    assert (assistant.role, assistant.content) == ("assistant", truncated_json)
    assert repair.role == "user" and REPAIR.split("{reason}")[0] in repair.content
    assert "does not validate" in repair.content or "no JSON object" in repair.content


def test_model_errors_are_left_to_the_clients_retry_policy():
    model = ScriptedModel([ModelError("server_error", "HTTP 503", retryable=True), rubric_reply()], record=True)
    judgment = Judge(model, retries=1).grade(ANSWER, query="Capital of France?", context="Paris is the capital.")
    assert judgment.status is JudgmentStatus.ERROR and judgment.attempts == 1 and model.calls == 1


def test_sentinel_reason_names_the_failures_and_their_class(tmp_path):
    refusal = ModelError("unsupported_parameter", "HTTP 500 from openai/smollm2: Input should be 'text' or "
                         "'json_object' [refused parameter: response_format]", parameter="response_format")
    sentinel = load_sentinel_set(write_jsonl(tmp_path / "s.jsonl", examples(20)), RUBRIC)
    health = evaluate_judge_health(Judge(ScriptedModel([refusal]), RUBRIC, retries=0), sentinel)
    assert health.status is HealthStatus.INSUFFICIENT_DATA
    assert health.reason.startswith("20 of 20 examples failed: unsupported_parameter: ")
    assert "Input should be 'text' or 'json_object'" in health.reason
    assert health.reason.endswith("0 usable example(s), fewer than the minimum of 30")
