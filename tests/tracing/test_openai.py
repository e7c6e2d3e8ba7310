"""OpenAI surfaces against the fake server: span shape, errors, Responses API, embeddings, raw responses,
content capture and redaction."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from opentelemetry.trace import SpanKind, StatusCode

import verdict.tracing as vt
from tests.fakes import Fail, Malformed, Reply, ToolCall

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 2+2?"},
]


def test_chat_span_shape(fake_openai, traced):
    client = fake_openai.client()
    fake_openai.enqueue(Reply("four", usage=(11, 1)))
    result = client.chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, temperature=0.25, max_tokens=20, top_p=0.5, seed=7,
        stop=["\n\n"], frequency_penalty=0.1, presence_penalty=0.2,
    )
    assert type(result) is openai.types.chat.ChatCompletion
    span = traced.one()
    a = span.attributes
    assert span.name == "chat gpt-4o-mini"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "openai"
    assert "gen_ai.system" not in a
    assert a["gen_ai.request.model"] == "gpt-4o-mini"
    assert a["gen_ai.request.temperature"] == 0.25
    assert a["gen_ai.request.max_tokens"] == 20
    assert a["gen_ai.request.top_p"] == 0.5
    assert a["gen_ai.request.seed"] == 7
    assert a["gen_ai.request.stop_sequences"] == ("\n\n",)
    assert a["gen_ai.request.frequency_penalty"] == 0.1
    assert a["gen_ai.request.presence_penalty"] == 0.2
    assert a["gen_ai.request.stream"] is False
    assert a["server.address"] == "127.0.0.1"
    assert a["server.port"] == int(fake_openai.url.rsplit(":", 1)[1])
    assert a["gen_ai.response.id"] == result.id
    assert a["gen_ai.response.model"] == result.model
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert a["gen_ai.usage.input_tokens"] == 11
    assert a["gen_ai.usage.output_tokens"] == 1
    inputs = json.loads(a["gen_ai.input.messages"])
    assert inputs == [
        {"role": "system", "parts": [{"type": "text", "content": "You are terse."}]},
        {"role": "user", "parts": [{"type": "text", "content": "What is 2+2?"}]},
    ]
    assert json.loads(a["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "four"}], "finish_reason": "stop"}
    ]


def test_deprecated_system_only_on_opt_in(fake_openai, restart, monkeypatch):
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai/dup")
    traced = restart()
    fake_openai.client().chat.completions.create(model="m", messages=MESSAGES)
    assert traced.attrs()["gen_ai.system"] == "openai"


def test_cached_and_reasoning_usage(fake_openai, traced):
    body = {
        "id": "chatcmpl-u", "object": "chat.completion", "created": 1, "model": "o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                  "prompt_tokens_details": {"cached_tokens": 100},
                  "completion_tokens_details": {"reasoning_tokens": 25}},
    }
    fake_openai.enqueue(Malformed(body=json.dumps(body).encode()))
    fake_openai.client().chat.completions.create(model="o-mini", messages=MESSAGES)
    a = traced.attrs()
    assert a["gen_ai.usage.input_tokens"] == 120  # cached included
    assert a["gen_ai.usage.cache_read.input_tokens"] == 100
    assert a["gen_ai.usage.output_tokens"] == 30
    assert a["gen_ai.usage.reasoning.output_tokens"] == 25


@pytest.mark.parametrize(
    ("status", "expected"),
    [(429, "openai.RateLimitError"), (500, "openai.InternalServerError"), (401, "openai.AuthenticationError")],
)
def test_provider_errors_are_identical_and_typed(fake_openai, traced, status, expected):
    client = fake_openai.client()
    raised = []
    for instrumented in (False, True):
        (vt.instrument if instrumented else vt.uninstrument)()
        fake_openai.enqueue(Fail(status, "nope"))
        with pytest.raises(openai.APIStatusError) as info:
            client.chat.completions.create(model="m", messages=MESSAGES)
        raised.append((type(info.value), info.value.status_code, str(info.value)))
    assert raised[0] == raised[1]
    span = traced.one()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == expected
    assert "gen_ai.output.messages" not in span.attributes


def test_malformed_body_raises_as_uninstrumented(fake_openai, traced):
    outcomes: list[str | type[Exception]] = []
    for instrumented in (False, True):
        (vt.instrument if instrumented else vt.uninstrument)()
        fake_openai.enqueue(Malformed(body=b'{"id": "broken", '))
        try:
            outcomes.append(repr(fake_openai.client().chat.completions.create(model="m", messages=MESSAGES)))
        except Exception as exc:  # whatever the SDK does, Verdict must do the same
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]
    span = traced.one()
    if isinstance(outcomes[1], type):  # the SDK raised: the span says which error
        assert span.status.status_code is StatusCode.ERROR
        # Outside the provider SDKs the fully qualified name: json.decoder.JSONDecodeError
        assert span.attributes["error.type"] == f"{outcomes[1].__module__}.{outcomes[1].__qualname__}"
    else:
        assert span.status.status_code is StatusCode.UNSET


def test_tool_calls_in_content(fake_openai, traced):
    fake_openai.enqueue(Reply("", tool_calls=(ToolCall("lookup", {"city": "Paris"}, id="call_1"),)))
    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": '{"city": "Rome"}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
    ]
    fake_openai.client().chat.completions.create(model="m", messages=messages)
    a = traced.attrs()
    inputs = json.loads(a["gen_ai.input.messages"])
    assert inputs[1]["parts"] == [{"type": "tool_call", "name": "lookup", "id": "call_0", "arguments": {"city": "Rome"}}]
    assert inputs[2] == {"role": "tool", "parts": [{"type": "tool_call_response", "response": "sunny", "id": "call_0"}]}
    output = json.loads(a["gen_ai.output.messages"])[0]
    assert output["parts"][-1]["name"] == "lookup"
    assert output["parts"][-1]["arguments"] == {"city": "Paris"}
    assert a["gen_ai.response.finish_reasons"] == ("tool_calls",)


def test_parse(fake_openai, traced):
    from pydantic import BaseModel

    class Answer(BaseModel):
        value: int

    fake_openai.enqueue(Reply('{"value": 4}'))
    parsed = fake_openai.client().chat.completions.parse(model="m", messages=MESSAGES, response_format=Answer)
    assert parsed.choices[0].message.parsed == Answer(value=4)
    assert traced.one().name == "chat m"


def test_with_raw_response_keeps_parse_and_headers(fake_openai, traced):
    raw = fake_openai.client().chat.completions.with_raw_response.create(model="raw", messages=MESSAGES)
    assert raw.headers["content-type"].startswith("application/json")
    completion = raw.parse()
    assert completion.choices[0].message.content == "fake reply"
    assert raw.parse() is completion
    a = traced.attrs()
    assert a["gen_ai.response.id"] == completion.id
    assert a["gen_ai.usage.output_tokens"] == completion.usage.completion_tokens


def test_responses_create_and_parse_sync_async(fake_openai, traced):
    client, aclient = fake_openai.client(), fake_openai.async_client()
    r1 = client.responses.create(model="r1", input="hello there", instructions="Be brief.", max_output_tokens=50)
    r2 = asyncio.run(aclient.responses.create(model="r2", input=[{"role": "user", "content": "hi"}]))
    r3 = client.responses.parse(model="r3", input="x")
    r4 = asyncio.run(fake_openai.async_client().responses.parse(model="r4", input="x"))
    assert r1.output_text == r2.output_text == r3.output_text == r4.output_text == "fake reply"
    spans = {s.name: s.attributes for s in traced.spans()}
    assert set(spans) == {"chat r1", "chat r2", "chat r3", "chat r4"}
    assert spans["chat r4"]["gen_ai.response.id"] == r4.id
    a = spans["chat r1"]
    assert a["gen_ai.request.max_tokens"] == 50
    assert a["gen_ai.response.id"] == r1.id
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert json.loads(a["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]
    assert json.loads(a["gen_ai.input.messages"]) == [{"role": "user", "parts": [{"type": "text", "content": "hello there"}]}]
    assert json.loads(a["gen_ai.output.messages"])[0]["parts"] == [{"type": "text", "content": "fake reply"}]


def test_responses_incomplete_is_length(fake_openai, traced):
    fake_openai.enqueue(Reply("a b c d e f"))
    fake_openai.client().responses.create(model="r", input="x", max_output_tokens=2)
    assert traced.attrs()["gen_ai.response.finish_reasons"] == ("length",)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_responses_stream(fake_openai, traced, is_async):
    fake_openai.default = Reply("alpha beta")

    async def run_async():
        client = fake_openai.async_client()
        async with client.responses.stream(model="rs", input="x") as stream:
            async for _ in stream:
                pass
            return await stream.get_final_response()

    def run():
        with fake_openai.client().responses.stream(model="rs", input="x") as stream:
            for _ in stream:
                pass
            return stream.get_final_response()

    final = asyncio.run(run_async()) if is_async else run()
    a = traced.attrs()
    assert a["gen_ai.response.id"] == final.id
    assert a["gen_ai.request.stream"] is True
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert a["gen_ai.usage.output_tokens"] == 2
    assert a["gen_ai.response.time_to_first_chunk"] > 0
    assert json.loads(a["gen_ai.output.messages"])[0]["parts"][0]["content"] == "alpha beta"


def test_responses_stream_cut_short_keeps_partial_text(fake_openai, traced):
    fake_openai.default = Reply("alpha beta gamma", abort_after=1)
    with pytest.raises(openai.APIError):
        for _ in fake_openai.client().responses.create(model="rs", input="x", stream=True):
            pass
    span = traced.one()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["gen_ai.response.finish_reasons"] == ("error",)
    assert "alpha" in json.loads(span.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"]


def test_embeddings(fake_openai, traced):
    result = fake_openai.client().embeddings.create(model="text-embedding-3-small", input="hello", dimensions=4)
    assert len(result.data[0].embedding) == 4
    span = traced.one()
    assert span.name == "embeddings text-embedding-3-small"
    assert span.attributes["gen_ai.operation.name"] == "embeddings"
    assert span.attributes["gen_ai.embeddings.dimension.count"] == 4
    assert span.attributes["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens
    assert "gen_ai.input.messages" not in span.attributes


def test_async_embeddings(fake_openai, traced):
    asyncio.run(fake_openai.async_client().embeddings.create(model="emb", input=["a", "b"]))
    assert traced.one().name == "embeddings emb"


def test_content_is_redacted_and_never_carries_api_key(fake_openai, traced):
    secret = "sk-proj-abcDEF1234567890abcdefGHIJ1234567890"
    client = fake_openai.client(api_key="sk-the-client-api-key-1234567890")
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"my key is {secret}"}],
                                   extra_headers={"x-upstream-token": "hdr-value-4711"})
    assert fake_openai.last_request.headers["x-upstream-token"] == "hdr-value-4711"  # it was sent
    span = traced.one()
    serialized = json.dumps(dict(span.attributes))
    assert secret not in serialized
    assert "sk-the-client-api-key" not in serialized and "hdr-value-4711" not in serialized
    assert "my key is <" in span.attributes["gen_ai.input.messages"]


def test_capture_content_false(fake_openai, restart):
    traced = restart(capture_content=False)
    fake_openai.client().chat.completions.create(model="m", messages=MESSAGES)
    a = traced.attrs()
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert not {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"} & set(a)


def test_no_content_env(fake_openai, restart, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
    traced = restart()
    fake_openai.client().chat.completions.create(model="m", messages=MESSAGES)
    assert "gen_ai.input.messages" not in traced.attrs()


def test_large_content_truncated_keeping_structure(fake_openai, restart):
    traced = restart(max_content_bytes=2048)
    long = "word " * 5000
    messages = [{"role": "user", "content": long}, {"role": "assistant", "content": long}, {"role": "user", "content": "end"}]
    fake_openai.client().chat.completions.create(model="m", messages=messages)
    raw = traced.attrs()["gen_ai.input.messages"]
    assert len(raw.encode()) <= 2048
    parsed = json.loads(raw)
    assert [m["role"] for m in parsed] == ["user", "assistant", "user"]
    assert parsed[0]["parts"][0]["content"].endswith("…[truncated]")
    assert parsed[2]["parts"][0]["content"] == "end"


def test_app_mutating_messages_after_the_call_does_not_change_the_span(fake_openai, traced):
    messages = [{"role": "user", "content": "first"}]
    fake_openai.client().chat.completions.create(model="m", messages=messages)
    messages.append({"role": "assistant", "content": "appended later"})
    assert "appended later" not in traced.attrs()["gen_ai.input.messages"]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_raw_streamed_response_is_observed_to_its_end(fake_openai, traced, is_async):
    fake_openai.default = Reply("a b c")
    kwargs = {"model": "rawstream", "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}}

    async def run_async():
        raw = await fake_openai.async_client().chat.completions.with_raw_response.create(**kwargs)
        assert traced.spans() == []  # open until the app has read the stream
        stream = raw.parse()
        assert raw.parse() is stream and type(stream) is openai.AsyncStream
        return raw, [c async for c in stream]

    def run():
        raw = fake_openai.client().chat.completions.with_raw_response.create(**kwargs)
        assert traced.spans() == []
        stream = raw.parse()
        assert raw.parse() is stream and type(stream) is openai.Stream
        return raw, list(stream)

    raw, chunks = asyncio.run(run_async()) if is_async else run()
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).split() == ["a", "b", "c"]
    a = traced.attrs()
    assert a["gen_ai.request.stream"] is True
    assert a["gen_ai.response.id"] == chunks[0].id
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert a["gen_ai.usage.output_tokens"] == chunks[-1].usage.completion_tokens == 3
    assert a["gen_ai.response.time_to_first_chunk"] > 0
    assert json.loads(a["gen_ai.output.messages"])[0]["parts"] == [{"type": "text", "content": "a b c"}]


def test_raw_streamed_response_never_parsed_ends_at_gc(fake_openai, traced):
    import gc

    raw = fake_openai.client().chat.completions.with_raw_response.create(model="m", messages=MESSAGES, stream=True)
    del raw
    gc.collect()
    span = traced.one()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "_OTHER"


def test_with_streaming_response(fake_openai, traced):
    with fake_openai.client().chat.completions.with_streaming_response.create(model="sr", messages=MESSAGES) as r:
        assert r.parse().choices[0].message.content == "fake reply"
    assert traced.one().name == "chat sr"


def test_custom_redaction_rule_hook_and_credential_arguments(fake_openai, restart):
    from verdict.redact import Redactor

    seen = []

    def hook(value):
        seen.append(value)
        return value

    traced = restart(redactor=Redactor(extra_patterns={"TICKET": r"TCK-\d{6}"}, hook=hook))
    messages = [
        {"role": "user", "content": "status of TCK-123456?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "login", "arguments": '{"user": "bob", "password": "hunter2-very-secret"}'}}]},
    ]
    fake_openai.client().chat.completions.create(model="m", messages=messages)
    raw = traced.attrs()["gen_ai.input.messages"]
    assert "TCK-123456" not in raw and "<TICKET>" in raw
    assert "hunter2-very-secret" not in raw
    assert json.loads(raw)[1]["parts"][0]["arguments"]["user"] == "bob"
    assert len(seen) == 1 and "gen_ai.input.messages" in seen[0]  # the hook sees the structure once


def test_default_redactor_on_tool_arguments_and_results(fake_openai, traced):
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "login", "arguments": '{"user": "bob", "api_key": "abc123", "note": "call +44 20 7946 0958"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sent to jane.doe@example.com"},
    ]
    fake_openai.client().chat.completions.create(model="m", messages=messages)
    raw = traced.attrs()["gen_ai.input.messages"]
    for secret in ("abc123", "7946 0958", "jane.doe@example.com"):
        assert secret not in raw
    parsed = json.loads(raw)
    assert parsed[0]["parts"][0]["arguments"]["user"] == "bob"
    assert parsed[0]["parts"][0]["name"] == "login"


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_streaming_response_of_a_stream_is_observed(fake_openai, traced, is_async):
    fake_openai.default = Reply("x y")
    kwargs = {"model": "srs", "messages": MESSAGES, "stream": True}

    async def run_async():
        client = fake_openai.async_client()
        async with client.chat.completions.with_streaming_response.create(**kwargs) as r:
            return [c async for c in await r.parse()]

    def run():
        with fake_openai.client().chat.completions.with_streaming_response.create(**kwargs) as r:
            return list(r.parse())

    chunks = asyncio.run(run_async()) if is_async else run()
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "x y"
    a = traced.attrs()
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert json.loads(a["gen_ai.output.messages"])[0]["parts"] == [{"type": "text", "content": "x y"}]
