"""Two chat completions with the Langfuse SDK's OpenAI integration (`langfuse.openai.OpenAI`), each inside a
Langfuse span observation with a session and a user (`propagate_attributes`), exported by the SDK's own
OpenTelemetry exporter (LangfuseSpanProcessor) to the OTLP endpoint given as its base URL
(`<base>/api/public/otel/v1/traces`): what a team moving from Langfuse points at Verdict."""

from __future__ import annotations

import os

import _peer


def main() -> None:
    from langfuse import Langfuse, propagate_attributes

    langfuse = Langfuse(public_key="pk-lf-peer", secret_key="sk-lf-peer", base_url=os.environ["PEER_OTLP_ENDPOINT"],
                        environment="test")
    from langfuse.openai import OpenAI

    client = OpenAI(base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer", max_retries=0)
    calls = []
    for question in _peer.QUESTIONS:
        with langfuse.start_as_current_observation(as_type="span", name="billing-turn"), \
                propagate_attributes(session_id="session-peer-1", user_id="user-peer-1"):
            client.chat.completions.create(
                model=_peer.MODEL,
                messages=[{"role": "system", "content": _peer.SYSTEM}, {"role": "user", "content": question}],
            )
        calls.append(f"langfuse.openai.OpenAI().chat.completions.create(model={_peer.MODEL})")
    langfuse.shutdown()
    _peer.report(_peer.versions("langfuse", "openai", "opentelemetry-sdk"), calls)


if __name__ == "__main__":
    main()
