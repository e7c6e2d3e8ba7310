"""Two chat completions through Semantic Kernel's OpenAIChatCompletion service, with SK's documented
OpenTelemetry set-up: its model diagnostics on, sensitive events included
(SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE), a global TracerProvider, and the
Python `logging` records of `semantic_kernel` exported as OTLP log records through a LoggingHandler: the
messages arrive as per-message GenAI events (`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.choice`)."""

from __future__ import annotations

import asyncio
import logging
import os

import _peer

os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE"] = "true"


async def chat() -> list[str]:
    from openai import AsyncOpenAI
    from semantic_kernel.connectors.ai.open_ai import (
        OpenAIChatCompletion,
        OpenAIChatPromptExecutionSettings,
    )
    from semantic_kernel.contents import ChatHistory

    client = AsyncOpenAI(base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer", max_retries=0)
    service = OpenAIChatCompletion(ai_model_id=_peer.MODEL, async_client=client)
    calls = []
    for question in _peer.QUESTIONS:
        history = ChatHistory(system_message=_peer.SYSTEM)
        history.add_user_message(question)
        with _peer.intent():
            await service.get_chat_message_content(history, OpenAIChatPromptExecutionSettings())
        calls.append(f"OpenAIChatCompletion.get_chat_message_content(model={_peer.MODEL})")
    return calls


def main() -> None:
    tp = _peer.tracer_provider()
    lp = _peer.logger_provider()
    from opentelemetry.sdk._logs import LoggingHandler

    handler = LoggingHandler(logger_provider=lp)
    handler.addFilter(logging.Filter("semantic_kernel"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)
    packages = _peer.versions("semantic-kernel", "openai", "opentelemetry-sdk")
    calls = asyncio.run(chat())
    _peer.report(packages, calls, tp, lp)


if __name__ == "__main__":
    main()
