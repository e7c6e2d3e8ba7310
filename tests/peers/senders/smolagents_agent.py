"""Two smolagents ToolCallingAgent runs on an OpenAI-compatible model (OpenAIServerModel) with the
scenario's tool, traced by OpenInference's smolagents instrumentation as smolagents documents it
(`SmolagentsInstrumentor().instrument(tracer_provider=...)`). smolagents answers through its
`final_answer` tool: per question the model asks for the tool, then calls `final_answer`."""

from __future__ import annotations

import os

import _peer


def main() -> None:
    tp = _peer.tracer_provider()
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    SmolagentsInstrumentor().instrument(tracer_provider=tp)
    model = OpenAIServerModel(_peer.MODEL, api_base=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer")
    agent = ToolCallingAgent(tools=[tool(_peer.lookup_charge)], model=model, instructions=_peer.SYSTEM,
                             max_steps=3, verbosity_level=0)
    packages = _peer.versions("smolagents", "openinference-instrumentation-smolagents", "openai", "opentelemetry-sdk")
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            agent.run(question)
        calls.append(f"smolagents.ToolCallingAgent.run(model=OpenAIServerModel({_peer.MODEL}))")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
