"""Two chat completions under OpenLIT (`openlit.init`, which reuses the TracerProvider and LoggerProvider
already set; content capture on; its httpx instrumentor off: HTTP client spans are no GenAI spans).

usage: openlit_chat.py events | no-events | together
`events` (the default init): the `openai` client, semconv content attributes and one
`gen_ai.client.inference.operation.details` log record per call; `no-events`: `disable_events=True`, content
in the span only; `together`: the `together` client (OpenAI-compatible API), which OpenLIT still describes
in its text form (`role: content` lines in `gen_ai.input.messages` and `gen_ai.content.prompt` span events).
"""

from __future__ import annotations

import os
import sys

import _peer


def main() -> None:
    mode = sys.argv[1]
    tp = _peer.tracer_provider()
    lp = _peer.logger_provider()
    import openlit

    openlit.init(service_name=_peer.SERVICE, disable_metrics=True, disable_events=mode == "no-events",
                 capture_message_content=True, disabled_instrumentors=["httpx", "requests", "urllib3"])
    base_url = os.environ["PEER_OPENAI_BASE_URL"]
    if mode == "together":
        import together

        client = together.Together(base_url=base_url, api_key="sk-fake-peer", max_retries=0)
        packages = _peer.versions("openlit", "together", "opentelemetry-sdk")
    else:
        import openai

        client = openai.OpenAI(base_url=base_url, api_key="sk-fake-peer", max_retries=0)
        packages = _peer.versions("openlit", "openai", "opentelemetry-sdk")
    _peer.report(packages, _peer.chat_completions(client, mode if mode == "together" else "openai"), tp, lp)


if __name__ == "__main__":
    main()
