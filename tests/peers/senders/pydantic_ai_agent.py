"""Two Pydantic AI agent runs on an OpenAI chat model, Pydantic AI's own instrumentation on (its
default version: messages as span attributes; it takes no LoggerProvider). With the argument `tool`, the agent
has the scenario's tool (`lookup_charge`): each run calls it, then answers."""

from __future__ import annotations

import os
import sys

import _peer


def main() -> None:
    tp = _peer.tracer_provider()
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(
        _peer.MODEL, provider=OpenAIProvider(base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer")
    )
    Agent.instrument_all(InstrumentationSettings(tracer_provider=tp, include_content=True))
    tools = [_peer.lookup_charge] if sys.argv[1:] == ["tool"] else []
    agent = Agent(model, system_prompt=_peer.SYSTEM, tools=tools)
    packages = _peer.versions("pydantic-ai-slim", "openai", "opentelemetry-sdk")
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            agent.run_sync(question)
        calls.append(f"pydantic_ai.Agent.run_sync(model=openai:{_peer.MODEL})")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
