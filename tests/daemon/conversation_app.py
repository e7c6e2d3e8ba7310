"""The chat app of the conversation-history test (run as its own process).

It calls `verdict.init()` + `verdict.instrument()` and sends one chat call per turn through the real `openai`
client to the fake LLM server, each inside `verdict.intent_context(intent)` and, for a turn of a conversation,
`verdict.conversation_context(id)`; the spans go through the real SDK and OTLP exporter, authenticated by
API_KEY (the collector maps it to a tenant).

    python -m tests.daemon.conversation_app COLLECTOR_URL LLM_BASE_URL API_KEY TURNS_JSON

TURNS_JSON: [{"conversation": "c1" or null, "intent": "billing.v1", "user": "...", "end": true (optional: the
conversation's last turn, `conversation_context(id, end=True)`), "tool": {"name", "arguments", "result"} (optional:
the call carries an agent's tool step, the assistant's tool call and the tool's result, before the answer)},
...], sent in order.
"""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

SYSTEM = "You are the support assistant of Acme. Be brief."


def main(argv: list[str]) -> int:
    collector_url, llm_base_url, api_key, turns = argv
    import openai

    import verdict

    verdict.init(service_name="chat-app", endpoint=collector_url, api_key=api_key, capture_content=True,
                 schedule_delay_millis=200)
    verdict.instrument()
    client = openai.OpenAI(base_url=llm_base_url, api_key="sk-app-test", max_retries=0)
    for turn in json.loads(turns):
        with ExitStack() as scope:
            scope.enter_context(verdict.intent_context(turn["intent"]))
            if turn["conversation"]:
                scope.enter_context(verdict.conversation_context(turn["conversation"], end=turn.get("end", False)))
            client.chat.completions.create(model="gpt-4o-mini", messages=[
                {"role": "system", "content": SYSTEM}, {"role": "user", "content": turn["user"]},
                *tool_step(turn.get("tool"))])
    if not verdict.flush(60):
        print("flush failed", file=sys.stderr)
        return 1
    verdict.shutdown()
    return 0


def tool_step(tool: dict | None) -> list[ChatCompletionMessageParam]:
    """The assistant's tool call and the tool's result, in the chat API's shape ([] without a tool)."""
    if not tool:
        return []
    return [{"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": tool["name"], "arguments": json.dumps(tool["arguments"])}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": tool["result"]}]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
