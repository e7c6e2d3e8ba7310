"""Two Anthropic messages calls under OpenLLMetry's Anthropic instrumentation, with the
`anthropic` SDK's own native spans on as well (the double-description case of issue 14)."""

from __future__ import annotations

import os

import _peer


def main() -> None:
    # anthropic>=1.14 makes its own span per API call; record content in it, as a user debugging would.
    os.environ.setdefault("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")
    tp = _peer.tracer_provider()
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

    AnthropicInstrumentor().instrument(tracer_provider=tp)
    packages = _peer.versions("opentelemetry-instrumentation-anthropic", "anthropic", "opentelemetry-sdk")

    import anthropic

    client = anthropic.Anthropic(base_url=os.environ["PEER_ANTHROPIC_BASE_URL"], api_key="sk-ant-fake-peer", max_retries=0)
    calls = []
    for question in _peer.QUESTIONS:
        with _peer.intent():
            client.messages.create(
                model=_peer.ANTHROPIC_MODEL, max_tokens=200, system=_peer.SYSTEM,
                messages=[{"role": "user", "content": question}],
            )
        calls.append(f"anthropic.messages.create(model={_peer.ANTHROPIC_MODEL})")
    _peer.report(packages, calls, tp)


if __name__ == "__main__":
    main()
