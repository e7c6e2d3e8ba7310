"""Two `ai.generate` calls with Genkit (Python) and its OpenAI-compatible plugin (`genkit-openai`), inside a
flow. Genkit traces into the global TracerProvider (set here, exporting OTLP): the flow and the generate
helper are actions of other kinds, the model action (`genkit:type=action`, `genkit:metadata:subtype=model`)
is the call, its request and response in `genkit:input` / `genkit:output` JSON with usage inside."""

from __future__ import annotations

import asyncio
import os

import _peer


def main() -> None:
    tp = _peer.tracer_provider()
    from genkit import Genkit
    from genkit_openai import OpenAI

    ai = Genkit(plugins=[OpenAI(base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer",
                                max_retries=0)])

    @ai.flow()
    async def billing_answer(question: str) -> str:
        response = await ai.generate(model=OpenAI.gpt_model(_peer.MODEL), system=_peer.SYSTEM, prompt=question)
        return str(response.text)

    async def run() -> list[str]:
        calls = []
        for question in _peer.QUESTIONS:
            with _peer.intent():
                await billing_answer(question)
            calls.append(f"genkit ai.generate(model=openai/{_peer.MODEL}) in a flow")
        return calls

    calls = asyncio.run(run())
    _peer.report(_peer.versions("genkit", "genkit-openai", "openai", "opentelemetry-sdk"), calls, tp)


if __name__ == "__main__":
    main()
