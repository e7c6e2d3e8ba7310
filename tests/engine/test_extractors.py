"""Each extractor against scripted replies, the default choice, and retries ending in an error state."""

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verdict.extract import (
    ExpectedValueExtractor,
    PostHocExtractor,
    RawTextExtractor,
    RegexExtractor,
    TokenProbabilityExtractor,
    parse_json,
)
from verdict.graph import ConfigurationError, Pipeline, Schema, Unit, UnitError
from verdict.judges import JudgeUnit
from verdict.models.base import ModelError, ModelResponse
from verdict.models.scripted import ScriptedModel, ScriptedReply
from verdict.scale import BooleanScale, ContinuousScale, DiscreteScale, Scale


class Graded(Schema):
    explanation: str
    score: Scale = DiscreteScale((1, 5))


class Probability(Schema):
    p: Scale = ContinuousScale(0, 1)


class Answer(Schema):
    text: str


def unit_for(schema: type[Schema], **kw) -> Unit:
    cls = type(f"{schema.__name__}Unit", (Unit,), {"ResponseSchema": schema})
    return cls(**kw).prompt("{source.q}")


def run(unit: Unit, model: ScriptedModel, retries: int = 0):
    return (Pipeline() >> unit.via(model, retries=retries)).run({"q": "question"})


def test_structured_output_sends_the_schema_and_validates():
    model = ScriptedModel(['```json\n{"explanation": "clear", "score": 4}\n```'], record=True)
    row = run(unit_for(Graded), model)
    assert row.output.score == 4 and row.output.explanation == "clear"
    schema = model.requests[0].json_schema
    assert schema is not None
    assert schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]


def test_structured_output_finds_json_inside_prose():
    row = run(unit_for(Probability), ScriptedModel(['Sure! {"p": 0.8} hope that helps']))
    assert row.output.p == 0.8


def test_continuous_scale_default_is_structured_and_enforces_range():
    model = ScriptedModel(['{"p": 1.7}', '{"p": 0.3}'], record=True)
    row = run(unit_for(Probability), model, retries=1)
    assert row.output.p == 0.3 and model.calls == 2
    assert (model.requests[0].json_schema or {})["properties"]["p"]["maximum"] == 1


def test_regex_first_int_and_first_float():
    score = unit_for(JudgeUnit().ResponseSchema).extract(RegexExtractor(RegexExtractor.FIRST_INT))
    assert run(score, ScriptedModel(["I'd say 4 out of 5"])).output.score == 4
    prob = unit_for(Probability).extract(RegexExtractor(RegexExtractor.FIRST_FLOAT))
    assert run(prob, ScriptedModel(["probability: 0.35."])).output.p == 0.35


def test_regex_custom_per_field_patterns():
    unit = unit_for(Graded).extract(RegexExtractor({"score": r"Score:\s*(\d)", "explanation": r"Why:\s*(.+)"}))
    row = run(unit, ScriptedModel(["Why: concise and correct\nScore: 5"]))
    assert (row.output.score, row.output.explanation) == (5, "concise and correct")


def test_regex_config_mismatch_fails_at_build():
    unit = unit_for(Graded).extract(RegexExtractor({"score": r"\d"}))
    with pytest.raises(ConfigurationError, match="missing \\['explanation'\\]"):
        (Pipeline() >> unit.via(ScriptedModel(["1"]))).build()


def test_regex_out_of_scale_value_is_retried_then_error():
    unit = unit_for(JudgeUnit().ResponseSchema).extract(RegexExtractor())
    model = ScriptedModel(["9", "7"])
    row = run(unit, model, retries=1)
    error = row.output
    assert isinstance(error, UnitError) and error.kind == "extraction" and error.attempts == 2
    assert "'7' is not on the scale" in error.message and model.calls == 2
    assert not row.ok and "extraction" in row.error


def test_token_probability_distribution_and_argmax():
    model = ScriptedModel([ScriptedReply("4", {"4": 0.5, "5": 0.3, "3": 0.1, "Sure": 0.1})], logprobs=True,
                          record=True)
    row = run(JudgeUnit(), model)  # default extractor: logprobs available -> token probabilities
    out = row.output
    assert out.score == 4
    assert out.score_distribution == pytest.approx({3: 0.1 / 0.9, 4: 0.5 / 0.9, 5: 0.3 / 0.9})
    assert model.requests[0].top_logprobs == 20 and model.requests[0].json_schema is None


def test_expected_value_variant():
    model = ScriptedModel([ScriptedReply("4", {"4": 0.5, "5": 0.5})], logprobs=True)
    row = run(JudgeUnit().extract(ExpectedValueExtractor()), model)
    assert row.output.score == pytest.approx(4.5)


def test_boolean_scale_token_probabilities():
    class Verdict(Schema):
        ok: Scale = BooleanScale()

    model = ScriptedModel([ScriptedReply("Yes", {"Yes": 0.7, "yes": 0.1, "No": 0.2})], logprobs=True)
    out = run(unit_for(Verdict).extract(TokenProbabilityExtractor()), model).output
    assert out.ok is True and out.ok_distribution == pytest.approx({False: 0.2, True: 0.8})


def test_token_probability_without_scale_tokens_is_an_error_state():
    model = ScriptedModel([ScriptedReply("Well", {"Well": 0.9, "I": 0.1})], logprobs=True)
    error = run(JudgeUnit(), model, retries=2).output
    assert error.kind == "extraction" and "starts with 'Well', which is not on the scale" in error.message
    assert model.calls == 3


def test_scale_tokens_the_model_did_not_write_are_not_a_score():
    # "4" is only an alternative of the chosen first token: reading it would invent a score.
    model = ScriptedModel([ScriptedReply("Sure, here it is", {"Sure": 0.6, "4": 0.4})], logprobs=True)
    error = run(JudgeUnit(), model, retries=1).output
    assert error.kind == "extraction" and "starts with 'Sure,'" in error.message and model.calls == 2


def test_default_extractor_is_structured_without_logprobs():
    model = ScriptedModel(['{"score": 2}'], record=True)
    assert run(JudgeUnit(), model).output.score == 2
    assert model.requests[0].json_schema is not None and model.requests[0].top_logprobs is None


def test_token_probability_needs_logprobs_at_build():
    unit = JudgeUnit().extract(TokenProbabilityExtractor())
    with pytest.raises(ConfigurationError, match="needs logprobs"):
        (Pipeline() >> unit.via(ScriptedModel(["3"]))).build()
    with pytest.raises(ConfigurationError, match="fills exactly one field, but Graded.*requires \\['explanation', 'score'\\]"):
        (Pipeline() >> unit_for(Graded).extract(TokenProbabilityExtractor())
         .via(ScriptedModel(["3"], logprobs=True))).build()


def test_raw_text():
    assert run(unit_for(Answer).extract(RawTextExtractor()), ScriptedModel(["free text"])).output.text == "free text"
    with pytest.raises(ConfigurationError, match="needs a str field"):
        (Pipeline() >> unit_for(Probability).extract(RawTextExtractor()).via(ScriptedModel(["x"]))).build()


def test_post_hoc_two_steps_with_a_separate_extraction_model():
    answering = ScriptedModel(["The answer is mostly right, I'd give it a four."], record=True)
    extracting = ScriptedModel(['{"explanation": "mostly right", "score": 4}'], record=True)
    row = run(unit_for(Graded).extract(PostHocExtractor(extracting)), answering)
    assert (row.output.score, row.output.explanation) == (4, "mostly right")
    assert answering.requests[0].json_schema is None
    step_two = extracting.requests[0]
    assert step_two.json_schema is not None
    assert step_two.messages[1].content == "The answer is mostly right, I'd give it a four."


def test_truncated_reply_is_never_extracted():
    truncated = ScriptedReply('{"score": 5}', finish_reason="length")
    error = run(JudgeUnit(), ScriptedModel([truncated]), retries=1).output
    assert error.kind == "extraction" and "truncated" in error.message and error.attempts == 2


def test_retry_then_success_uses_the_later_reply():
    model = ScriptedModel(["not json", '{"score": 9}', '{"score": 3}'])
    row = run(JudgeUnit(), model, retries=3)
    assert row.output.score == 3 and model.calls == 3


def test_model_errors_are_not_retried_by_the_engine():
    # The client's retry policy already retried what was worth it: retrying again multiplies the requests.
    for error in (ModelError("auth", "bad key"), ModelError("server_error", "503", retryable=True)):
        model = ScriptedModel([error, '{"score": 1}'])
        failed = run(JudgeUnit(), model, retries=3).output
        assert failed.kind == "model" and error.kind in failed.message and model.calls == 1


def test_usage_of_every_attempt_is_counted():
    model = ScriptedModel(["bad reply", ModelResponse('{"score": 2}', "m")], price_per_million=(1e6, 0.0))
    row = run(JudgeUnit(), model, retries=1)
    assert row.output.score == 2
    assert row.usage.output_tokens == 2  # "bad reply" counted; the ModelResponse carries zero usage
    assert math.isclose(row.usage.cost_usd, row.usage.input_tokens)


@given(explanation=st.text(), score=st.integers(1, 5),
       wrap=st.sampled_from(["{}", "```json\n{}\n```", "Here you go: {} - done", "```\n{}```"]))
def test_structured_parse_recovers_any_valid_reply(explanation, score, wrap):
    payload = json.dumps({"explanation": explanation, "score": score})
    parsed = parse_json(Graded, wrap.replace("{}", payload))
    assert (parsed.explanation, parsed.score) == (explanation, score)


def test_model_without_json_mode_gets_the_schema_in_the_prompt():
    model = ScriptedModel(['{"p": 0.5}'], json_schema=False, record=True)
    assert run(unit_for(Probability), model).output.p == 0.5
    (only,) = model.requests[0].messages
    assert only.content.startswith("question\n\nReply with only a JSON object")
    assert '"maximum": 1' in only.content
    with_mode = ScriptedModel(['{"p": 0.5}'], record=True)
    run(unit_for(Probability), with_mode)
    assert len(with_mode.requests[0].messages) == 1
