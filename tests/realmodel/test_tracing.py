"""Tracing through the real `openai` client against llama.cpp: a plain call, a stream and a call inside
`intent_context` each become one span with what the server really sent (model, finish reason, content,
tokens). Protocol only: the tiny model's words are whatever it says."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import openai

import verdict.tracing as vt
from verdict.semconv import INTENT_KEY

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

QUESTION: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Name one colour."}]


def _output_text(span) -> str:
    (message,) = json.loads(span.attributes["gen_ai.output.messages"])
    return "".join(part.get("content", "") for part in message["parts"])


def test_plain_streamed_and_intent_calls_are_traced_as_the_server_answered(llama_server, traced):
    client = openai.OpenAI(base_url=llama_server.base_url, api_key="not-needed")
    plain = client.chat.completions.create(model=llama_server.model, messages=QUESTION, max_tokens=8,
                                           temperature=0, seed=1)
    chunks = list(client.chat.completions.create(model=llama_server.model, messages=QUESTION, max_tokens=8,
                                                 temperature=0, seed=1, stream=True))
    with vt.intent_context("realmodel.colour.v1"):
        scoped = client.chat.completions.create(model=llama_server.model, messages=QUESTION, max_tokens=8,
                                                temperature=0, seed=1)
    spans = sorted(traced.spans(), key=lambda s: s.start_time)
    assert len(spans) == 3
    first, streamed, in_intent = spans

    for span, completion in ((first, plain), (in_intent, scoped)):
        a = span.attributes
        assert a["gen_ai.request.model"] == llama_server.model
        assert a["gen_ai.response.model"] == completion.model
        assert a["gen_ai.response.finish_reasons"] == (completion.choices[0].finish_reason,)
        assert completion.usage is not None
        assert a["gen_ai.usage.input_tokens"] == completion.usage.prompt_tokens
        assert a["gen_ai.usage.output_tokens"] == completion.usage.completion_tokens
        assert _output_text(span) == completion.choices[0].message.content
        assert a["gen_ai.request.max_tokens"] == 8 and a["gen_ai.request.stream"] is False

    streamed_text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    a = streamed.attributes
    assert a["gen_ai.request.stream"] is True
    assert _output_text(streamed) == streamed_text
    assert a["gen_ai.response.finish_reasons"] == tuple(finish[-1:])
    # The server sends no usage on a stream it was not asked for: the tokens are unknown, never made up.
    assert "gen_ai.usage.output_tokens" not in a or a["gen_ai.usage.output_tokens"] >= 1

    assert in_intent.attributes[INTENT_KEY] == "realmodel.colour.v1"
    assert INTENT_KEY not in first.attributes and INTENT_KEY not in streamed.attributes
