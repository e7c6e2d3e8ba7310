"""The OpenAI-compatible client against the real llama.cpp server (issue 21 items 1-4, issue 15 item 1):
capability negotiation from the server's real refusal, logprobs in the server's real shape, max_tokens=1
token scores, refusals kept as configuration errors. Protocol only, never the tiny model's judgement.
Uses the tier's `llama_server` / `recorded` fixtures (tests/realmodel/conftest.py)."""

from __future__ import annotations

import pytest

from verdict.extract import TokenProbabilityExtractor
from verdict.graph import Pipeline, UnitError
from verdict.judges import JudgeUnit
from verdict.models.base import Message, ModelError, ModelRequest

# The tier's server and fixtures (tests/realmodel/server.py, conftest.py) come with the tier itself; its
# conftest marks every test here `realmodel`.
pytest.importorskip("tests.realmodel.server", reason="the real-model tier (tests/realmodel/server.py) is not in this tree")

SCHEMA = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
          "required": ["score"], "additionalProperties": False}


def chat(client) -> list[int]:
    """Statuses of the chat calls (the client also reads GET /models once per endpoint and model)."""
    return [status for _call, status in client.posts()]


@pytest.fixture(autouse=True)
def _fresh_capabilities():
    """Each test sees the server's first refusal itself, whatever ran before it in the tier."""
    from verdict.models import openai_model

    openai_model._learned.clear()
    openai_model._probed.clear()


ASK = (Message("system", "You grade answers from 1 (worst) to 5 (best)."),
       Message("user", "Question: What is 2+2?\nAnswer: 4\nReply with only the score."))


def test_default_client_negotiates_json_schema_down_to_the_grammar_form(recorded):
    client = recorded(supports_json_schema=True)
    response = client.model.complete(ModelRequest(ASK, params={"max_tokens": 16, "temperature": 0},
                                                  json_schema=SCHEMA))
    # llama.cpp refuses json_schema with HTTP 500 once; the same call goes on as json_object + schema.
    assert chat(client) == [500, 200]
    assert client.model.structured_output == "json_object_schema" and not client.model.supports_json_schema
    assert response.text.lstrip().startswith("{")  # grammar-constrained: JSON, whatever the model thinks
    client.model.complete(ModelRequest(ASK, params={"max_tokens": 16}, json_schema=SCHEMA))
    assert chat(client) == [500, 200, 200]  # learnt once per endpoint and model


def test_a_prompt_beyond_the_context_teaches_the_window(recorded, llama_server):
    client = recorded()
    with pytest.raises(ModelError) as caught:
        client.model.complete(ModelRequest((Message("user", "word " * 2500),), params={"max_tokens": 2}))
    # The server's own words name the window; the refusal taught it and the retry was not even sent.
    assert caught.value.kind == "bad_request" and str(llama_server.context_tokens) in caught.value.message
    assert chat(client) == [400]
    assert client.model.capabilities.context_length == llama_server.context_tokens
    with pytest.raises(ModelError) as again:  # a prompt as long as the refused one is refused here, unsent
        client.model.complete(ModelRequest((Message("user", "word " * 2600),), params={"max_tokens": 2}))
    assert again.value.kind == "bad_request" and "does not fit" in again.value.message
    assert chat(client) == [400]


def test_json_schema_false_sends_no_json_schema(recorded):
    client = recorded()  # the tier's recommended options: supports_json_schema=False
    client.model.complete(ModelRequest(ASK, params={"max_tokens": 16}, json_schema=SCHEMA))
    assert chat(client) == [200]


def test_logprobs_are_parsed_from_the_servers_shape_and_max_tokens_1_is_a_score(recorded):
    client = recorded()
    response = client.model.complete(ModelRequest(ASK, params={"max_tokens": 1, "temperature": 0}, top_logprobs=5))
    assert response.finish_reason == "length" and response.logprobs is not None and len(response.logprobs) == 1
    assert response.logprobs[0].top  # alternatives parsed
    row = (Pipeline() >> JudgeUnit().extract(TokenProbabilityExtractor(top_logprobs=5))
           .via(client.model, retries=0, max_tokens=1, temperature=0)).run({"answer": "4"})
    if isinstance(row.output, UnitError):  # the first token was not a score: said so, never a score
        assert "truncated" not in row.output.message and "not on the scale" in row.output.message
    else:
        assert row.output.score in range(1, 6)
        assert sum(row.output.score_distribution.values()) == pytest.approx(1.0)
    assert set(chat(client)) == {200}


def test_a_parameter_the_server_refuses_is_one_named_configuration_error(recorded):
    client = recorded()
    with pytest.raises(ModelError) as caught:
        client.model.complete(ModelRequest(ASK, params={"max_tokens": 4, "frequency_penalty": "high"}))
    error = caught.value
    assert (error.kind, error.parameter, error.retryable) == ("unsupported_parameter", "frequency_penalty", False)
    assert "Input should be a valid number" in error.message  # the server's own reason, kept
    assert len(chat(client)) == 1  # not retried


def test_max_concurrency_1_sends_one_request_at_a_time(llama_server):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import openai

    from verdict.models.registry import resolve_model

    events: list[str] = []
    lock = threading.Lock()

    def hook(kind: str):
        def record(_: object) -> None:
            with lock:
                events.append(kind)
        return record

    client = openai.OpenAI(base_url=llama_server.base_url, api_key="not-needed", http_client=openai.DefaultHttpxClient(
        event_hooks={"request": [hook("send")], "response": [hook("answer")]}))
    model = resolve_model(f"{llama_server.model_spec}?max_concurrency=1&timeout=120", client=client)
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda _: model.complete(ModelRequest(ASK, params={"max_tokens": 4})), range(3)))
    chat_events = events[-6:]  # the GET /models read comes first
    assert chat_events == ["send", "answer"] * 3
