"""Local fake LLM servers: the real `openai` / `anthropic` clients talk to them over 127.0.0.1.

Bundled (not test-only) because `make demo` runs its support-bot app against `FakeOpenAI` offline;
the tests use the same servers through `tests.fakes` and the fixtures in tests/conftest.py.

Usage (fixtures from tests/conftest.py; each test gets a reset server, one process-wide instance)::

    from tests.fakes import Reply, Fail, Malformed, ToolCall   # = verdict_demo.fake_llm

    def test_something(fake_openai):                      # or fake_anthropic
        client = fake_openai.client()                     # official client, base_url set, max_retries=0
        fake_openai.enqueue(Reply("hello world"), Fail(429, retry_after=1), Reply("again"))
        client.chat.completions.create(model="gpt-4o-mini", messages=[...])
        assert fake_openai.last_request.body["model"] == "gpt-4o-mini"

Scripting, in order of precedence for each request to a model endpoint:
  1. `server.enqueue(*behaviours)` - FIFO queue shared by all endpoints of that server;
  2. `server.handler = fn` - `fn(RecordedRequest) -> Reply | Fail | Malformed | None`; it runs on the
     server's event loop, so keep it quick (use `latency=` for slow replies, never time.sleep);
  3. `server.default` - a `Reply` (default text "fake reply").

Behaviours (verdict_demo/fake_llm/behaviours.py):
  * `Reply(text, finish_reason=None, logprobs=None, tool_calls=(), usage=None, cache_read_tokens=0,
    cache_write_tokens=0, reasoning_tokens=0, model=None, latency=0, chunk_delay=0, drip=0, abort_after=None,
    abort_mode="disconnect"|"error_event", headers={})`
    - rendered as the endpoint and the request ask: chat completion (JSON mode/json_schema just return
      the text; `logprobs`/`top_logprobs` honoured, synthesised if not scripted), `stream=True` SSE with
      the `stream_options.include_usage` final chunk and `[DONE]`, Responses API objects or its SSE
      events, Anthropic messages or its SSE events (message_start ... message_stop).
    - tokens = whitespace-delimited words (or the `TokenLogprob` tokens), one stream chunk each; a
      request max_tokens / max_completion_tokens / max_output_tokens smaller than the reply cuts it
      and reports finish "length" (Anthropic "max_tokens"; Responses status "incomplete").
    - Anthropic: when the request forces a tool (`tool_choice={"type": "tool", ...}`) and the text is a
      JSON object, the reply is a `tool_use` block with that input (structured output over tool use).
    - `abort_after=N` cuts a stream after N content chunks: drop the connection, or send the
      provider's in-stream error event.
  * `Fail(status=500, message, retry_after=None, error_type=None, latency=0, headers={})` - the
    provider's error JSON (429 rate limit, 500, 529 overloaded, 401, ...), `Retry-After` header.
  * `Malformed(body=b'{"id": "broken", ...', status=200, content_type="application/json")` - raw body.
  `latency` (seconds, asyncio sleep on the server) makes a slow reply for timeout tests; `drip` sends a
  non-streamed body one byte per `drip` seconds, chunked (a server that never trips a per-read timeout).

Recording: `server.requests` (list of `RecordedRequest(method, path, headers, body, raw, received_at)`,
`received_at` is `time.monotonic()`), `requests_to("/v1/chat/completions")`, `request_count`,
`last_request`, `pending` (queued behaviours not yet used).

Addresses: `server.base_url` is what the official client takes (`http://127.0.0.1:PORT/v1` for
OpenAI, `http://127.0.0.1:PORT` for Anthropic); `server.url` is the bare origin. Also
`server.client(**kw)` / `server.async_client(**kw)`. Outside pytest: `with FakeOpenAI() as s: ...`.
Embeddings (`/v1/embeddings`) return deterministic vectors (float or base64, `dimensions` honoured,
default 8).
"""

from verdict.models.base import TokenLogprob

from .anthropic_api import FakeAnthropic
from .behaviours import Behaviour, Fail, Malformed, RecordedRequest, Reply, ToolCall
from .openai_api import FakeOpenAI
from .server import FakeServer

__all__ = [
    "Behaviour", "FakeAnthropic", "FakeOpenAI", "FakeServer", "Fail", "Malformed", "RecordedRequest",
    "Reply", "TokenLogprob", "ToolCall",
]
