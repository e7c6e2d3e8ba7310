"""OTLP payloads in each dialect's attribute shapes, with raw secrets planted in every place content can hide.

Built from the dialects' published conventions (OTel GenAI semconv, OpenInference, OpenLLMetry
semconv-ai, Vercel AI SDK telemetry, Pydantic AI); the recordings from the real packages live in
tests/fixtures/dialects/ once recorded. `CASES` pairs each payload with the `llm_calls` row it
must give.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span

EMAIL = "jane.doe@example.com"
CARD = "4111 1111 1111 1111"
API_KEY = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEf"
SECRETS = (EMAIL, CARD, API_KEY, "4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEf", "jane.doe@")
QUESTION = f"My e-mail is {EMAIL} and my card {CARD}; refund order 42"
ANSWER = f"Refund issued for order 42; receipt sent to {EMAIL}"
SYSTEM = "You are a support assistant."
T0 = 1_767_000_000_000_000_000  # 2025-12-29


def any_value(value) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, (list, tuple)):
        return AnyValue(array_value=ArrayValue(values=[any_value(v) for v in value]))
    if isinstance(value, dict):
        return AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key=k, value=any_value(v)) for k, v in value.items()]))
    return AnyValue(string_value=str(value))


def kvs(attrs: dict) -> list[KeyValue]:
    return [KeyValue(key=k, value=any_value(v)) for k, v in attrs.items()]


def trace_id(n: int) -> bytes:
    return n.to_bytes(16, "big")


def span_id(n: int) -> bytes:
    return n.to_bytes(8, "big")


@dataclass
class SpanSpec:
    scope: str
    name: str
    attrs: dict
    trace: int
    span: int
    parent: int = 0
    start: int = T0
    end: int = T0 + 900_000_000
    events: list[tuple[str, dict]] = field(default_factory=list)


# Resource attributes carry a secret too (someone put the user in the resource).
RESOURCE = {"service.name": "support-bot", "enduser.email": EMAIL, "deployment.environment": "test"}


def trace_request(*specs: SpanSpec, resource: dict = RESOURCE) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.extend(kvs(resource))
    for spec in specs:
        ss = rs.scope_spans.add()
        ss.scope.name = spec.scope
        ss.scope.version = "1.0"
        ss.spans.append(Span(
            trace_id=trace_id(spec.trace), span_id=span_id(spec.span),
            parent_span_id=span_id(spec.parent) if spec.parent else b"", name=spec.name,
            kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=spec.start, end_time_unix_nano=spec.end,
            attributes=kvs(spec.attrs),
            events=[Span.Event(name=n, time_unix_nano=spec.start + 1, attributes=kvs(a)) for n, a in spec.events],
        ))
    return request


def log_request(records: list[tuple[str, dict, object]], trace: int, span: int, scope: str,
                time_ns: int = T0 + 1000) -> ExportLogsServiceRequest:
    """[(event name, attributes, body)] emitted inside span (trace, span)."""
    request = ExportLogsServiceRequest()
    rl = request.resource_logs.add()
    rl.resource.attributes.extend(kvs(RESOURCE))
    sl = rl.scope_logs.add()
    sl.scope.name = scope
    for i, (name, attrs, body) in enumerate(records):
        record = LogRecord(time_unix_nano=time_ns + i, trace_id=trace_id(trace), span_id=span_id(span),
                           attributes=kvs({"event.name": name, **attrs}))
        if hasattr(record, "event_name"):
            record.event_name = name
        if body is not None:
            record.body.CopyFrom(any_value(body))
        sl.log_records.append(record)
    return request


def _semconv_messages() -> dict:
    return {
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}],
                                               "finish_reason": "stop"}]),
    }


@dataclass(frozen=True)
class Case:
    name: str
    dialect: str
    traces: tuple  # ExportTraceServiceRequest, ...
    logs: tuple = ()  # ExportLogsServiceRequest, ...
    expect: dict = field(default_factory=dict)  # llm_calls column -> value, for the single row
    content: bool = True  # the row carries the question and the answer (redacted)


OPENINFERENCE = Case("openinference", "openinference", (trace_request(
    SpanSpec("openinference.instrumentation.openai", "ChatCompletion", {
        "openinference.span.kind": "LLM", "llm.system": "openai", "llm.provider": "openai",
        "llm.model_name": "gpt-4o-mini-2024-07-18",
        "llm.invocation_parameters": json.dumps({"model": "gpt-4o-mini", "temperature": 0}),
        "input.value": json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}]}),
        "input.mime_type": "application/json",
        "output.value": json.dumps({"id": "chatcmpl-oi1", "model": "gpt-4o-mini-2024-07-18", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}]}),
        "output.mime_type": "application/json",
        "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": SYSTEM,
        "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": QUESTION,
        "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": ANSWER,
        "llm.token_count.prompt": 25, "llm.token_count.completion": 9, "llm.token_count.total": 34,
        "llm.token_count.prompt_details.cache_read": 4,
        "metadata": json.dumps({"user_api_key": API_KEY}),
    }, trace=0x11, span=0x11)),), expect={
        "operation": "chat", "provider": "openai", "request_model": "gpt-4o-mini",
        "response_model": "gpt-4o-mini-2024-07-18", "response_id": "chatcmpl-oi1", "finish_reasons": ["stop"],
        "input_tokens": 25, "output_tokens": 9, "cached_input_tokens": 4})

OPENLLMETRY_OLD = Case("openllmetry-0.40", "openllmetry", (trace_request(
    SpanSpec("opentelemetry.instrumentation.openai.v1", "openai.chat", {
        "llm.request.type": "chat", "gen_ai.system": "OpenAI", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18", "gen_ai.response.id": "chatcmpl-ol1",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": SYSTEM,
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": QUESTION,
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": ANSWER,
        "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.id": "call_1", "gen_ai.completion.0.tool_calls.0.name": "lookup_customer",
        "gen_ai.completion.0.tool_calls.0.arguments": json.dumps({"email": EMAIL}),
        "gen_ai.usage.prompt_tokens": 30, "gen_ai.usage.completion_tokens": 12, "llm.usage.total_tokens": 42,
        "traceloop.workflow.name": "support", "traceloop.entity.input": json.dumps({"q": QUESTION}),
    }, trace=0x21, span=0x21)),), expect={
        "operation": "chat", "provider": "openai", "request_model": "gpt-4o-mini",
        "response_model": "gpt-4o-mini-2024-07-18", "response_id": "chatcmpl-ol1", "finish_reasons": ["tool_calls"],
        "input_tokens": 30, "output_tokens": 12})

_V2_SPAN = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.response.model": "gpt-4o-mini-2024-07-18", "gen_ai.response.id": "chatcmpl-v21",
            "gen_ai.response.finish_reasons": ["stop"], "gen_ai.usage.input_tokens": 40,
            "gen_ai.usage.output_tokens": 11, "server.address": "127.0.0.1"}
OPENAI_V2_EVENTS = Case("openai-v2-default", "otel_genai", (trace_request(
    SpanSpec("opentelemetry.instrumentation.openai_v2", "chat gpt-4o-mini", _V2_SPAN, trace=0x31, span=0x31)),),
    logs=(log_request([
        ("gen_ai.system.message", {"gen_ai.system": "openai"}, {"content": SYSTEM}),
        ("gen_ai.user.message", {"gen_ai.system": "openai"}, {"content": QUESTION}),
        ("gen_ai.choice", {"gen_ai.system": "openai"},
         {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}),
    ], trace=0x31, span=0x31, scope="opentelemetry.instrumentation.openai_v2"),),
    expect={"operation": "chat", "provider": "openai", "response_id": "chatcmpl-v21", "input_tokens": 40,
            "output_tokens": 11, "finish_reasons": ["stop"]})

OPENAI_V2_DETAILS = Case("openai-v2-event-only", "otel_genai", (trace_request(
    SpanSpec("opentelemetry.instrumentation.openai_v2", "chat gpt-4o-mini",
             {**_V2_SPAN, "gen_ai.response.id": "chatcmpl-v22", "gen_ai.provider.name": "openai"},
             trace=0x32, span=0x32)),),
    logs=(log_request([("gen_ai.client.inference.operation.details", {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}],
        "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}],
                                    "finish_reason": "stop"}],
        "gen_ai.system_instructions": [{"type": "text", "content": SYSTEM}]}, None)],
        trace=0x32, span=0x32, scope="opentelemetry.instrumentation.openai_v2"),),
    expect={"operation": "chat", "provider": "openai", "response_id": "chatcmpl-v22", "input_tokens": 40})

ANTHROPIC_TWICE = Case("anthropic-native+openllmetry", "anthropic", (trace_request(
    SpanSpec("anthropic", "chat claude-sonnet-4", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4",
        "gen_ai.response.model": "claude-sonnet-4-20250514", "gen_ai.response.id": "msg_01AbC",
        "gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 20,
        "gen_ai.usage.cache_write.input_tokens": 7, "anthropic.message.stop_reason": "end_turn",
        **_semconv_messages()}, trace=0x41, span=0x41),
    SpanSpec("opentelemetry.instrumentation.anthropic", "anthropic.chat", {
        "llm.request.type": "chat", "gen_ai.system": "Anthropic", "gen_ai.request.model": "claude-sonnet-4",
        "gen_ai.response.id": "msg_01AbC", "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": QUESTION,
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": ANSWER,
        "gen_ai.usage.prompt_tokens": 50, "gen_ai.usage.completion_tokens": 20}, trace=0x42, span=0x42)),),
    expect={"operation": "chat", "provider": "anthropic", "request_model": "claude-sonnet-4",
            "response_model": "claude-sonnet-4-20250514", "input_tokens": 50, "output_tokens": 20,
            "cache_creation_input_tokens": 7, "finish_reasons": ["end_turn"]})

_VERCEL_PROMPT = json.dumps([{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": [{"type": "text", "text": QUESTION}]}])
VERCEL = Case("vercel-ai", "vercel_ai", (trace_request(
    SpanSpec("ai", "ai.generateText", {
        "ai.operationId": "ai.generateText", "operation.name": "ai.generateText", "ai.model.id": "gpt-4o-mini",
        "ai.model.provider": "openai.chat", "ai.prompt": json.dumps({"system": SYSTEM, "prompt": QUESTION}),
        "ai.response.text": ANSWER, "ai.response.finishReason": "stop", "ai.usage.promptTokens": 60,
        "ai.usage.completionTokens": 15}, trace=0x51, span=0x51, end=T0 + 2_000_000_000),
    SpanSpec("ai", "ai.generateText.doGenerate", {
        "ai.operationId": "ai.generateText.doGenerate", "operation.name": "ai.generateText.doGenerate",
        "ai.model.id": "gpt-4o-mini", "ai.model.provider": "openai.chat", "ai.prompt.messages": _VERCEL_PROMPT,
        "ai.response.text": ANSWER, "ai.response.finishReason": "stop", "ai.response.id": "chatcmpl-ve1",
        "ai.response.model": "gpt-4o-mini-2024-07-18", "ai.usage.inputTokens": 60, "ai.usage.outputTokens": 15,
        "gen_ai.system": "openai.chat", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.finish_reasons": ["stop"], "gen_ai.usage.input_tokens": 60,
        "gen_ai.usage.output_tokens": 15}, trace=0x51, span=0x52, parent=0x51,
        start=T0 + 100_000_000, end=T0 + 1_900_000_000)),),
    expect={"operation": "chat", "provider": "openai", "request_model": "gpt-4o-mini",
            "response_model": "gpt-4o-mini-2024-07-18", "response_id": "chatcmpl-ve1", "input_tokens": 60,
            "output_tokens": 15, "finish_reasons": ["stop"]})

PYDANTIC_AI = Case("pydantic-ai", "pydantic_ai", (trace_request(
    SpanSpec("pydantic-ai", "agent run", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
        "pydantic_ai.all_messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]),
        "final_result": ANSWER, "logfire.msg": "support run"}, trace=0x61, span=0x61, end=T0 + 3_000_000_000),
    SpanSpec("pydantic-ai", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.usage.input_tokens": 70,
        "gen_ai.usage.output_tokens": 18, "logfire.msg": "chat gpt-4o",
        "events": json.dumps([
            {"event.name": "gen_ai.system.message", "role": "system", "content": SYSTEM},
            {"event.name": "gen_ai.user.message", "role": "user", "content": QUESTION},
            {"event.name": "gen_ai.choice", "index": 0,
             "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}])},
        trace=0x61, span=0x62, parent=0x61)),),
    expect={"operation": "chat", "provider": "openai", "request_model": "gpt-4o",
            "response_model": "gpt-4o-2024-08-06", "input_tokens": 70, "output_tokens": 18})

OTEL_OLD_EVENTS = Case("otel-semconv-1.26", "otel_genai", (trace_request(
    SpanSpec("opentelemetry.instrumentation.openai", "openai.chat", {
        "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.prompt_tokens": 33, "gen_ai.usage.completion_tokens": 8},
        trace=0x71, span=0x71, events=[
            ("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps([{"role": "user", "content": QUESTION}])}),
            ("gen_ai.content.completion", {"gen_ai.completion": json.dumps(
                [{"role": "assistant", "content": ANSWER}])})])),),
    expect={"operation": "chat", "provider": "openai", "request_model": "gpt-4o-mini", "input_tokens": 33,
            "output_tokens": 8})

# OpenLIT's text form (older releases for every provider): no content attributes, `role: content` lines in a
# `gen_ai.content.prompt` span event, the completion's text in `gen_ai.content.completion`; counts as strings.
OPENLIT_TEXT = Case("openlit-text", "openlit", (trace_request(
    SpanSpec("openlit.instrumentation.openai", "chat gpt-4o-mini", {
        "telemetry.sdk.name": "openlit", "gen_ai.operation.name": "chat", "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.id": "chatcmpl-lit1",
        "gen_ai.response.finish_reasons": ["stop"], "gen_ai.usage.input_tokens": "36",
        "gen_ai.usage.output_tokens": "9"},
        trace=0x91, span=0x91, events=[
            ("gen_ai.content.prompt", {"gen_ai.prompt": f"system: {SYSTEM}\nuser: {QUESTION}"}),
            ("gen_ai.content.completion", {"gen_ai.completion": ANSWER})])),),
    expect={"operation": "chat", "provider": "openai", "request_model": "gpt-4o-mini", "input_tokens": 36,
            "output_tokens": 9, "response_id": "chatcmpl-lit1"})

# The older per-message GenAI events on a span that names only its model (Semantic Kernel .NET's form): a call.
GENAI_EVENTS = Case("semantic-kernel-events", "genai_events", (trace_request(
    SpanSpec("Microsoft.SemanticKernel.Diagnostics", "chat.completions gpt-4o-mini", {
        "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.id": "chatcmpl-sk1",
        "gen_ai.usage.prompt_tokens": 44, "gen_ai.usage.completion_tokens": 10},
        trace=0xA1, span=0xA1, events=[
            ("gen_ai.system.message", {"gen_ai.event.content": json.dumps({"role": "system", "content": SYSTEM})}),
            ("gen_ai.user.message", {"gen_ai.event.content": json.dumps({"role": "user", "content": QUESTION})}),
            ("gen_ai.choice", {"gen_ai.event.content": json.dumps({
                "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}})})])),),
    expect={"operation": "chat", "provider": None, "request_model": "gpt-4o-mini", "input_tokens": 44,
            "output_tokens": 10, "response_id": "chatcmpl-sk1"})

# Langfuse SDK v3: an agent observation (no call) around a generation with Langfuse's own usage keys and text output.
LANGFUSE = Case("langfuse-v3", "langfuse", (trace_request(
    SpanSpec("langfuse-sdk", "support-agent", {
        "langfuse.observation.type": "agent", "langfuse.observation.input": json.dumps({"question": QUESTION}),
        "langfuse.session.id": "session-1", "langfuse.user.id": "user-1"}, trace=0xB1, span=0xB1,
        end=T0 + 2_000_000_000),
    SpanSpec("langfuse-sdk", "answer", {
        "langfuse.observation.type": "generation", "langfuse.observation.model.name": "gpt-4o-mini",
        "langfuse.observation.input": json.dumps([{"role": "system", "content": SYSTEM},
                                                   {"role": "user", "content": QUESTION}]),
        "langfuse.observation.output": ANSWER,
        "langfuse.observation.usage_details": json.dumps({"input": 52, "output": 14, "input_cached_tokens": 8,
                                                          "output_reasoning_tokens": 3, "total": 66}),
        "langfuse.session.id": "session-1", "langfuse.user.id": "user-1"}, trace=0xB1, span=0xB2, parent=0xB1,
        start=T0 + 100_000_000)),),
    expect={"operation": "chat", "provider": None, "request_model": "gpt-4o-mini", "input_tokens": 52,
            "output_tokens": 14, "cached_input_tokens": 8, "reasoning_tokens": 3})

# Genkit (JS, older `candidates` response): a flow action (no call) around a Gemini model action with thoughts.
GENKIT = Case("genkit-js", "genkit", (trace_request(
    SpanSpec("genkit-tracer", "supportFlow", {
        "genkit:type": "action", "genkit:metadata:subtype": "flow", "genkit:name": "supportFlow",
        "genkit:input": json.dumps(QUESTION), "genkit:output": json.dumps(ANSWER)}, trace=0xC1, span=0xC1,
        end=T0 + 2_000_000_000),
    SpanSpec("genkit-tracer", "googleai/gemini-2.5-flash", {
        "genkit:type": "action", "genkit:metadata:subtype": "model", "genkit:name": "googleai/gemini-2.5-flash",
        "genkit:input": json.dumps({"messages": [{"role": "system", "content": [{"text": SYSTEM}]},
                                                 {"role": "user", "content": [{"text": QUESTION}]}]}),
        "genkit:output": json.dumps({"candidates": [{"index": 0, "finishReason": "stop", "message": {
            "role": "model", "content": [{"text": ANSWER}, {"toolRequest": {
                "ref": "t1", "name": "lookupCustomer", "input": {"email": EMAIL}}}]}}],
            "usage": {"inputTokens": 48, "outputTokens": 12, "thoughtsTokens": 30, "cachedContentTokens": 6}})},
        trace=0xC1, span=0xC2, parent=0xC1, start=T0 + 100_000_000)),),
    expect={"operation": "generate_content", "provider": "gcp.gemini", "request_model": "gemini-2.5-flash",
            "input_tokens": 48, "output_tokens": 12, "reasoning_tokens": 30, "cached_input_tokens": 6, "finish_reasons": ["stop"]})

# LlamaIndex's own OpenTelemetry (llama-index-observability-otel) with an Anthropic model: a workflow step (no
# call) around the model method whose LLMChatStartEvent / LLMChatEndEvent span events hold the call; Anthropic's
# raw usage names (input_tokens / output_tokens).
LLAMA_INDEX = Case("llama-index-own", "llama_index", (trace_request(
    SpanSpec("llamaindex.opentelemetry.tracer", "BaseWorkflowAgent.run_agent_step", {
        "llamaindex.run_id": "run1", "llamaindex.step.input_summary": f"AgentSetup(input={QUESTION})"},
        trace=0xF1, span=0xF1, end=T0 + 2_000_000_000),
    SpanSpec("llamaindex.opentelemetry.tracer", "Anthropic.achat", {"llamaindex.run_id": "run1"},
             trace=0xF1, span=0xF2, parent=0xF1, start=T0 + 100_000_000, events=[
        ("LLMChatStartEvent", {"messages": json.dumps([
            {"role": "system", "additional_kwargs": {}, "blocks": [{"block_type": "text", "text": SYSTEM}]},
            {"role": "user", "additional_kwargs": {}, "blocks": [{"block_type": "text", "text": QUESTION}]}]),
            "model_dict.model_name": "claude-haiku-4-5", "model_dict.class_name": "Anthropic_LLM"}),
        ("LLMChatEndEvent", {"response.message.role": "assistant",
                             "response.message.blocks": json.dumps([{"block_type": "text", "text": ANSWER}]),
                             "response.raw.id": "msg_li1", "response.raw.model": "claude-haiku-4-5-20251001",
                             "response.raw.usage.input_tokens": 61, "response.raw.usage.output_tokens": 13})])),),
    expect={"operation": "chat", "provider": "anthropic", "request_model": "claude-haiku-4-5", "input_tokens": 61,
            "output_tokens": 13, "response_id": "msg_li1", "response_model": "claude-haiku-4-5-20251001"})

# The Verdict SDK's span around a call that openai-v2 also instruments (both record the response id, as the
# real SDK does): one call, the SDK's row.
VERDICT_AND_V2 = Case("verdict+openai-v2", "verdict", (trace_request(
    SpanSpec("verdict.tracing", "chat gpt-4o-mini", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.id": "chatcmpl-v28",
        "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 11, "verdict.intent_key": "billing.refund",
        **_semconv_messages()}, trace=0x81, span=0x81),
    SpanSpec("opentelemetry.instrumentation.openai_v2", "chat gpt-4o-mini",
             {**_V2_SPAN, "gen_ai.response.id": "chatcmpl-v28"}, trace=0x81, span=0x82, parent=0x81,
             start=T0 + 1000, end=T0 + 800_000_000)),),
    expect={"operation": "chat", "provider": "openai", "request_model": "gpt-4o-mini", "input_tokens": 40,
            "output_tokens": 11, "intent_key": "billing.refund"})

# MLflow Tracing (every value JSON-encoded): a chain span (no call) around an Anthropic-flavor chat model span.
MLFLOW = Case("mlflow-anthropic", "mlflow", (trace_request(
    SpanSpec("mlflow.tracing.provider", "support_chain", {
        "mlflow.spanType": json.dumps("CHAIN"), "mlflow.spanInputs": json.dumps({"question": QUESTION}),
        "mlflow.spanOutputs": json.dumps(ANSWER)}, trace=0xD1, span=0xD1, end=T0 + 2_000_000_000),
    SpanSpec("mlflow.tracing.provider", "Messages", {
        "mlflow.spanType": json.dumps("CHAT_MODEL"), "mlflow.message.format": json.dumps("anthropic"),
        "mlflow.llm.model": json.dumps("claude-3-5-haiku-latest"),
        "mlflow.spanInputs": json.dumps({"model": "claude-3-5-haiku-latest", "system": SYSTEM, "max_tokens": 256,
                                         "messages": [{"role": "user", "content": QUESTION}]}),
        "mlflow.spanOutputs": json.dumps({"id": "msg_ml1", "model": "claude-3-5-haiku-20241022", "role": "assistant",
                                          "content": [{"type": "text", "text": ANSWER}], "stop_reason": "end_turn"}),
        "mlflow.chat.tokenUsage": json.dumps({"input_tokens": 44, "output_tokens": 13, "total_tokens": 57})},
        trace=0xD1, span=0xD2, parent=0xD1, start=T0 + 100_000_000)),),
    expect={"operation": "chat", "provider": "anthropic", "request_model": "claude-3-5-haiku-latest",
            "response_id": "msg_ml1", "input_tokens": 44, "output_tokens": 13})

# LiteLLM's `otel` callback naming the model only as it was given (`provider/model`), and its raw request span.
LITELLM = Case("litellm-otel", "litellm", (trace_request(
    SpanSpec("litellm", "litellm_request", {
        "gen_ai.operation.name": "chat", "litellm.provider.model": "mistral/mistral-small-latest",
        "gen_ai.usage.input_tokens": 39, "gen_ai.usage.output_tokens": 12, **_semconv_messages(),
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}])},
        trace=0xE1, span=0xE1),
    SpanSpec("litellm", "raw_gen_ai_request", {
        "llm.mistral.messages": json.dumps([{"role": "user", "content": QUESTION}]),
        "llm.mistral.choices": json.dumps([{"message": {"role": "assistant", "content": ANSWER}}])},
        trace=0xE1, span=0xE2, parent=0xE1, start=T0 + 1000)),),
    expect={"operation": "chat", "provider": "mistral_ai", "request_model": "mistral-small-latest",
            "input_tokens": 39, "output_tokens": 12})

CASES = (OPENINFERENCE, OPENLLMETRY_OLD, OPENAI_V2_EVENTS, OPENAI_V2_DETAILS, ANTHROPIC_TWICE, VERCEL,
         PYDANTIC_AI, OTEL_OLD_EVENTS, VERDICT_AND_V2, OPENLIT_TEXT, GENAI_EVENTS, LANGFUSE, GENKIT, MLFLOW, LITELLM,
         LLAMA_INDEX)
