"""The OpenAI Agents SDK (an Agent on the chat completions model against the fake OpenAI server) traced by
OpenInference's OpenAIAgentsInstrumentor, the set-up Arize's docs show: the SDK's tracing goes to an OpenInference
trace processor, which makes OpenTelemetry spans (agent, response/generation, function tool). The SDK's own
exporter to OpenAI's platform is removed first (`set_trace_processors([])`): only the OpenTelemetry spans leave the
process.

usage: openai_agents_run.py [session]

Default: two runs of an Agent with the scenario's tool as a `function_tool` (the tool scenario). session: the two
questions as the turns of one conversation, each `Runner.run_sync` given the same `SQLiteSession` (the SDK's documented
way to keep history across runs: it sends the earlier turns with each new one), no tool. The session id itself
reaches no span; the runs are inside OpenInference's `using_session(id)`, which puts it on every span as
`session.id`.
"""

from __future__ import annotations

import contextlib
import os
import sys

import _peer


def main() -> None:
    session_mode = sys.argv[1:] == ["session"]
    tp = _peer.tracer_provider()
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        SQLiteSession,
        function_tool,
        set_trace_processors,
    )
    from openai import AsyncOpenAI
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_trace_processors([])
    OpenAIAgentsInstrumentor().instrument(tracer_provider=tp)
    client = AsyncOpenAI(base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer", max_retries=0)
    agent = Agent(name="billing assistant", instructions=_peer.SYSTEM,
                  model=OpenAIChatCompletionsModel(model=_peer.MODEL, openai_client=client),
                  tools=[] if session_mode else [function_tool(_peer.lookup_charge)])
    packages = _peer.versions("openai-agents", "openinference-instrumentation-openai-agents", "openai",
                              "opentelemetry-sdk")
    session = SQLiteSession(_peer.CONVERSATION) if session_mode else None  # in memory
    keyed = using_session(_peer.CONVERSATION) if session_mode else contextlib.nullcontext()
    call = (f"agents.Runner.run_sync(Agent(model=OpenAIChatCompletionsModel({_peer.MODEL})), session=SQLiteSession("
            f"{_peer.CONVERSATION!r})) in using_session({_peer.CONVERSATION!r})" if session_mode else
            f"agents.Runner.run_sync(Agent(tools=[{_peer.TOOL}], model=OpenAIChatCompletionsModel({_peer.MODEL})))")
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent(), keyed:
            Runner.run_sync(agent, question, session=session)
        calls.append(call)
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
