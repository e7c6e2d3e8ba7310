"""The scenario's two questions through the official `google-genai` client (`client.models.generate_content`,
the system prompt as `system_instruction`) under one Gemini instrumentation; with `stream`, the second question
goes through `generate_content_stream`.

usage: gemini_generate.py otel|openinference|openllmetry [stream]
otel: the OpenTelemetry contrib `opentelemetry-instrumentation-google-genai`; openinference:
`openinference-instrumentation-google-genai`; openllmetry: `opentelemetry-instrumentation-google-generativeai`.
"""

from __future__ import annotations

import os
import sys

import _peer


def instrument(suite: str, tracer_provider, logger_provider) -> dict[str, str]:
    if suite == "otel":
        from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

        # 1.3b0 declares google-genai<3; its wrappers work on 3.x, so the dependency check is skipped
        GoogleGenAiSdkInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider,
                                                skip_dep_check=True)
        return _peer.versions("opentelemetry-instrumentation-google-genai")
    if suite == "openinference":
        from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor

        GoogleGenAIInstrumentor().instrument(tracer_provider=tracer_provider)
        return _peer.versions("openinference-instrumentation-google-genai")
    if suite == "openllmetry":
        from opentelemetry.instrumentation.google_generativeai import GoogleGenerativeAiInstrumentor

        GoogleGenerativeAiInstrumentor().instrument(tracer_provider=tracer_provider)
        return _peer.versions("opentelemetry-instrumentation-google-generativeai")
    raise SystemExit(f"unknown suite {suite!r}")


def main() -> None:
    suite, stream = sys.argv[1], sys.argv[2:] == ["stream"]
    tp = _peer.tracer_provider()
    lp = _peer.logger_provider()
    packages = instrument(suite, tp, lp) | _peer.versions("google-genai", "opentelemetry-sdk")

    from google import genai
    from google.genai import types

    client = genai.Client(api_key="fake-gemini-key",
                          http_options=types.HttpOptions(base_url=os.environ["PEER_GEMINI_BASE_URL"]))
    config = types.GenerateContentConfig(system_instruction=_peer.SYSTEM)
    calls = []
    for n, question in enumerate(_peer.QUESTIONS):
        with _peer.intent():
            if stream and n == 1:
                "".join(chunk.text or "" for chunk in
                        client.models.generate_content_stream(model=_peer.GEMINI_MODEL, contents=question, config=config))
                calls.append(f"client.models.generate_content_stream(model={_peer.GEMINI_MODEL})")
            else:
                client.models.generate_content(model=_peer.GEMINI_MODEL, contents=question, config=config)
                calls.append(f"client.models.generate_content(model={_peer.GEMINI_MODEL})")
    _peer.report(packages, calls, tp, lp)


if __name__ == "__main__":
    main()
