"""Two chat completions with the `openai` client under Pydantic Logfire (`logfire.instrument_openai`), exported
by an OTLP/HTTP protobuf span processor given to `logfire.configure` (nothing sent to Logfire's service).

usage: logfire_openai.py plain | stream
`stream`: both calls streamed with `stream_options.include_usage`; Logfire then writes the request span and,
once the stream is consumed, a zero-length `streaming response from ...` span holding the answer and usage,
in a trace of its own.
"""

from __future__ import annotations

import os
import sys

import _peer


def main() -> None:
    import logfire
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    mode = sys.argv[1]
    exporter = OTLPSpanExporter(endpoint=_peer.endpoint("traces"), headers=_peer.headers())
    logfire.configure(send_to_logfire=False, service_name=_peer.SERVICE, console=False,
                      additional_span_processors=[BatchSpanProcessor(exporter)])
    import openai

    client = openai.OpenAI(base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer", max_retries=0)
    logfire.instrument_openai(client)
    calls = _peer.chat_completions(client, "openai", stream=mode == "stream")
    logfire.force_flush()
    logfire.shutdown()
    _peer.report(_peer.versions("logfire", "openai", "opentelemetry-sdk"), calls)


if __name__ == "__main__":
    main()
