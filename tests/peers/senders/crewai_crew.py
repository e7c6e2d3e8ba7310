"""Two CrewAI crews (one agent with the scenario's tool, one task each: the question) on an OpenAI model, traced by the instrumentation
named in the argument as its docs set it up: `openinference` (CrewAIInstrumentor with OpenInference's OpenAI
instrumentation for the model calls), `openllmetry` (OpenLLMetry's CrewAIInstrumentor with its OpenAI
instrumentation, as `Traceloop.init()` turns them on), or `both`."""

from __future__ import annotations

import os
import sys

import _peer


def instrument(mode: str, tp) -> list[str]:
    dists = []
    if mode in ("openinference", "both"):
        from openinference.instrumentation.crewai import CrewAIInstrumentor
        from openinference.instrumentation.openai import OpenAIInstrumentor

        CrewAIInstrumentor().instrument(tracer_provider=tp)
        OpenAIInstrumentor().instrument(tracer_provider=tp)
        dists += ["openinference-instrumentation-crewai", "openinference-instrumentation-openai"]
    if mode in ("openllmetry", "both"):
        from opentelemetry.instrumentation.crewai import CrewAIInstrumentor as OpenLLMetryCrewAI
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as OpenLLMetryOpenAI

        OpenLLMetryCrewAI().instrument(tracer_provider=tp)
        OpenLLMetryOpenAI().instrument(tracer_provider=tp)
        dists += ["opentelemetry-instrumentation-crewai", "opentelemetry-instrumentation-openai"]
    return dists


def main() -> None:
    mode = sys.argv[1]
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"  # CrewAI's own anonymous usage telemetry: not to the internet
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
    tp = _peer.tracer_provider()
    dists = instrument(mode, tp)
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool

    llm = LLM(model=f"openai/{_peer.MODEL}", base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer")
    packages = _peer.versions("crewai", *dists, "openai", "opentelemetry-sdk")
    calls = []
    for question in _peer.QUESTIONS:
        agent = Agent(role="billing assistant", goal=_peer.SYSTEM, backstory=_peer.SYSTEM, llm=llm, verbose=False,
                      tools=[tool(_peer.TOOL)(_peer.lookup_charge)])
        task = Task(description=question, expected_output="One sentence.", agent=agent)
        with _peer.intent():
            Crew(agents=[agent], tasks=[task], verbose=False).kickoff()
        calls.append(f"crewai.Crew.kickoff(LLM(openai/{_peer.MODEL}))")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
