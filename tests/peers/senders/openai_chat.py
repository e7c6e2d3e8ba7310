"""Two chat completions with the official `openai` client under one OpenAI instrumentation.

usage: openai_chat.py openinference | openllmetry | openai-v2
The instrumentation (and its mode, from the OTEL_* environment) is chosen by the caller; the
calls are the same for all of them, so their fixtures differ only by dialect.
"""

from __future__ import annotations

import os
import sys

import _peer


def instrument(family: str, tracer_provider, logger_provider) -> dict[str, str]:
    if family == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
        return _peer.versions("openinference-instrumentation-openai", "openai")
    if family == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
        return _peer.versions("opentelemetry-instrumentation-openai", "openai")
    if family == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        return _peer.versions("opentelemetry-instrumentation-openai-v2", "openai")
    raise SystemExit(f"unknown family {family!r}")


def main() -> None:
    family = sys.argv[1]
    tp = _peer.tracer_provider()
    lp = _peer.logger_provider()
    packages = instrument(family, tp, lp)
    packages.update(_peer.versions("opentelemetry-sdk"))

    import openai

    client = openai.OpenAI(base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer", max_retries=0)
    _peer.report(packages, _peer.chat_completions(client, "openai"), tp, lp)


if __name__ == "__main__":
    main()
