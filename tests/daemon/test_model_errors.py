"""A server that is up but refuses what the judge asks is a configuration error, not an outage: the daemon's
rubric evaluator against the fake OpenAI server (official client), configured by a model string with options."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.fakes import Fail, Reply
from tests.judges.replies import rubric_reply
from verdict.models.base import Usage
from verdict_daemon.config import EvaluatorConfig
from verdict_daemon.service.cycle import build_evaluator
from verdict_daemon.service.evaluators import (
    MODEL_CONFIG_ERROR,
    PROVIDER_UNAVAILABLE,
    error_outcome,
)
from verdict_daemon.service.material import Material
from verdict_demo.fake_llm.llamacpp import LlamaCppReplica

MATERIAL = Material("t1", datetime(2026, 1, 1), "Capital of France?", "Paris.", "Paris is the capital of France.")


def evaluator(fake_openai, model: str):
    spec = f"openai/{model}?base_url={fake_openai.base_url}&max_concurrency=2"
    return build_evaluator(EvaluatorConfig(name="quality", kind="rubric", model=spec))


@pytest.mark.parametrize(("fail", "code", "calls"), [
    (Fail(500, "unsupported chat template"), MODEL_CONFIG_ERROR, 2),  # the same refusal twice
    (Fail(400, "logit_bias is not supported"), MODEL_CONFIG_ERROR, 1),
])
def test_refusals_are_configuration_errors_with_the_server_text(fake_openai, fail, code, calls):
    fake_openai.handler = lambda request: fail
    outcome = evaluator(fake_openai, f"refusing-{fail.status}").evaluate(MATERIAL)
    assert outcome.error_code == code
    assert fail.message in outcome.error_message
    assert fake_openai.request_count == calls  # no blind retries of a refusal (the engine does not retry it)


def test_llama_cpp_refusing_json_schema_is_negotiated_not_reported(fake_openai):
    fake_openai.handler = LlamaCppReplica(Reply(rubric_reply()))
    outcome = evaluator(fake_openai, "smollm2-daemon").evaluate(MATERIAL)
    assert outcome.error_code is None and len(outcome.verdicts) == 5
    assert [(r.body.get("response_format") or {}).get("type") for r in fake_openai.requests] == \
        ["json_schema", "json_object"]


def test_an_outage_is_still_provider_unavailable():
    message = "judge: model: server_error: HTTP 503 from openai/x: loading model (gave up after 4 attempts)"
    assert error_outcome(message, Usage()).error_code == PROVIDER_UNAVAILABLE
