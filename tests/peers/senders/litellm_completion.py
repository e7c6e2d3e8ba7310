"""Two chat completions through LiteLLM (`litellm.completion(model="openai/gpt-4o-mini")`), traced one of two ways.

usage: litellm_completion.py otel | openinference | openinference+openai
`otel`: LiteLLM's own OpenTelemetry callback (`litellm.callbacks = ["otel"]`, OTLP/HTTP from its `OTEL_*`
settings); `openinference`: OpenInference's LiteLLM instrumentation on the SDK's OTLP/HTTP exporter;
`openinference+openai`: OpenInference's OpenAI instrumentation too, on the `openai` client LiteLLM calls.
Both name the model as LiteLLM was given it, `provider/model`.
"""

from __future__ import annotations

import os
import sys

import _peer

ROUTED_MODEL = f"openai/{_peer.MODEL}"


def main() -> None:
    mode = sys.argv[1]
    providers = []
    if mode == "otel":
        os.environ.update({"OTEL_EXPORTER": "otlp_http", "OTEL_ENDPOINT": _peer.endpoint("traces"),
                           "OTEL_SERVICE_NAME": _peer.SERVICE, "OTEL_HEADERS": os.environ.get("PEER_OTLP_HEADERS", "")})
        import litellm

        litellm.callbacks = ["otel"]
        packages = _peer.versions("litellm")
    else:
        providers.append(_peer.tracer_provider())
        from openinference.instrumentation.litellm import LiteLLMInstrumentor

        LiteLLMInstrumentor().instrument(tracer_provider=providers[0])
        import litellm

        packages = _peer.versions("litellm", "openinference-instrumentation-litellm")
        if mode == "openinference+openai":
            from openinference.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=providers[0])
            packages.update(_peer.versions("openinference-instrumentation-openai", "openai"))
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            litellm.completion(model=ROUTED_MODEL, api_base=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer",
                               messages=[{"role": "system", "content": _peer.SYSTEM},
                                         {"role": "user", "content": question}])
        calls.append(f"litellm.completion(model={ROUTED_MODEL})")
    if mode == "otel":
        from opentelemetry import trace

        providers.append(trace.get_tracer_provider())
    packages.update(_peer.versions("opentelemetry-sdk"))
    _peer.report(packages, calls, *providers)


if __name__ == "__main__":
    main()
