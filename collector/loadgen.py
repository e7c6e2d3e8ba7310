"""Synthetic, realistic GenAI OTLP requests for load tests and `bench/collector_ingest.py`.

`export_request`: what the Verdict SDK sends; `dialect_request` / `log_events_request`: the same
calls as OpenInference / OpenLLMetry spans and as openai-v2 GenAI log events (the mixed run).

Each span looks like what the Verdict SDK emits for a chat call (~1.5 KB encoded): GenAI
semantic-convention attributes, token usage, intent key, and already-redacted message JSON.
"""

from __future__ import annotations

import json
import random
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from collector.redaction import SDK_REDACTION_ATTRIBUTE, redaction_version

INTENTS = ("billing.refund", "billing.invoice", "support.password", "sales.quote", "search.docs")
MODELS = ("gpt-4o-mini", "gpt-4.1", "claude-sonnet-4", "claude-haiku-4")
_QUESTIONS = (
    "My invoice for last month shows a charge I do not recognise, can you explain the line items "
    "and tell me whether I am eligible for a refund under the annual plan?",
    "I forgot the password for the admin console and the reset email never arrives; my address "
    "is [REDACTED:email] and the account was created by a colleague who has since left.",
    "Please draft a quote for 40 seats on the team plan with SSO and priority support, billed "
    "yearly, and include the discount we discussed on the call last Tuesday.",
)
_ANSWERS = (
    "The charge of 49.00 is the prorated upgrade from the starter plan on the 12th. Annual plans "
    "are refundable within 30 days of the upgrade, so you are eligible; I have opened a refund "
    "request and you will receive a confirmation email within one business day.",
    "I have sent a new reset link to the address on file. If it does not arrive within ten "
    "minutes, check the spam folder or ask another admin to reset it from Settings > Members.",
)


def _kv(key: str, value) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def genai_span(rng: random.Random, start_ns: int) -> Span:
    model = rng.choice(MODELS)
    duration = rng.randint(200_000_000, 4_000_000_000)
    # Unique per call like real traffic (only the system prompt repeats), so no cache flatters.
    ticket = rng.randint(10_000_000, 99_999_999)
    question = f"Ticket {ticket}: {rng.choice(_QUESTIONS)}"
    answer = f"About ticket {ticket}: {rng.choice(_ANSWERS)}"
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai" if model.startswith("gpt") else "anthropic",
        "gen_ai.request.model": model,
        "gen_ai.response.model": f"{model}-2025-08-07",
        "gen_ai.response.id": f"chatcmpl-{rng.getrandbits(96):024x}",
        "gen_ai.usage.input_tokens": rng.randint(50, 4000),
        "gen_ai.usage.output_tokens": rng.randint(20, 800),
        "gen_ai.usage.cache_read.input_tokens": rng.choice((0, 0, 1024)),
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 1024,
        "server.address": "api.example.com",
        "verdict.intent_key": rng.choice(INTENTS),
        "verdict.workload": "production",
        "gen_ai.system_instructions": json.dumps(
            [{"type": "text", "content": "You are a concise, accurate support assistant."}]
        ),
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": question}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]
        ),
    }
    span = Span(
        trace_id=rng.getrandbits(128).to_bytes(16, "big"),
        span_id=rng.getrandbits(64).to_bytes(8, "big") or b"\x01" * 8,
        name=f"chat {model}",
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=start_ns,
        end_time_unix_nano=start_ns + duration,
        attributes=[_kv(k, v) for k, v in attributes.items()],
        status=Status(code=Status.STATUS_CODE_UNSET),
    )
    span.attributes.append(
        KeyValue(key="gen_ai.response.finish_reasons", value=AnyValue(array_value=ArrayValue(values=[AnyValue(string_value="stop")])))
    )
    return span


def export_request(
    rng: random.Random, n_spans: int, start_ns: int, tenant: str | None = None, sdk_redacted: bool = True
) -> ExportTraceServiceRequest:
    """`sdk_redacted`: the scope claims the SDK's redaction (collector.redaction.SDK_REDACTION_ATTRIBUTE)."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(
        [_kv("service.name", "support-bot"), _kv("deployment.environment", "prod")]
        + ([_kv("verdict.tenant_id", tenant)] if tenant else [])
    )
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "verdict.tracing"
    scope_spans.scope.version = "0.1.0"
    if sdk_redacted:
        scope_spans.scope.attributes.append(_kv(SDK_REDACTION_ATTRIBUTE, redaction_version()))
    scope_spans.spans.extend(genai_span(rng, start_ns + i * 1000) for i in range(n_spans))
    return request


def _dialect_attributes(rng: random.Random, model: str, question: str, answer: str) -> tuple[str, dict]:
    """(scope name, attributes) of the same chat call as OpenInference or OpenLLMetry (0.40) sends it."""
    tokens_in, tokens_out = rng.randint(50, 4000), rng.randint(20, 800)
    if rng.random() < 0.5:
        return "openinference.instrumentation.openai", {
            "openinference.span.kind": "LLM", "llm.system": "openai", "llm.provider": "openai",
            "llm.model_name": f"{model}-2025-08-07", "llm.invocation_parameters": json.dumps({"model": model}),
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "You are a concise, accurate support assistant.",
            "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": question,
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": answer,
            "llm.token_count.prompt": tokens_in, "llm.token_count.completion": tokens_out,
            "llm.token_count.total": tokens_in + tokens_out,
        }
    return "opentelemetry.instrumentation.openai.v1", {
        "llm.request.type": "chat", "gen_ai.system": "OpenAI", "gen_ai.request.model": model,
        "gen_ai.response.model": f"{model}-2025-08-07", "gen_ai.response.id": f"chatcmpl-{rng.getrandbits(96):024x}",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You are a concise, accurate support assistant.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": question,
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": answer,
        "gen_ai.completion.0.finish_reason": "stop", "gen_ai.usage.prompt_tokens": tokens_in,
        "gen_ai.usage.completion_tokens": tokens_out, "llm.usage.total_tokens": tokens_in + tokens_out,
    }


def dialect_request(rng: random.Random, n_spans: int, start_ns: int) -> ExportTraceServiceRequest:
    """Chat calls as other instrumentations send them (OpenInference, OpenLLMetry): no SDK claim."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend([_kv("service.name", "support-bot")])
    scopes: dict[str, list] = {}
    for i in range(n_spans):
        model = rng.choice(MODELS)
        ticket = rng.randint(10_000_000, 99_999_999)
        scope, attributes = _dialect_attributes(rng, model, f"Ticket {ticket}: {rng.choice(_QUESTIONS)}",
                                                f"About ticket {ticket}: {rng.choice(_ANSWERS)}")
        start = start_ns + i * 1000
        scopes.setdefault(scope, []).append(Span(
            trace_id=rng.getrandbits(128).to_bytes(16, "big"), span_id=(rng.getrandbits(63) | 1).to_bytes(8, "big"),
            name=f"chat {model}", kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=start,
            end_time_unix_nano=start + rng.randint(200_000_000, 4_000_000_000),
            attributes=[_kv(k, v) for k, v in attributes.items()]))
    for name, spans in scopes.items():
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = name
        scope_spans.spans.extend(spans)
    return request


def log_events_request(rng: random.Random, n_calls: int, start_ns: int) -> ExportLogsServiceRequest:
    """openai-v2's default mode: per call a user message event and a choice event, as OTLP log records."""
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    resource_logs.resource.attributes.extend([_kv("service.name", "support-bot")])
    scope_logs = resource_logs.scope_logs.add()
    scope_logs.scope.name = "opentelemetry.instrumentation.openai_v2"
    for i in range(n_calls):
        trace_id, span_id = rng.getrandbits(128).to_bytes(16, "big"), (rng.getrandbits(63) | 1).to_bytes(8, "big")
        ticket = rng.randint(10_000_000, 99_999_999)
        bodies: tuple[tuple[str, dict[str, Any]], ...] = (("gen_ai.user.message", {"content": f"Ticket {ticket}: {rng.choice(_QUESTIONS)}"}),
                  ("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {
                      "role": "assistant", "content": f"About ticket {ticket}: {rng.choice(_ANSWERS)}"}}))
        for k, (name, body) in enumerate(bodies):
            record = LogRecord(time_unix_nano=start_ns + i * 1000 + k, trace_id=trace_id, span_id=span_id,
                               event_name=name, attributes=[_kv("gen_ai.system", "openai")])
            record.body.kvlist_value.values.extend(
                [KeyValue(key="content", value=AnyValue(string_value=body["content"]))] if "content" in body else
                [_kv("index", 0), _kv("finish_reason", "stop"), KeyValue(key="message", value=AnyValue(
                    kvlist_value=KeyValueList(values=[_kv("role", "assistant"), _kv("content", body["message"]["content"])])))])
            scope_logs.log_records.append(record)
    return request


def span_ids(request: ExportTraceServiceRequest) -> list[str]:
    return [s.span_id.hex() for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
