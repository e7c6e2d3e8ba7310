"""Token-probability scores come only from the answer position, through the real `openai` client against
the fake server replaying token streams a small local model (SmolLM2 on llama.cpp) actually wrote."""

from __future__ import annotations

import math

import pytest

from tests.fakes import Reply, TokenLogprob
from verdict.extract import TokenProbabilityExtractor
from verdict.graph import ConfigurationError, Pipeline, UnitError
from verdict.judges import JudgeUnit
from verdict.models.openai_model import OpenAIModel
from verdict.models.ratelimit import RateLimits
from verdict.models.retry import RetryPolicy


def lp(token: str, p: float, *alternatives: tuple[str, float]) -> TokenLogprob:
    top = ((token, math.log(p)), *((t, math.log(q)) for t, q in alternatives))
    return TokenLogprob(token, math.log(p), top)


def tokens(*parts: str) -> list[TokenLogprob]:
    return [lp(part, 0.9) for part in parts]


def score(fake_openai, reply: Reply, extractor: TokenProbabilityExtractor | None = None, **params):
    fake_openai.enqueue(reply)
    model = OpenAIModel("smollm2", base_url=fake_openai.base_url, retry=RetryPolicy(max_attempts=1),
                        rate_limits=RateLimits(None, None))
    unit = JudgeUnit().extract(extractor or TokenProbabilityExtractor()).via(model, retries=0, **params)
    return (Pipeline() >> unit).run({"q": "grade this"}).output


@pytest.mark.parametrize(("stream", "reason"), [
    pytest.param(["1", ".", " This", " sentence", " is", " clear"], "goes on after '1' on the same line",
                 id="list marker"),
    pytest.param(["(", "1", "/", "2", ")", " *", " base"], "starts with '('", id="fraction"),
    pytest.param(["top", "_", "5", "0", "Words"], "starts with 'top'", id="code"),
    pytest.param(["Score", ":", " ", "1", "2"], "starts with 'Score'", id="prefix without a marker"),
    pytest.param(["1", "2"], "answer '12' is not on the scale", id="off scale"),
])
def test_a_scale_token_elsewhere_in_the_reply_is_never_a_score(fake_openai, stream, reason):
    error = score(fake_openai, Reply(logprobs=tokens(*stream)))
    assert isinstance(error, UnitError) and error.kind == "extraction"
    assert reason in error.message


def test_marker_reads_the_token_after_it_and_rejects_an_off_scale_value(fake_openai):
    marked = TokenProbabilityExtractor(marker="Score:")
    ok = score(fake_openai, Reply(logprobs=[*tokens("The", " answer", " is", " fine", ".", " Score", ":", " "),
                                           lp("4", 0.6, ("5", 0.3), ("1", 0.1)), *tokens(" because")]), marked)
    assert ok.score == 4 and ok.score_distribution == pytest.approx({1: 0.1, 4: 0.6, 5: 0.3})
    off = score(fake_openai, Reply(logprobs=tokens("Score", ":", " ", "1", "2")), marked)
    assert isinstance(off, UnitError) and "answer '12' is not on the scale" in off.message
    missing = score(fake_openai, Reply(logprobs=tokens("4")), marked)
    assert isinstance(missing, UnitError) and "no 'Score:' marker" in missing.message


def test_verdict_first_reply_with_an_explanation_on_the_next_line(fake_openai):
    out = score(fake_openai, Reply(logprobs=[lp("3", 0.7, ("2", 0.3)), *tokens("\n\n", "The", " answer")]))
    assert out.score == 3 and out.score_distribution == pytest.approx({2: 0.3, 3: 0.7})


def test_max_tokens_1_cut_is_a_finished_score(fake_openai):
    # What llama.cpp sends for max_tokens=1: one token, finish_reason "length".
    out = score(fake_openai, Reply(logprobs=[lp("2", 0.8, ("3", 0.2)), *tokens(" and", " more")]), max_tokens=1)
    assert out.score == 2
    assert fake_openai.last_request.body["max_tokens"] == 1


def test_blank_marker_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="marker"):
        TokenProbabilityExtractor(marker="  ")
