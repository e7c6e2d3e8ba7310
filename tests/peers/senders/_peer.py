"""What every peer sender shares: the scenario (prompts with planted secrets) and the OTLP wiring.

Runs inside a peer's side venv (see tests/peers/requirements/), so it imports only the stdlib and
the OpenTelemetry SDK + OTLP/HTTP exporters that every family installs. The orchestrator
(tests/peers/record.py, or the live tests) passes addresses in the environment:

    PEER_OTLP_ENDPOINT   base URL of the OTLP/HTTP receiver (…/v1/traces and …/v1/logs are appended)
    PEER_OTLP_HEADERS    optional "k=v,k2=v2" headers (a collector token)
    PEER_OPENAI_BASE_URL / PEER_ANTHROPIC_BASE_URL   the fake provider servers

and reads one JSON line from stdout: {"packages": {...}, "calls": [...]}.

With PEER_VIA_VERDICT=1 a sender follows the docs/tracing.md recipe instead: no exporter of its
own, `verdict.init(..., export_peer_spans=True)` and every call inside `intent_context(INTENT)`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from importlib import metadata

# Planted secrets: the fixtures carry them raw (that is what the peers send); nothing derived
# from them may reach disk unredacted. The card is the Visa test number (Luhn-valid).
EMAIL = "jane.roe.peer@example.com"
CARD = "4111 1111 1111 1111"
SECRETS = (EMAIL, CARD, CARD.replace(" ", ""))

SYSTEM = "You are a billing assistant. Answer in one sentence."
QUESTIONS = (
    f"My card {CARD} was charged twice; please write to {EMAIL}. Why?",
    f"Can you refund the second charge on card {CARD}?",
)
# The fake server's replies; the first also carries a secret, so answers are checked too.
ANSWERS = (
    f"The duplicate charge is a pending authorisation; a note went to {EMAIL}.",
    "Yes, the second charge will be refunded within five days.",
)
# The tool scenario (agent frameworks): the model first asks for this tool, then answers with its result, so
# each question is two model calls (a tool call, then the answer) around one tool execution.
TOOL = "lookup_charge"
TOOL_DESCRIPTION = "Look up the charges on a card by its last four digits."
TOOL_ARGUMENTS = {"card_last4": "1111"}
TOOL_RESULT = "two charges of 12.00 EUR on 2026-12-01"


def lookup_charge(card_last4: str) -> str:
    """Look up the charges on a card by its last four digits.

    Args:
        card_last4: the card's last four digits.
    """
    return TOOL_RESULT


# The two-tool scenario (a sender whose `Sender` says `second_tool`): once the lookup's result is in, the model asks
# for this tool too, then answers with both results: three model calls per question around two tool executions.
REFUND_TOOL = "refund_charge"
REFUND_ARGUMENTS = {"card_last4": "1111", "charge_number": 2}
REFUND_RESULT = "refund of 12.00 EUR issued for charge 2"


def refund_charge(card_last4: str, charge_number: int) -> str:
    """Refund one charge on a card, the card given by its last four digits.

    Args:
        card_last4: the card's last four digits.
        charge_number: which of the card's charges to refund, 1 for the first.
    """
    return REFUND_RESULT


# The conversation scenario (multi-turn senders): the questions are the turns of one conversation, each turn sent
# with the ones before it, under this key (opaque, so redaction leaves it as is).
CONVERSATION = "chat-7f3a9c2e"

MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-3-5-haiku-latest"
GEMINI_MODEL = "gemini-2.0-flash"
BEDROCK_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
SERVICE = "peer-app"
INTENT = "billing.refund.v1"
VIA_VERDICT = os.environ.get("PEER_VIA_VERDICT") == "1"


def endpoint(signal: str) -> str:
    return os.environ["PEER_OTLP_ENDPOINT"].rstrip("/") + f"/v1/{signal}"


def headers() -> dict[str, str]:
    raw = os.environ.get("PEER_OTLP_HEADERS", "")
    return dict(part.split("=", 1) for part in raw.split(",") if "=" in part)


def tracer_provider(service: str = SERVICE, processors=()):
    """A TracerProvider exporting OTLP/HTTP protobuf, set as the global one (Verdict's, via its recipe);
    `processors` run before the exporter's (a processor that rewrites spans, OpenInference's for Strands)."""
    from opentelemetry import trace

    if VIA_VERDICT:
        import verdict.tracing as vt

        vt.init(service_name=service, endpoint=endpoint("traces"), headers=headers(), export_peer_spans=True)
        return trace.get_tracer_provider()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    for processor in processors:
        provider.add_span_processor(processor)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint("traces"), headers=headers())))
    trace.set_tracer_provider(provider)
    return provider


def logger_provider(service: str = SERVICE):
    """A LoggerProvider exporting OTLP/HTTP protobuf log records, set as the global one."""
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    provider = LoggerProvider(resource=Resource.create({"service.name": service}))
    provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=endpoint("logs"), headers=headers())))
    set_logger_provider(provider)
    return provider


def intent():
    """The block every call runs in: `intent_context(INTENT)` in the Verdict recipe."""
    if VIA_VERDICT:
        import verdict.tracing as vt

        return vt.intent_context(INTENT)
    return contextlib.nullcontext()


def chat_completions(client, label: str, stream: bool = False) -> list[str]:
    """The scenario through an OpenAI-style client (`client.chat.completions.create`): the calls made.
    `stream`: streamed with `stream_options.include_usage`, every chunk consumed."""
    calls = []
    streaming = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
    for question in QUESTIONS:
        with intent():
            reply = client.chat.completions.create(
                model=MODEL, messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
                **streaming)
            for _chunk in reply if stream else ():
                pass
        calls.append(f"{label}.chat.completions.create(model={MODEL}{', stream=True' if stream else ''})")
    return calls


def versions(*dists: str) -> dict[str, str]:
    return {d: metadata.version(d) for d in dists}


def report(packages: dict[str, str], calls: list[str], *providers) -> None:
    """Flush every provider (the export must be on the wire before we exit), then tell the orchestrator."""
    if VIA_VERDICT:
        import verdict.tracing as vt

        vt.shutdown()
    for p in providers:
        p.force_flush()
        p.shutdown()
    json.dump({"packages": packages, "calls": calls}, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()
