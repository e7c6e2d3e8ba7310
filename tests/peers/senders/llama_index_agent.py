"""Two LlamaIndex agent workflow runs (FunctionAgent, llama-index-llms-openai, the scenario's tool) traced by
the instrumentation named in the argument, each as its package documents it: `openinference`
(openinference-instrumentation-llama-index's LlamaIndexInstrumentor), `openllmetry` (OpenLLMetry's
opentelemetry-instrumentation-llamaindex with its OpenAI instrumentation, as `Traceloop.init()` turns them on), `both` at once, or `own` (LlamaIndex's llama-index-observability-otel)."""

from __future__ import annotations

import asyncio
import os
import sys

import _peer


def instrument(mode: str, tp) -> list[str]:
    dists = []
    if mode in ("openinference", "both"):
        from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

        LlamaIndexInstrumentor().instrument(tracer_provider=tp)
        dists.append("openinference-instrumentation-llama-index")
    if mode in ("openllmetry", "both"):
        # OpenLLMetry's llamaindex spans are the workflow and its tasks only; the model calls come from its OpenAI
        # instrumentation, which `Traceloop.init()` (its documented set-up) turns on next to it.
        from opentelemetry.instrumentation.llamaindex import (
            LlamaIndexInstrumentor as OpenLLMetryLlamaIndex,
        )
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenLLMetryLlamaIndex().instrument(tracer_provider=tp)
        OpenAIInstrumentor().instrument(tracer_provider=tp)
        dists += ["opentelemetry-instrumentation-llamaindex", "opentelemetry-instrumentation-openai"]
    if mode == "own":
        from llama_index.observability.otel import LlamaIndexOpenTelemetry

        LlamaIndexOpenTelemetry(tracer_provider=tp).start_registering()
        dists.append("llama-index-observability-otel")
    return dists


async def run() -> None:
    mode = sys.argv[1]
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"  # OpenLLMetry's content switch (its default, said explicitly)
    tp = _peer.tracer_provider()
    dists = instrument(mode, tp)
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI

    llm = OpenAI(model=_peer.MODEL, api_base=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer")
    # streaming=False: llama-index-llms-openai asks for no usage on streams, so only then are there tokens to check
    agent = FunctionAgent(tools=[_peer.lookup_charge], llm=llm, system_prompt=_peer.SYSTEM, streaming=False)
    packages = _peer.versions("llama-index-core", "llama-index-llms-openai", *dists, "openai", "opentelemetry-sdk")
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            await agent.run(question)
        calls.append(f"llama_index FunctionAgent.run(llm=OpenAI({_peer.MODEL}))")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    asyncio.run(run())
