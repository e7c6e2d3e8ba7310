"""Capability negotiation, refusals and model-string options of the OpenAI-compatible client, against
the fake server running a loopback replica of llama-cpp-python's refusals (fake_llm/llamacpp.py)."""

from __future__ import annotations

import logging
import time

import pytest

from tests.fakes import Fail, Reply
from verdict.models.base import SCHEMA_INSTRUCTION, Message, ModelError, ModelRequest
from verdict.models.openai_model import OpenAIModel, parse_logprobs
from verdict.models.registry import resolve_model
from verdict.models.retry import RetryPolicy
from verdict_demo.fake_llm.llamacpp import RESPONSE_FORMAT_REFUSAL, LlamaCppReplica

MESSAGES = (Message("system", "You grade answers."), Message("user", "Grade: 2+2=4"))
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}


def _formats(server) -> list[str | None]:
    return [(r.body.get("response_format") or {}).get("type") for r in server.requests]


def test_json_schema_refusal_falls_back_to_the_grammar_form_once_per_endpoint(fake_openai, openai_model, caplog):
    fake_openai.handler = LlamaCppReplica(Reply('{"score": 4}'))
    model = openai_model("smollm2")
    assert model.supports_json_schema
    with caplog.at_level(logging.WARNING, logger="verdict.models"):
        first = model.complete(ModelRequest(MESSAGES, json_schema=SCHEMA))
        # Another client of the same endpoint and model knows it already.
        openai_model("smollm2").complete(ModelRequest(MESSAGES, json_schema=SCHEMA))
    assert first.text == '{"score": 4}'
    assert _formats(fake_openai) == ["json_schema", "json_object", "json_object"]
    assert fake_openai.requests[1].body["response_format"] == {"type": "json_object", "schema": SCHEMA}
    # Below JSON-schema mode the schema is also spelled out in the prompt, once.
    last_user = fake_openai.requests[1].body["messages"][-1]["content"]
    assert last_user.count(SCHEMA_INSTRUCTION.split("\n")[0]) == 1
    assert not model.supports_json_schema and model.structured_output == "json_object_schema"
    downgrades = [r for r in caplog.records if "refused response_format" in r.getMessage()]
    assert len(downgrades) == 1 and "Input should be 'text' or 'json_object'" in downgrades[0].getMessage()
    # Another model on the same endpoint is not affected.
    assert openai_model("other-model").structured_output == "json_schema"


def test_json_schema_false_never_sends_json_schema_and_the_string_carries_it(fake_openai):
    fake_openai.handler = LlamaCppReplica(Reply('{"score": 4}'))
    model = resolve_model(f"openai/tiny?json_schema=false&base_url={fake_openai.base_url}&max_concurrency=1")
    assert not model.supports_json_schema
    model.complete(ModelRequest(MESSAGES, json_schema=SCHEMA))
    assert _formats(fake_openai) == ["json_object"]


def test_a_server_without_any_response_format_gets_instructions_only(fake_openai, openai_model):
    def no_formats(request):
        if "response_format" in request.body:
            return Fail(400, "response_format is not supported by this server")
        return Reply('{"score": 3}')

    fake_openai.handler = no_formats
    assert openai_model("plain").complete(ModelRequest(MESSAGES, json_schema=SCHEMA)).text == '{"score": 3}'
    assert _formats(fake_openai) == ["json_schema", "json_object", "json_object", None]
    assert SCHEMA_INSTRUCTION.split("\n")[0] in fake_openai.last_request.body["messages"][-1]["content"]


@pytest.mark.parametrize(("spec", "message"), [
    ("openai/x?jsonschema=false", "unknown option 'jsonschema'"),
    ("openai/x?json_schema=maybe", "expected true or false"),
    ("openai/x?max_concurrency=0", "expected an integer >= 1"),
    ("openai/x?timeout=-1", "expected a number > 0"),
    ("openai/x?json_schema", "needs a value"),
    ("anthropic/x?json_schema=false", "does not apply to 'anthropic'"),
    ("offline/heuristic-judge?timeout=3", "does not apply to 'offline'"),
])
def test_model_string_options_are_validated(spec, message):
    with pytest.raises(ValueError, match=message):
        resolve_model(spec)


def test_model_string_options_reach_the_client(fake_openai):
    model = resolve_model(f"openai/tiny?timeout=7.5&context_length=4096&logprobs=false&base_url={fake_openai.base_url}")
    assert isinstance(model, OpenAIModel)
    assert (model.timeout, model.capabilities.context_length, model.supports_logprobs) == (7.5, 4096, False)


def test_refusal_keeps_the_server_text_redacted_and_is_not_retried(fake_openai, openai_model):
    fake_openai.handler = lambda request: Fail(400, "logprobs are not supported; contact admin@example.com")
    model = openai_model("nolp")
    with pytest.raises(ModelError) as caught:
        model.complete(ModelRequest(MESSAGES, top_logprobs=5))
    error = caught.value
    assert error.kind == "unsupported_parameter" and error.parameter == "logprobs" and not error.retryable
    assert "logprobs are not supported" in error.message and "admin@example.com" not in error.message
    assert fake_openai.request_count == 1
    assert not model.supports_logprobs  # learnt: the next pipeline build picks another extractor


def test_traceback_frames_in_the_server_text_are_dropped(fake_openai, openai_model):
    # llama-cpp-python appends a frame of its own traceback (a local path) to its validation errors.
    fake_openai.handler = lambda request: Fail(
        400, 'unsupported chat template\n\n  File "/srv/venv/site-packages/app.py", line 376, in create\n    POST /v1')
    with pytest.raises(ModelError) as caught:
        openai_model("frames").complete(ModelRequest(MESSAGES))
    message = caught.value.message
    assert "unsupported chat template" in message and "/srv/venv" not in message and 'File "' not in message


def test_same_500_twice_is_a_refusal_not_an_outage(fake_openai, openai_model):
    fake_openai.handler = lambda request: Fail(500, "unsupported chat template for this model")
    with pytest.raises(ModelError) as caught:
        openai_model("tmpl").complete(ModelRequest(MESSAGES))
    assert caught.value.kind == "refused" and "unsupported chat template" in caught.value.message
    assert fake_openai.request_count == 2


def test_seed_refusal_drops_the_seed(fake_openai, openai_model):
    fake_openai.handler = LlamaCppReplica(Reply("ok"), refuse={"seed"})
    model = openai_model("noseed")
    assert model.complete(ModelRequest(MESSAGES, params={"seed": 3, "temperature": 0})).text == "ok"
    model.complete(ModelRequest(MESSAGES, params={"seed": 3}))
    assert ["seed" in r.body for r in fake_openai.requests] == [True, False, False]


def test_max_tokens_refusal_switches_to_max_completion_tokens(fake_openai, openai_model):
    def o1_style(request):
        if "max_tokens" in request.body:
            return Fail(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                             "Use 'max_completion_tokens' instead.")
        return Reply("ok")

    fake_openai.handler = o1_style
    assert openai_model("o1-mini").complete(ModelRequest(MESSAGES, params={"max_tokens": 9})).text == "ok"
    assert fake_openai.last_request.body["max_completion_tokens"] == 9
    assert fake_openai.request_count == 2


def test_context_window_is_learnt_from_the_refusal_and_respected(fake_openai, openai_model):
    fake_openai.handler = LlamaCppReplica(Reply("fine"), context_length=512)
    model = openai_model("smallctx")
    assert model.complete(ModelRequest(MESSAGES, params={"max_tokens": 2048})).text == "fine"
    sent = fake_openai.last_request.body["max_tokens"]
    assert 0 < sent <= 512 - 5 and fake_openai.request_count == 2
    model.complete(ModelRequest(MESSAGES, params={"max_tokens": 2048}))
    assert fake_openai.request_count == 3  # known now: no second refusal


def test_both_logprob_shapes_are_parsed():
    openai_shape = {"content": [{"token": "4", "logprob": -0.1, "top_logprobs": [
        {"token": "4", "logprob": -0.1}, {"token": "5", "logprob": -2.4}]}]}
    completions_shape = {"tokens": ["4", "."], "token_logprobs": [-0.1, -0.01],
                         "top_logprobs": [{"5": -2.4, "4": -0.1}, {".": -0.01}], "text_offset": [0, 1]}
    assert (parse_logprobs(openai_shape) or ())[0].top == (("4", -0.1), ("5", -2.4))
    parsed = parse_logprobs(completions_shape)
    assert parsed is not None
    assert [lp.token for lp in parsed] == ["4", "."]
    assert parsed[0].top == (("4", -0.1), ("5", -2.4)) and parsed[0].logprob == -0.1


def test_max_concurrency_keeps_a_serial_server_serial(fake_openai, openai_model):
    from concurrent.futures import ThreadPoolExecutor

    fake_openai.handler = LlamaCppReplica(Reply("ok"), latency=0.05)
    model = openai_model("serial", max_concurrency=1)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: model.complete(ModelRequest(MESSAGES)), range(6)))
    assert fake_openai.request_count == 6 and fake_openai.max_in_flight == 1


def test_a_timeout_with_calls_queued_lowers_the_learnt_limit(fake_openai, openai_model):
    from concurrent.futures import ThreadPoolExecutor

    from verdict.models.retry import RetryPolicy

    fake_openai.handler = LlamaCppReplica(Reply("ok"), latency=0.5)
    model = openai_model("queueing", timeout=0.2, retry=RetryPolicy(max_attempts=1))

    def call(_):
        try:
            model.complete(ModelRequest(MESSAGES))
        except ModelError as error:
            return error.kind
        return "ok"

    with ThreadPoolExecutor(4) as pool:
        kinds = list(pool.map(call, range(4)))
    assert "timeout" in kinds
    assert model._gate.limit is not None and model._gate.limit <= 2


def test_fingerprint_of_a_judge_includes_the_endpoint_without_credentials(fake_openai, openai_model):
    from verdict.judges.judge import Judge

    here = Judge(openai_model("local", base_url=fake_openai.base_url))
    same = Judge(openai_model("local", base_url=fake_openai.base_url.replace("127.0.0.1", "user:pw@127.0.0.1")
                              + "/"))
    other = Judge(openai_model("local", base_url=f"http://127.0.0.1:{fake_openai.port + 1}/v1"))
    assert here.fingerprint == same.fingerprint != other.fingerprint
    assert isinstance(here.model, OpenAIModel)
    assert here.model.endpoint == f"http://127.0.0.1:{fake_openai.port}/v1"


def test_a_learnt_downgrade_changes_the_judge_fingerprint(fake_openai, openai_model):
    from verdict.judges.judge import Judge

    fake_openai.handler = LlamaCppReplica(Reply('{"score": 4}'))
    judge = Judge(openai_model("fp-local"))
    before = judge.fingerprint
    judge.model.complete(ModelRequest(MESSAGES, json_schema=SCHEMA))
    assert judge.fingerprint != before


def test_replica_refuses_like_llama_cpp(fake_openai, openai_model):
    fake_openai.handler = LlamaCppReplica()
    client = fake_openai.client()
    import openai

    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                       response_format={"type": "json_schema", "json_schema": {"name": "r",
                                                                                               "schema": SCHEMA}})
    assert caught.value.status_code == 500 and isinstance(caught.value.body, dict)
    assert caught.value.body["message"] == RESPONSE_FORMAT_REFUSAL
    assert "Input should be 'text' or 'json_object'" in RESPONSE_FORMAT_REFUSAL


def test_a_validation_error_locating_a_parameter_is_unsupported_parameter_at_once(fake_openai, openai_model):
    # llama-cpp-python's words for frequency_penalty="high": HTTP 500, pydantic's 'loc': ('body', 'frequency_penalty').
    fake_openai.handler = LlamaCppReplica(refuse={"frequency_penalty"})
    with pytest.raises(ModelError) as caught:
        openai_model("validating").complete(ModelRequest(MESSAGES, params={"frequency_penalty": "high"}))
    assert (caught.value.kind, caught.value.parameter) == ("unsupported_parameter", "frequency_penalty")
    assert "Extra inputs are not permitted" in caught.value.message and fake_openai.request_count == 1


@pytest.mark.parametrize("entry", [{"max_model_len": 64}, {"meta": {"n_ctx": 64, "n_ctx_train": 8192}}])
def test_a_context_window_the_server_reports_is_respected(fake_openai, openai_model, entry):
    model_name = f"reported-{len(entry)}-{'meta' in entry}"
    fake_openai.listed_models = [{"id": "other", "max_model_len": 100000}, {"id": model_name, **entry}]
    fake_openai.enqueue(Reply("ok"))
    model = openai_model(model_name)
    model.complete(ModelRequest(MESSAGES, params={"max_tokens": 2048}))
    assert model.capabilities.context_length == 64
    assert 0 < fake_openai.last_request.body["max_tokens"] < 64


def test_a_refusal_naming_a_parameter_that_was_not_sent_teaches_nothing(fake_openai, openai_model):
    fake_openai.handler = lambda request: Fail(400, "seed must be an integer")
    model = openai_model("unsent")
    with pytest.raises(ModelError) as caught:
        model.complete(ModelRequest(MESSAGES, params={"temperature": 0}))
    assert caught.value.kind == "unsupported_parameter" and fake_openai.request_count == 1
    assert model.capabilities.seed


def test_the_timeout_grows_with_the_output_budget_at_the_pace_the_server_showed(fake_openai, openai_model):
    # A server that generates 20 tokens a second and sends nothing before the reply is complete (no stream):
    # a 40-token budget takes 2 s, past the configured 1 s, yet the server is slow, not hung.
    def paced(request):
        budget = request.body.get("max_tokens") or request.body.get("max_completion_tokens")
        return Reply(" ".join(["word"] * budget), latency=0.05 * budget)

    fake_openai.handler = paced
    model = openai_model("paced", timeout=1.0, retry=RetryPolicy(max_attempts=1))
    short = model.complete(ModelRequest(MESSAGES, params={"max_tokens": 10}))  # 0.5 s: teaches the pace
    assert short.usage.output_tokens == 10
    assert model.attempt_timeout(40) >= 2 * 40 * 0.05
    long = model.complete(ModelRequest(MESSAGES, params={"max_tokens": 40}))
    assert long.usage.output_tokens == 40 and fake_openai.request_count == 2


def test_reset_waits_for_a_request_its_client_gave_up_on(fake_openai):
    """The fake server is shared by the whole session: a request a client abandoned (its timeout) is still
    being answered when the next test resets it. Reset waits for it, so `max_in_flight` counts only what
    the next test sends (without the wait, the serial-server test above saw 2 in a full run)."""
    import http.client
    import socket
    from urllib.parse import urlsplit

    fake_openai.handler = LlamaCppReplica(Reply("ok"), latency=1.0)
    url = urlsplit(fake_openai.base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=0.2)
    with pytest.raises(socket.timeout):
        conn.request("POST", f"{url.path}/chat/completions", body=b'{"model": "m", "messages": []}',
                     headers={"content-type": "application/json"})
        conn.getresponse()
    conn.close()
    assert fake_openai.in_flight == 1  # still being answered
    fake_openai.reset()
    assert fake_openai.in_flight == 0 and fake_openai.max_in_flight == 0


def test_the_character_estimate_never_refuses_a_prompt_the_server_accepts(fake_openai, openai_model):
    # 200 one-character words: 400 characters, about 133 tokens at 3 characters per token, but the server counts
    # 200 (one per word) of a 256-token window. The estimate only shrinks max_tokens; the server's count decides.
    fake_openai.handler = LlamaCppReplica(Reply("fine"), context_length=256)
    model = openai_model("estimated", context_length=256)
    prompt = (Message("user", "a " * 200),)
    assert model.complete(ModelRequest(prompt, params={"max_tokens": 100})).text == "fine"
    assert fake_openai.request_count == 2  # refused once (200 + 100 > 256), then sent with the room it counted
    assert fake_openai.last_request.body["max_tokens"] <= 256 - 200
    assert model.capabilities.chars_per_token == 2.0


def test_a_prompt_is_refused_client_side_only_after_the_server_refused_its_size(fake_openai, openai_model):
    fake_openai.handler = LlamaCppReplica(Reply("fine"), context_length=64)
    model = openai_model("tinyctx", context_length=64)
    long = ModelRequest((Message("user", "word " * 100),), params={"max_tokens": 4})
    with pytest.raises(ModelError) as first:
        model.complete(long)
    assert first.value.kind == "bad_request" and "100 in the messages" in first.value.message
    assert fake_openai.request_count == 1
    with pytest.raises(ModelError, match="does not fit .* context of 64 tokens: the server counted 100 tokens") as again:
        model.complete(ModelRequest((Message("user", "word " * 120),), params={"max_tokens": 4}))
    assert again.value.kind == "bad_request" and fake_openai.request_count == 1  # not sent again
    assert model.complete(ModelRequest((Message("user", "word " * 10),), params={"max_tokens": 4})).text == "fine"


def test_an_abandoned_request_holds_the_serial_servers_slot_until_it_is_answered(fake_openai, openai_model):
    # The server takes 0.4 s a request, the client waits 0.15 s: every attempt times out. The abandoned
    # request is awaited in the background, so the next one (a retry, or another thread's call) is sent only
    # once the server is free: never two in flight, each call sends its policy's attempts and no more.
    from concurrent.futures import ThreadPoolExecutor

    fake_openai.handler = LlamaCppReplica(Reply("ok"), latency=0.4)
    model = openai_model("serial-slow", max_concurrency=1, timeout=0.15,
                         retry=RetryPolicy(max_attempts=2, base_delay=0))

    def call(_):
        with pytest.raises(ModelError) as caught:
            model.complete(ModelRequest(MESSAGES))
        return caught.value

    with ThreadPoolExecutor(3) as pool:
        errors = list(pool.map(call, range(3)))
    assert all(e.kind == "timeout" and e.requests == 2 for e in errors)
    assert "holds one of" in errors[0].message
    held = model._gate
    while held.in_flight:  # the last abandoned request, still awaited
        time.sleep(0.01)
    assert fake_openai.request_count == 6 and fake_openai.max_in_flight == 1
