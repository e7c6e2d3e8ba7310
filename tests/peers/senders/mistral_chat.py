"""Two chat completions with the Mistral SDK (`Mistral().chat.complete`) described by the SDK's own
OpenTelemetry spans (scope `mistralai_sdk_tracer`, on the global TracerProvider with
MISTRAL_SDK_TELEMETRY=global), and with `openinference` also by OpenInference's mistralai instrumentation
(two root spans per call). The fake OpenAI server answers (Mistral's chat API has its shape).

usage: mistral_chat.py [openinference]
"""

from __future__ import annotations

import os
import sys

import _peer

MODEL = "mistral-small-latest"


def main() -> None:
    tp = _peer.tracer_provider()
    packages = _peer.versions("mistralai", "opentelemetry-sdk")
    if sys.argv[1:] == ["openinference"]:
        from openinference.instrumentation.mistralai import MistralAIInstrumentor

        MistralAIInstrumentor().instrument(tracer_provider=tp)
        packages.update(_peer.versions("openinference-instrumentation-mistralai"))
    from mistralai.client import Mistral

    client = Mistral(api_key="sk-fake-peer", server_url=os.environ["PEER_OPENAI_BASE_URL"].removesuffix("/v1"))
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            client.chat.complete(model=MODEL, messages=[{"role": "system", "content": _peer.SYSTEM},
                                                        {"role": "user", "content": question}])
        calls.append(f"mistralai.Mistral().chat.complete(model={MODEL})")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
