"""Two Google ADK (`google-adk`) agent runs (LlmAgent on an OpenAI model through ADK's LiteLlm wrapper, the
scenario's tool) with ADK's own OpenTelemetry through the global providers: spans (invoke_workflow, invoke_agent,
generate_content, execute_tool) and each call's messages in a gen_ai.client.inference.operation.details log record.
(OpenInference's GoogleADKInstrumentor is not recorded: see docs/collector.md, sender table.)"""

from __future__ import annotations

import asyncio
import os

import _peer


async def run() -> None:
    tp, lp = _peer.tracer_provider(), _peer.logger_provider()  # ADK's message content leaves as log events
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    model = LiteLlm(model=f"openai/{_peer.MODEL}", api_base=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer")
    agent = LlmAgent(name="billing", model=model, instruction=_peer.SYSTEM, tools=[_peer.lookup_charge])
    runner = InMemoryRunner(agent=agent, app_name="peer")
    packages = _peer.versions("google-adk", "litellm", "opentelemetry-sdk")
    calls = []
    for question in _peer.QUESTIONS:
        session = await runner.session_service.create_session(app_name="peer", user_id="u1")
        with _peer.intent():
            async for _event in runner.run_async(user_id="u1", session_id=session.id, new_message=types.Content(
                    role="user", parts=[types.Part(text=question)])):
                pass
        calls.append(f"google.adk Runner.run_async(LlmAgent(model=LiteLlm(openai/{_peer.MODEL})))")
    _peer.report(packages, calls, tp, lp)


if __name__ == "__main__":
    asyncio.run(run())
