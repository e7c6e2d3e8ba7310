"""Anthropic messages against the fake server, and the SDK's own OpenTelemetry spans (2.x) on and off."""

from __future__ import annotations

import asyncio
import json

import anthropic
import pytest
from opentelemetry.trace import StatusCode

import verdict.tracing as vt
from tests.fakes import Fail, Malformed, Reply

KW = {"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": "Hello"}]}
NATIVE_SCOPE = "com.anthropic.sdk.python"


def _inference_spans(spans):
    return [s for s in spans if s.kind.name == "CLIENT" and "gen_ai.request.model" in (s.attributes or {})]


@pytest.mark.parametrize("native", ["default", "false"])
@pytest.mark.parametrize("streamed", [False, True], ids=["create", "stream"])
def test_one_inference_span_per_call(fake_anthropic, traced, monkeypatch, native, streamed):
    if native == "false":
        monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")
    else:
        monkeypatch.delenv("ANTHROPIC_OPEN_TELEMETRY", raising=False)
    client = fake_anthropic.client()  # reads the variable when constructed
    if streamed:
        with client.messages.stream(**KW) as stream:
            stream.until_done()
    else:
        client.messages.create(**KW)
    spans = _inference_spans(traced.all_spans())
    assert [s.instrumentation_scope.name for s in spans] == ["verdict.tracing"]
    assert traced.one().attributes["gen_ai.usage.output_tokens"] == 2


def test_native_span_exists_without_verdict(fake_anthropic, traced, monkeypatch):
    """The control for the test above: uninstrumented, the SDK emits its own span (so suppression is real)."""
    monkeypatch.delenv("ANTHROPIC_OPEN_TELEMETRY", raising=False)
    vt.uninstrument()
    fake_anthropic.client().messages.create(**KW)
    scopes = [s.instrumentation_scope.name for s in _inference_spans(traced.all_spans())]
    assert scopes == [NATIVE_SCOPE]


def test_message_span_shape_and_content(fake_anthropic, traced):
    fake_anthropic.enqueue(Reply("Hi there", usage=(9, 2)))
    message = fake_anthropic.client().messages.create(
        **{**KW, "system": "Be kind.", "stop_sequences": ["END"]}
    )
    assert type(message) is anthropic.types.Message
    span = traced.one()
    a = span.attributes
    assert span.name == "chat claude-test"
    assert a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.request.max_tokens"] == 100
    assert a["gen_ai.request.stop_sequences"] == ("END",)
    assert a["gen_ai.response.id"] == message.id
    assert a["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert a["gen_ai.usage.input_tokens"] == 9
    assert a["gen_ai.usage.output_tokens"] == 2
    assert json.loads(a["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be kind."}]
    assert json.loads(a["gen_ai.input.messages"]) == [{"role": "user", "parts": [{"type": "text", "content": "Hello"}]}]
    assert json.loads(a["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Hi there"}], "finish_reason": "end_turn"}
    ]


def test_async_create(fake_anthropic, traced):
    message = asyncio.run(fake_anthropic.async_client().messages.create(**KW))
    assert traced.attrs()["gen_ai.response.id"] == message.id


def _sse(*events):
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def test_stream_usage_with_cache_is_counted_once(fake_anthropic, traced):
    usage_start = {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 200,
                   "cache_creation_input_tokens": 30}
    body = _sse(
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                                              "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage_start}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    )
    fake_anthropic.enqueue(Malformed(body=body, content_type="text/event-stream"))
    events = list(fake_anthropic.client().messages.create(**KW, stream=True))
    assert len(events) == 7
    a = traced.attrs()
    assert a["gen_ai.usage.input_tokens"] == 240  # 10 + cache read 200 + cache write 30
    assert a["gen_ai.usage.cache_read.input_tokens"] == 200
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 30
    assert a["gen_ai.usage.output_tokens"] == 7  # cumulative in message_delta, not 1 + 7
    assert json.loads(a["gen_ai.output.messages"])[0]["parts"] == [{"type": "text", "content": "Hello"}]


def test_overloaded_error(fake_anthropic, traced):
    fake_anthropic.enqueue(Fail(529, "overloaded"))
    with pytest.raises(anthropic.APIStatusError):
        fake_anthropic.client().messages.create(**KW)
    span = traced.one()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "anthropic.OverloadedError"


def test_tool_use_in_content(fake_anthropic, traced):
    fake_anthropic.enqueue(Reply('{"city": "Paris"}'))
    fake_anthropic.client().messages.create(
        **KW,
        tools=[{"name": "lookup", "description": "d", "input_schema": {"type": "object"}}],
        tool_choice={"type": "tool", "name": "lookup"},
    )
    part = json.loads(traced.attrs()["gen_ai.output.messages"])[0]["parts"][0]
    assert part["type"] == "tool_call" and part["name"] == "lookup" and part["arguments"] == {"city": "Paris"}


def test_with_raw_response(fake_anthropic, traced):
    raw = fake_anthropic.client().messages.with_raw_response.create(**KW)
    assert raw.headers["content-type"].startswith("application/json")
    message = raw.parse()
    assert traced.attrs()["gen_ai.response.id"] == message.id


def test_async_with_raw_response(fake_anthropic, traced, recwarn):
    async def main():
        raw = await fake_anthropic.async_client().messages.with_raw_response.create(**KW)
        first = await raw.parse()
        assert await raw.parse() is first  # the SDK's cache: Verdict parsed it, the app gets the same object
        return raw, first

    raw, message = asyncio.run(main())
    assert raw.headers["content-type"].startswith("application/json")
    a = traced.attrs()
    assert a["gen_ai.response.id"] == message.id
    assert a["gen_ai.usage.output_tokens"] == message.usage.output_tokens
    assert vt.stats().errors == {}
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_raw_streamed_response(fake_anthropic, traced, is_async):
    fake_anthropic.default = Reply("a b c")

    async def run_async():
        raw = await fake_anthropic.async_client().messages.with_raw_response.create(**KW, stream=True)
        return [e async for e in await raw.parse()]

    def run():
        raw = fake_anthropic.client().messages.with_raw_response.create(**KW, stream=True)
        return list(raw.parse())

    events = asyncio.run(run_async()) if is_async else run()
    assert "".join(e.delta.text for e in events if e.type == "content_block_delta").split() == ["a", "b", "c"]
    a = traced.attrs()
    assert a["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert a["gen_ai.usage.output_tokens"] == 3
    assert json.loads(a["gen_ai.output.messages"])[0]["parts"] == [{"type": "text", "content": "a b c"}]


@pytest.mark.parametrize("native", ["default", "false"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_messages_parse_is_one_inference_span(fake_anthropic, traced, monkeypatch, native, is_async):
    from pydantic import BaseModel

    class City(BaseModel):
        name: str

    if native == "false":
        monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")
    else:
        monkeypatch.delenv("ANTHROPIC_OPEN_TELEMETRY", raising=False)
    fake_anthropic.enqueue(Reply('{"name": "Paris"}', usage=(5, 3)))
    kwargs = {**KW, "output_format": City}
    if is_async:
        message = asyncio.run(fake_anthropic.async_client().messages.parse(**kwargs))
    else:
        message = fake_anthropic.client().messages.parse(**kwargs)
    assert message.parsed_output == City(name="Paris")
    assert [s.instrumentation_scope.name for s in _inference_spans(traced.all_spans())] == ["verdict.tracing"]
    a = traced.attrs()
    assert a["gen_ai.response.id"] == message.id
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (5, 3)


@pytest.mark.parametrize("native", ["default", "false"])
def test_one_inference_span_per_async_call(fake_anthropic, traced, monkeypatch, native):
    if native == "false":
        monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")
    else:
        monkeypatch.delenv("ANTHROPIC_OPEN_TELEMETRY", raising=False)

    async def main():
        client = fake_anthropic.async_client()
        await client.messages.create(**KW)
        async with client.messages.stream(**KW) as stream:
            await stream.until_done()

    asyncio.run(main())
    spans = _inference_spans(traced.all_spans())
    assert [s.instrumentation_scope.name for s in spans] == ["verdict.tracing"] * 2
    assert [s.attributes["gen_ai.usage.output_tokens"] for s in traced.spans()] == [2, 2]


def test_inside_another_genai_span_neither_verdict_nor_the_sdk_adds_one(fake_anthropic, traced, monkeypatch):
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    monkeypatch.delenv("ANTHROPIC_OPEN_TELEMETRY", raising=False)
    tracer = trace.get_tracer("other.genai.instrumentation")
    with tracer.start_as_current_span("chat claude-test", kind=SpanKind.CLIENT,
                                      attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "c"}):
        fake_anthropic.client().messages.create(**KW)
    scopes = [s.instrumentation_scope.name for s in _inference_spans(traced.all_spans())]
    assert scopes == ["other.genai.instrumentation"]
