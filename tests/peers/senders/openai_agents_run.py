"""Two OpenAI Agents SDK runs (an Agent with the scenario's tool as a `function_tool`, on the chat completions
model against the fake OpenAI server) traced by OpenInference's OpenAIAgentsInstrumentor, the set-up Arize's
docs show: the SDK's tracing goes to an OpenInference trace processor, which makes OpenTelemetry spans (agent,
response/generation, function tool). The SDK's own exporter to OpenAI's platform is removed first
(`set_trace_processors([])`): only the OpenTelemetry spans leave the process."""

from __future__ import annotations

import os

import _peer


def main() -> None:
    tp = _peer.tracer_provider()
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_trace_processors,
    )
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_trace_processors([])
    OpenAIAgentsInstrumentor().instrument(tracer_provider=tp)
    client = AsyncOpenAI(base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer", max_retries=0)
    agent = Agent(name="billing assistant", instructions=_peer.SYSTEM,
                  model=OpenAIChatCompletionsModel(model=_peer.MODEL, openai_client=client),
                  tools=[function_tool(_peer.lookup_charge)])
    packages = _peer.versions("openai-agents", "openinference-instrumentation-openai-agents", "openai",
                              "opentelemetry-sdk")
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            Runner.run_sync(agent, question)
        calls.append(f"agents.Runner.run_sync(Agent(tools=[{_peer.TOOL}], model=OpenAIChatCompletionsModel("
                     f"{_peer.MODEL})))")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
