"""Two Strands Agents runs (OpenAIModel, the scenario's tool) with Strands' own OpenTelemetry as documented
(`StrandsTelemetry(tracer_provider=...)`: GenAI-semconv spans invoke_agent / execute_event_loop_cycle / chat /
execute_tool). Argument `native`: its spans as they are; `latest`: with OTEL_SEMCONV_STABILITY_OPT_IN=
gen_ai_latest_experimental (messages as gen_ai.input/output.messages); `openinference`: rewritten into
OpenInference attributes by openinference-instrumentation-strands-agents' span processor, added before the
exporter as its docs say."""

from __future__ import annotations

import os
import sys

import _peer


def main() -> None:
    mode = sys.argv[1]
    processors = []
    dists = ["strands-agents"]
    if mode == "openinference":
        from openinference.instrumentation.strands_agents import (
            StrandsAgentsToOpenInferenceProcessor,
        )

        processors.append(StrandsAgentsToOpenInferenceProcessor())
        dists.append("openinference-instrumentation-strands-agents")
    tp = _peer.tracer_provider(processors=processors)
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel
    from strands.telemetry import StrandsTelemetry

    StrandsTelemetry(tracer_provider=tp)
    model = OpenAIModel(client_args={"api_key": "sk-fake-peer", "base_url": os.environ["PEER_OPENAI_BASE_URL"]},
                        model_id=_peer.MODEL)
    packages = _peer.versions(*dists, "openai", "opentelemetry-sdk")
    calls = []
    for question in _peer.QUESTIONS:
        agent = Agent(model=model, system_prompt=_peer.SYSTEM, tools=[tool(_peer.lookup_charge)],
                      callback_handler=None)
        with _peer.intent():
            agent(question)
        calls.append(f"strands.Agent(model=OpenAIModel({_peer.MODEL}))(question)")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
