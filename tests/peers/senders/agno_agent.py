"""Two Agno agent runs (OpenAIChat model, the scenario's tool) traced by the instrumentation named in the
argument, each as its package documents it: `openinference` (openinference-instrumentation-agno's
AgnoInstrumentor, the set-up Agno's observability docs show), `openllmetry` (OpenLLMetry's
opentelemetry-instrumentation-agno with its OpenAI instrumentation, as `Traceloop.init()` turns them on), or
`both` at once."""

from __future__ import annotations

import os
import sys

import _peer


def instrument(mode: str, tp) -> list[str]:
    dists = []
    if mode in ("openinference", "both"):
        from openinference.instrumentation.agno import AgnoInstrumentor

        AgnoInstrumentor().instrument(tracer_provider=tp)
        dists.append("openinference-instrumentation-agno")
    if mode in ("openllmetry", "both"):
        # OpenLLMetry's agno spans are the agent and its tools only; the model calls come from its OpenAI
        # instrumentation, which `Traceloop.init()` (its documented set-up) turns on next to it.
        from opentelemetry.instrumentation.agno import AgnoInstrumentor as OpenLLMetryAgno
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenLLMetryAgno().instrument(tracer_provider=tp)
        OpenAIInstrumentor().instrument(tracer_provider=tp)
        dists += ["opentelemetry-instrumentation-agno", "opentelemetry-instrumentation-openai"]
    return dists


def main() -> None:
    mode = sys.argv[1]
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"  # OpenLLMetry's content switch (its default, said explicitly)
    tp = _peer.tracer_provider()
    dists = instrument(mode, tp)
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    model = OpenAIChat(id=_peer.MODEL, base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer")
    agent = Agent(model=model, instructions=_peer.SYSTEM, tools=[_peer.lookup_charge], telemetry=False)
    packages = _peer.versions("agno", *dists, "openai", "opentelemetry-sdk")
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            agent.run(question)
        calls.append(f"agno.Agent.run(model=OpenAIChat({_peer.MODEL}))")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
