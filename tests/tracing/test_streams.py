"""The streaming matrix, sync and async, OpenAI chat completions and Anthropic messages, against the
fake servers over loopback with the real SDK clients."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

import verdict.tracing as vt
from tests.fakes import Reply

PROVIDERS = ["openai", "anthropic"]
TEXT = "one two three four"


def _server(request: pytest.FixtureRequest, provider: str) -> Any:
    return request.getfixturevalue(f"fake_{provider}")


def _create(provider: str, client: Any, model: str = "m-stream") -> Any:
    """Start a streamed call; for async clients returns a coroutine."""
    if provider == "openai":
        return client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "count"}], stream=True,
            stream_options={"include_usage": True},
        )
    return client.messages.create(
        model=model, max_tokens=64, messages=[{"role": "user", "content": "count"}], stream=True
    )


def _texts(provider: str, items: list[Any]) -> str:
    if provider == "openai":
        return "".join(c.choices[0].delta.content or "" for c in items if c.choices)
    return "".join(e.delta.text for e in items if e.type == "content_block_delta")


def _output_text(span: Any) -> str:
    messages = json.loads(span.attributes["gen_ai.output.messages"])
    return "".join(p.get("content", "") for m in messages for p in m["parts"])


def _finished(provider: str) -> str:
    return "stop" if provider == "openai" else "end_turn"


def _run(coro_or_value: Any) -> Any:
    return asyncio.run(coro_or_value) if asyncio.iscoroutine(coro_or_value) else coro_or_value


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
class TestStreamingMatrix:
    def _client(self, request: pytest.FixtureRequest, provider: str, is_async: bool) -> tuple[Any, Any]:
        server = _server(request, provider)
        server.default = Reply(TEXT)
        return server, (server.async_client() if is_async else server.client())

    def test_full_drain(self, request, traced, provider, is_async):
        _, client = self._client(request, provider, is_async)

        async def drain_async():
            stream = await _create(provider, client)
            return [item async for item in stream]

        items = _run(drain_async()) if is_async else list(_create(provider, client))
        assert _texts(provider, items).split() == TEXT.split()
        span = traced.one()
        assert span.status.status_code is StatusCode.UNSET
        assert span.attributes["gen_ai.response.finish_reasons"] == (_finished(provider),)
        assert span.attributes["gen_ai.usage.output_tokens"] == 4
        assert span.attributes["gen_ai.usage.input_tokens"] >= 1
        assert span.attributes["gen_ai.response.time_to_first_chunk"] > 0
        assert span.attributes["gen_ai.request.stream"] is True
        assert _output_text(span).split() == TEXT.split()

    def test_break_inside_with(self, request, traced, provider, is_async):
        _, client = self._client(request, provider, is_async)

        async def take_one_async():
            async with await _create(provider, client) as stream:
                async for _ in stream:
                    break
                assert traced.spans() == []  # still open inside the block

        if is_async:
            _run(take_one_async())
        else:
            with _create(provider, client) as stream:
                for _ in stream:
                    break
                assert traced.spans() == []
        span = traced.one()
        assert span.status.status_code is StatusCode.UNSET
        assert span.attributes["gen_ai.response.finish_reasons"] == ("error",)
        assert "error.type" not in span.attributes

    def test_close_without_with(self, request, traced, provider, is_async):
        _, client = self._client(request, provider, is_async)

        async def close_async():
            stream = await _create(provider, client)
            await stream.__anext__()
            await stream.close()

        if is_async:
            _run(close_async())
        else:
            stream = _create(provider, client)
            next(stream)
            stream.close()
        span = traced.one()
        assert span.attributes["gen_ai.response.finish_reasons"] == ("error",)
        assert span.status.status_code is StatusCode.UNSET

    def test_never_iterated_ends_at_gc(self, request, traced, provider, is_async):
        _, client = self._client(request, provider, is_async)

        async def drop_async():
            stream = await _create(provider, client)
            del stream

        if is_async:
            _run(drop_async())
        else:
            stream = _create(provider, client)
            del stream
        gc.collect()
        span = traced.one()
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "_OTHER"

    def test_exception_mid_stream_keeps_partial_output(self, request, traced, provider, is_async):
        server, client = self._client(request, provider, is_async)
        server.default = Reply(TEXT, abort_after=2)

        async def consume_async(seen):
            async for item in await _create(provider, client):
                seen.append(item)

        def consume(seen):
            for item in _create(provider, client):
                seen.append(item)

        errors = []
        for instrumented in (False, True):
            client = server.async_client() if is_async else client
            (vt.instrument if instrumented else vt.uninstrument)()
            seen: list[Any] = []
            with pytest.raises(Exception) as info:
                _run(consume_async(seen)) if is_async else consume(seen)
            errors.append((type(info.value), str(info.value), _texts(provider, seen)))
        assert errors[0] == errors[1]  # same exception, same chunks, with or without Verdict
        span = traced.one()
        assert span.status.status_code is StatusCode.ERROR
        exc_type = errors[1][0]
        assert span.attributes["error.type"] == f"{exc_type.__module__.split('.')[0]}.{exc_type.__name__}"
        assert _output_text(span) == errors[1][2]
        assert errors[1][2].split() == TEXT.split()[:2]

    def test_chunks_and_types_identical_to_uninstrumented(self, request, traced, provider, is_async):
        server, client = self._client(request, provider, is_async)

        async def collect_async():
            # A fresh client per event loop: pooled connections belong to the loop that opened them.
            stream = await _create(provider, server.async_client())
            return type(stream), [item async for item in stream]

        def collect():
            stream = _create(provider, client)
            return type(stream), list(stream)

        runs = []
        for instrumented in (False, True):
            (vt.instrument if instrumented else vt.uninstrument)()
            stream_type, items = _run(collect_async()) if is_async else collect()
            runs.append((stream_type, [(type(i), _strip_ids(i.model_dump())) for i in items]))
        assert runs[0] == runs[1]
        assert len(traced.spans()) == 1


def _strip_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_ids(v) for k, v in value.items() if k not in ("id", "created")}
    if isinstance(value, list):
        return [_strip_ids(v) for v in value]
    return value


@pytest.mark.parametrize("provider", PROVIDERS)
def test_async_stream_consumed_in_another_task(request, traced, provider, caplog):
    server = _server(request, provider)
    server.default = Reply(TEXT)
    client = server.async_client()

    async def main():
        stream = await _create(provider, client)

        async def consume():
            return [item async for item in stream]

        return await asyncio.create_task(consume())

    with caplog.at_level(logging.ERROR):
        items = asyncio.run(main())
    assert _texts(provider, items).split() == TEXT.split()
    assert "Failed to detach context" not in caplog.text
    assert traced.one().attributes["gen_ai.response.finish_reasons"] == (_finished(provider),)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_span_is_not_current_after_create_returns_a_stream(request, traced, provider):
    server = _server(request, provider)
    tracer = trace.get_tracer("test.app")
    with tracer.start_as_current_span("app.request") as parent:
        stream = _create(provider, server.client())
        assert trace.get_current_span() is parent
        list(stream)
    span = traced.one()
    assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_openai_stream_helper(fake_openai, traced, is_async):
    fake_openai.default = Reply(TEXT)

    async def run_async():
        client = fake_openai.async_client()
        async with client.chat.completions.stream(model="helper", messages=[{"role": "user", "content": "x"}]) as s:
            async for _ in s:
                pass
            return await s.get_final_completion()

    def run():
        with fake_openai.client().chat.completions.stream(
            model="helper", messages=[{"role": "user", "content": "x"}]
        ) as s:
            for _ in s:
                pass
            return s.get_final_completion()

    final = _run(run_async()) if is_async else run()
    assert final.choices[0].message.content == TEXT
    span = traced.one()
    assert span.name == "chat helper"
    assert span.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert _output_text(span) == TEXT


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("helper", ["text_stream", "get_final_message", "until_done", "break"])
def test_anthropic_stream_manager(fake_anthropic, traced, is_async, helper):
    fake_anthropic.default = Reply(TEXT)
    kwargs: dict[str, Any] = {"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]}
    uses: dict[str, Callable[[Any], Any]] = {
        "text_stream": lambda s: "".join(s.text_stream),
        "get_final_message": lambda s: s.get_final_message().content[0].text,
        "until_done": lambda s: s.until_done(),
        "break": lambda s: next(iter(s)),
    }

    async def use_async(s):
        if helper == "text_stream":
            return "".join([t async for t in s.text_stream])
        if helper == "get_final_message":
            return (await s.get_final_message()).content[0].text
        if helper == "until_done":
            return await s.until_done()
        return await s.__anext__()

    async def run_async():
        async with fake_anthropic.async_client().messages.stream(**kwargs) as s:
            return await use_async(s)

    def run():
        with fake_anthropic.client().messages.stream(**kwargs) as s:
            return uses[helper](s)

    result = _run(run_async()) if is_async else run()
    if helper in ("text_stream", "get_final_message"):
        assert result == TEXT
    span = traced.one()
    assert span.name == "chat claude-x"
    assert span.attributes["gen_ai.request.stream"] is True
    expected = ("error",) if helper == "break" else ("end_turn",)
    assert span.attributes["gen_ai.response.finish_reasons"] == expected
    if helper != "break":
        assert span.attributes["gen_ai.usage.output_tokens"] == 4


@pytest.mark.parametrize("provider", PROVIDERS)
def test_time_to_first_chunk_counts_from_the_request(request, traced, provider):
    """Measured from the call, not from when create() returned: the server's latency before the
    first byte is inside it, the delays between later chunks are not. Lower bounds only."""
    server = _server(request, provider)
    server.default = Reply(TEXT, latency=0.05, chunk_delay=0.02)
    list(_create(provider, server.client()))
    span = traced.one()
    ttfc = span.attributes["gen_ai.response.time_to_first_chunk"]
    duration = (span.end_time - span.start_time) / 1e9
    assert ttfc >= 0.05
    assert ttfc + 0.04 <= duration  # at least three more chunks, 0.02 s apart, came after the first


def _chat_sse(*chunks: dict[str, Any]) -> bytes:
    base = {"id": "chatcmpl-n", "object": "chat.completion.chunk", "created": 1, "model": "m-n"}
    body = "".join(f"data: {json.dumps({**base, **c})}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return body.encode()


def test_choice_that_never_finished_is_error(fake_openai, traced):
    from tests.fakes import Malformed

    def choice(index: int, text: str, finish: str | None = None) -> dict[str, Any]:
        return {"index": index, "delta": {"content": text}, "finish_reason": finish}

    fake_openai.enqueue(Malformed(body=_chat_sse(
        {"choices": [choice(0, "a"), choice(1, "b")]},
        {"choices": [choice(0, "", "stop")]},
    ), content_type="text/event-stream"))
    chunks = list(fake_openai.client().chat.completions.create(model="m-n", messages=[{"role": "user", "content": "x"}],
                                                              n=2, stream=True))
    assert len(chunks) == 2
    a = traced.attrs()
    assert a["gen_ai.request.choice.count"] == 2
    assert a["gen_ai.response.finish_reasons"] == ("stop", "error")
    assert [(m["parts"][0]["content"], m["finish_reason"]) for m in json.loads(a["gen_ai.output.messages"])] == [
        ("a", "stop"), ("b", "error")]
