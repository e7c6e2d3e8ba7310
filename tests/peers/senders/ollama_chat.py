"""Two chats with the `ollama` Python client (`ollama.Client(host=...).chat`, Ollama's native `/api/chat`) under
one instrumentation; the fake server answers Ollama's format (tests/peers/fake_ollama.py).

usage: ollama_chat.py openllmetry | openinference
"""

from __future__ import annotations

import os
import sys

import _peer

MODEL = "llama3.2"


def instrument(family: str, tracer_provider) -> dict[str, str]:
    if family == "openllmetry":
        from opentelemetry.instrumentation.ollama import OllamaInstrumentor

        OllamaInstrumentor().instrument(tracer_provider=tracer_provider)
        return _peer.versions("opentelemetry-instrumentation-ollama")
    if family == "openinference":
        from openinference.instrumentation.ollama import OllamaInstrumentor as OpenInferenceOllama

        OpenInferenceOllama().instrument(tracer_provider=tracer_provider)
        return _peer.versions("openinference-instrumentation-ollama")
    raise SystemExit(f"unknown family {family!r}")


def main() -> None:
    tp = _peer.tracer_provider()
    packages = {**instrument(sys.argv[1], tp), **_peer.versions("ollama", "opentelemetry-sdk")}
    import ollama

    client = ollama.Client(host=os.environ["PEER_OPENAI_BASE_URL"].removesuffix("/v1"))
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            client.chat(model=MODEL, messages=[{"role": "system", "content": _peer.SYSTEM},
                                               {"role": "user", "content": question}])
        calls.append(f"ollama.Client().chat(model={MODEL})")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
