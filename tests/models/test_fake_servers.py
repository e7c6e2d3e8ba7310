"""The fake servers speak the real wire formats: the official clients parse every behaviour."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import time

import anthropic
import httpx2
import openai
import pytest
from pydantic import BaseModel

from tests.fakes import Fail, Malformed, Reply, TokenLogprob, ToolCall
from tests.fakes.openai_api import embedding_vector

MESSAGES = [{"role": "user", "content": "How are you today?"}]


class Verdict(BaseModel):
    score: int


def test_chat_plain_records_request(fake_openai):
    fake_openai.enqueue(Reply("all good here", usage=(7, 3)))
    reply = fake_openai.client().chat.completions.create(model="gpt-x", messages=MESSAGES, temperature=0.2)
    assert reply.choices[0].message.content == "all good here"
    assert reply.choices[0].finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (7, 3)
    recorded = fake_openai.last_request
    assert recorded.path == "/v1/chat/completions"
    assert recorded.body["temperature"] == 0.2 and recorded.body["messages"] == MESSAGES
    assert recorded.headers["authorization"] == "Bearer sk-test-fake"


def test_chat_logprobs_scripted_and_cut_to_top_n(fake_openai):
    lps = [TokenLogprob("4", -0.2, (("4", -0.2), ("5", -1.8), ("3", -3.0)))]
    fake_openai.enqueue(Reply(logprobs=lps))
    reply = fake_openai.client().chat.completions.create(model="m", messages=MESSAGES, logprobs=True, top_logprobs=2)
    content = reply.choices[0].logprobs.content
    assert reply.choices[0].message.content == "4"
    assert [(t.token, t.logprob) for t in content[0].top_logprobs] == [("4", -0.2), ("5", -1.8)]


def test_chat_max_tokens_truncates(fake_openai):
    fake_openai.enqueue(Reply("one two three four"))
    reply = fake_openai.client().chat.completions.create(model="m", messages=MESSAGES, max_tokens=2)
    assert reply.choices[0].message.content == "one two "
    assert reply.choices[0].finish_reason == "length"


def test_chat_parse_with_json_schema(fake_openai):
    fake_openai.enqueue(Reply('{"score": 4}'))
    reply = fake_openai.client().chat.completions.parse(model="m", messages=MESSAGES, response_format=Verdict)
    assert reply.choices[0].message.parsed == Verdict(score=4)
    assert fake_openai.last_request.body["response_format"]["type"] == "json_schema"


def test_chat_stream_with_usage_and_logprobs(fake_openai):
    fake_openai.enqueue(Reply("a b c", usage=(5, 3)))
    stream = fake_openai.client().chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}, logprobs=True)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "a b c"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 8
    assert [c.choices[0].logprobs.content[0].token for c in chunks if c.choices and c.choices[0].logprobs] == ["a ", "b ", "c"]


def test_chat_stream_helper_and_tool_calls(fake_openai):
    fake_openai.enqueue(Reply("", tool_calls=[ToolCall("lookup", {"id": 3})]))
    with fake_openai.client().chat.completions.stream(model="m", messages=MESSAGES) as stream:
        final = stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == ("lookup", '{"id": 3}')
    assert final.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize(("mode", "error"), [("disconnect", openai.APIConnectionError), ("error_event", openai.APIError)])
def test_chat_stream_aborts_mid_stream(fake_openai, mode, error):
    fake_openai.enqueue(Reply("a b c d", abort_after=2, abort_mode=mode))
    seen = []
    with pytest.raises(error):
        for chunk in fake_openai.client().chat.completions.create(model="m", messages=MESSAGES, stream=True):
            seen.append(chunk.choices[0].delta.content)
    assert seen == ["", "a ", "b "]


def test_http_failures_map_to_client_errors(fake_openai):
    client = fake_openai.client()
    fake_openai.enqueue(Fail(429, retry_after=7), Fail(500), Malformed())
    with pytest.raises(openai.RateLimitError) as rate:
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert rate.value.response.headers["retry-after"] == "7"
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=MESSAGES)
    with pytest.raises(json.JSONDecodeError):  # the SDK lets the decoder error through
        client.chat.completions.create(model="m", messages=MESSAGES)


def test_slow_reply_times_out(fake_openai):
    fake_openai.enqueue(Reply(latency=2.0))
    with pytest.raises(openai.APITimeoutError):
        fake_openai.client(timeout=0.2).chat.completions.create(model="m", messages=MESSAGES)


def test_handler_and_queue_precedence(fake_openai):
    fake_openai.handler = lambda req: Reply(f"echo {req.body['messages'][-1]['content']}")
    fake_openai.enqueue(Reply("queued"))
    client = fake_openai.client()
    texts = [client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content for _ in range(2)]
    assert texts == ["queued", "echo How are you today?"]
    assert fake_openai.pending == 0 and fake_openai.request_count == 2


def test_responses_plain_stream_and_truncation(fake_openai):
    client = fake_openai.client()
    fake_openai.enqueue(Reply("hi there"), Reply("streamed reply text"), Reply("x y z"))
    assert client.responses.create(model="m", input="hello").output_text == "hi there"
    with client.responses.stream(model="m", input="hello") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == "streamed reply text"
    assert final.usage.output_tokens == 3
    cut = client.responses.create(model="m", input="hello", max_output_tokens=16)
    assert cut.status == "completed"  # 3 tokens fit; truncation below
    fake_openai.enqueue(Reply("one two three"))
    cut = client.responses.create(model="m", input="hello", max_output_tokens=1)
    assert (cut.status, cut.incomplete_details.reason, cut.output_text) == ("incomplete", "max_output_tokens", "one ")


def test_embeddings_float_and_base64(fake_openai):
    client = fake_openai.client()
    default = client.embeddings.create(model="e", input=["x", "y"], dimensions=4)  # SDK asks for base64
    plain = client.embeddings.create(model="e", input="x", dimensions=4, encoding_format="float")
    assert default.data[0].embedding == plain.data[0].embedding == embedding_vector('"x"', 4)
    assert default.data[1].embedding != default.data[0].embedding
    raw = fake_openai.requests[0]
    assert raw.body["encoding_format"] == "base64"
    assert struct.unpack("<4f", base64.b64decode(base64.b64encode(struct.pack("<4f", *plain.data[0].embedding))))


def test_async_client_stream(fake_openai):
    async def run() -> str:
        client = fake_openai.async_client()
        stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in stream])

    fake_openai.enqueue(Reply("async text"))
    assert asyncio.run(run()) == "async text"


# -- Anthropic ------------------------------------------------------------------------------

def test_messages_plain_and_truncation(fake_anthropic):
    client = fake_anthropic.client()
    fake_anthropic.enqueue(Reply("fine thanks", usage=(9, 2)), Reply("one two three"))
    message = client.messages.create(model="claude-x", max_tokens=50, messages=MESSAGES, system="be brief")
    assert (message.content[0].text, message.stop_reason) == ("fine thanks", "end_turn")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (9, 2)
    assert "sk-ant-test-fake" in (fake_anthropic.last_request.headers.get("x-api-key", "")
                                  + fake_anthropic.last_request.headers.get("authorization", ""))
    cut = client.messages.create(model="claude-x", max_tokens=2, messages=MESSAGES)
    assert (cut.content[0].text, cut.stop_reason) == ("one two ", "max_tokens")


def test_messages_stream_helper(fake_anthropic):
    fake_anthropic.enqueue(Reply("streamed words here", usage=(4, 3)))
    with fake_anthropic.client().messages.stream(model="c", max_tokens=50, messages=MESSAGES) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert pieces == ["streamed ", "words ", "here"]
    assert final.content[0].text == "streamed words here"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.stop_reason) == (4, 3, "end_turn")


def test_messages_raw_stream_event_sequence(fake_anthropic):
    stream = fake_anthropic.client().messages.create(model="c", max_tokens=50, messages=MESSAGES, stream=True)
    kinds = [event.type for event in stream]
    assert kinds == ["message_start", "content_block_start", "content_block_delta", "content_block_delta",
                     "content_block_stop", "message_delta", "message_stop"]


def test_messages_forced_tool_turns_json_into_tool_use(fake_anthropic):
    fake_anthropic.enqueue(Reply('{"score": 5}'), Reply('{"score": 2}'))
    tool = {"name": "respond", "input_schema": {"type": "object", "properties": {"score": {"type": "integer"}}}}
    kwargs = {"model": "c", "max_tokens": 50, "messages": MESSAGES, "tools": [tool],
              "tool_choice": {"type": "tool", "name": "respond"}}
    message = fake_anthropic.client().messages.create(**kwargs)
    assert message.content[0].type == "tool_use" and message.content[0].input == {"score": 5}
    assert message.stop_reason == "tool_use"
    with fake_anthropic.client().messages.stream(**kwargs) as stream:
        assert stream.get_final_message().content[0].input == {"score": 2}


@pytest.mark.parametrize(("fail", "error"), [
    (Fail(429, retry_after=3), anthropic.RateLimitError),
    (Fail(529), anthropic.OverloadedError),
    (Fail(500), anthropic.InternalServerError),
])
def test_messages_failures(fake_anthropic, fail, error):
    fake_anthropic.enqueue(fail)
    with pytest.raises(error) as caught:
        fake_anthropic.client().messages.create(model="c", max_tokens=5, messages=MESSAGES)
    assert caught.value.status_code == fail.status


def test_messages_malformed_and_slow(fake_anthropic):
    fake_anthropic.enqueue(Malformed(b"<html>oops</html>", content_type="text/html"), Malformed(), Reply(latency=2.0))
    client = fake_anthropic.client(timeout=0.2)
    # The SDK hands a non-JSON body back as a plain string and lets the JSON decoder error through.
    assert client.messages.create(model="c", max_tokens=5, messages=MESSAGES) == "<html>oops</html>"
    with pytest.raises(json.JSONDecodeError):
        client.messages.create(model="c", max_tokens=5, messages=MESSAGES)
    with pytest.raises(anthropic.APITimeoutError):
        client.messages.create(model="c", max_tokens=5, messages=MESSAGES)


def _caused_by_transport(error: BaseException | None) -> bool:
    while error is not None:
        if isinstance(error, httpx2.TransportError):
            return True
        error = error.__cause__
    return False


@pytest.mark.parametrize("mode", ["disconnect", "error_event"])
def test_messages_stream_aborts(fake_anthropic, mode):
    # The behaviour, not one release's class: anthropic up to 2.16 let the transport error through,
    # 2.17 wraps it in APIConnectionError (from it). Either way the caller sees a failure caused by the
    # dropped connection after the text that did arrive; an error event is a status error.
    fake_anthropic.enqueue(Reply("a b c d", abort_after=1, abort_mode=mode))
    seen: list[str] = []
    with pytest.raises(Exception) as raised, fake_anthropic.client().messages.stream(
            model="c", max_tokens=50, messages=MESSAGES) as stream:
        seen.extend(stream.text_stream)
    assert seen == ["a "]
    if mode == "disconnect":
        assert _caused_by_transport(raised.value), repr(raised.value)
    else:
        assert isinstance(raised.value, anthropic.APIStatusError)


def test_usage_subsets_are_reported(fake_openai, fake_anthropic):
    reply = Reply("x", usage=(50, 9), cache_read_tokens=30, cache_write_tokens=5, reasoning_tokens=4)
    fake_openai.enqueue(reply, reply)
    chat = fake_openai.client().chat.completions.create(model="m", messages=MESSAGES)
    assert (chat.usage.prompt_tokens_details.cached_tokens, chat.usage.completion_tokens_details.reasoning_tokens) == (30, 4)
    response = fake_openai.client().responses.create(model="m", input="hi")
    assert (response.usage.input_tokens_details.cached_tokens, response.usage.output_tokens_details.reasoning_tokens) == (30, 4)
    fake_anthropic.enqueue(reply)
    with fake_anthropic.client().messages.stream(model="c", max_tokens=5, messages=MESSAGES) as stream:
        stream.until_done()
        usage = stream.get_final_message().usage
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (50, 30, 5)


def test_responses_parse_and_raw_response(fake_openai):
    fake_openai.enqueue(Reply('{"score": 3}'), Reply("raw"))
    client = fake_openai.client()
    parsed = client.responses.parse(model="m", input="grade", text_format=Verdict)
    assert parsed.output_parsed == Verdict(score=3)
    raw = client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert raw.headers["x-request-id"] == "req_fake" and raw.parse().choices[0].message.content == "raw"


def test_async_anthropic_stream(fake_anthropic):
    async def run() -> tuple[list[str], str]:
        client = fake_anthropic.async_client()
        async with client.messages.stream(model="c", max_tokens=50, messages=MESSAGES) as stream:
            pieces = [text async for text in stream.text_stream]
            final = await stream.get_final_message()
        return pieces, final.stop_reason

    fake_anthropic.enqueue(Reply("async words"))
    assert asyncio.run(run()) == (["async ", "words"], "end_turn")


def test_chunk_delay_spaces_stream_events(fake_openai):
    fake_openai.enqueue(Reply("a b c", chunk_delay=0.05))
    stamps = [time.monotonic() for _ in fake_openai.client().chat.completions.create(model="m", messages=MESSAGES, stream=True)]
    assert stamps[-1] - stamps[0] >= 0.1  # at least two delays between the first and last chunk
