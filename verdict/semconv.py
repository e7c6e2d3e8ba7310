"""Names shared by every layer: span attribute names and the span lake's columns.

The attribute names are those of the OpenTelemetry GenAI semantic conventions (latest experimental)
and Verdict's own; the SDK writes them, the collector reads them and fills the lake's first-class
columns from them, the views and the daemon read those columns. Stdlib only: the collector's
decode workers import it without the tracing SDK. Plain string constants, precomputed once: the
hot paths only do dict stores and lookups with them.
"""

from __future__ import annotations

from dataclasses import dataclass

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"  # deprecated; only with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai/dup
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TOP_P = "gen_ai.request.top_p"
REQUEST_TOP_K = "gen_ai.request.top_k"
REQUEST_SEED = "gen_ai.request.seed"
REQUEST_STOP_SEQUENCES = "gen_ai.request.stop_sequences"
REQUEST_FREQUENCY_PENALTY = "gen_ai.request.frequency_penalty"
REQUEST_PRESENCE_PENALTY = "gen_ai.request.presence_penalty"
REQUEST_CHOICE_COUNT = "gen_ai.request.choice.count"
REQUEST_STREAM = "gen_ai.request.stream"
REQUEST_ENCODING_FORMATS = "gen_ai.request.encoding_formats"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
EMBEDDINGS_DIMENSION_COUNT = "gen_ai.embeddings.dimension.count"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
ERROR_TYPE_OTHER = "_OTHER"

OPERATION_CHAT = "chat"
OPERATION_EMBEDDINGS = "embeddings"

# Verdict's own attributes.
INTENT_KEY = "verdict.intent_key"
WORKLOAD = "verdict.workload"
TENANT_ID = "verdict.tenant_id"
# Why a span that would carry content has none (the SDK shed it: see docs/tracing.md, overload).
CONTENT_OMITTED = "verdict.content_omitted"
CONVERSATION_END = "verdict.conversation.end"  # true on the spans of a conversation's last turn

# Conversations (docs/conversations.md): the key of a multi-turn conversation, the semconv name first, then
# the vendors' spellings in the order the collector reads them (the first valid value of a span wins).
CONVERSATION_ID = "gen_ai.conversation.id"
LANGFUSE_SESSION_ID = "langfuse.session.id"
OPENINFERENCE_SESSION_ID = "session.id"
VERCEL_METADATA_PREFIX = "ai.telemetry.metadata."  # experimental_telemetry.metadata.<key>
TRACELOOP_ASSOCIATION_PREFIX = "traceloop.association.properties."  # set_association_properties({<key>: ...})
CONVERSATION_METADATA_KEYS = ("conversation_id", "conversationId", "session_id", "sessionId", "thread_id",
                              "threadId", "chat_id", "chatId")
CONVERSATION_ID_ATTRIBUTES: tuple[str, ...] = (
    CONVERSATION_ID, LANGFUSE_SESSION_ID, OPENINFERENCE_SESSION_ID,
    *(VERCEL_METADATA_PREFIX + key for key in CONVERSATION_METADATA_KEYS),
    *(TRACELOOP_ASSOCIATION_PREFIX + key for key in CONVERSATION_METADATA_KEYS),
)

# Evaluation results (docs/evaluations.md): the GenAI `gen_ai.evaluation.result` event, its evaluator provenance
# as proposed (semantic-conventions-genai#359), and Verdict's own attributes on the records the daemon exports.
EVENT_EVALUATION_RESULT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
EVALUATOR_NAME = "gen_ai.evaluation.evaluator.name"
EVALUATOR_VERSION = "gen_ai.evaluation.evaluator.version"
EVALUATOR_TYPE = "gen_ai.evaluation.evaluator.type"
EVALUATOR_ID = "gen_ai.evaluation.evaluator.id"
EVALUATION_RECORD_ID = "verdict.evaluation.id"  # one record's stable id: receivers deduplicate on it
EVALUATION_ATTEMPT = "verdict.evaluation.attempt"
EVALUATION_RUBRIC_NAME = "verdict.evaluation.rubric.name"
EVALUATION_RUBRIC_VERSION = "verdict.evaluation.rubric.version"
EVALUATION_JUDGE_MODELS = "verdict.evaluation.judge.models"

# Resource attributes.
SERVICE_NAME = "service.name"

# --- What the collector reads from other instrumentations (collector/dialects) ---------------
# Attribute names only, grouped per dialect; keys inside JSON payloads (a Vercel prompt's
# `toolCallId`, an OpenAI response's `choices`) are the payload's shape and stay in the mappers.

# OTel GenAI: older names, read after the current ones above (collector.dialects.otel_genai).
USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"
USAGE_CACHE_READ_INPUT_TOKENS_OLD = "gen_ai.usage.cache_read_input_tokens"
USAGE_CACHE_WRITE_INPUT_TOKENS = "gen_ai.usage.cache_write.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS_OLD = "gen_ai.usage.cache_creation_input_tokens"
USAGE_REASONING_TOKENS = "gen_ai.usage.reasoning_tokens"
USAGE_PREFIX = "gen_ai.usage."
OUTPUT_TYPE = "gen_ai.output.type"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
OPENAI_REQUEST_SERVICE_TIER = "gen_ai.openai.request.service_tier"
OPENAI_RESPONSE_SERVICE_TIER = "gen_ai.openai.response.service_tier"
HTTP_RESPONSE_STATUS_CODE = "http.response.status_code"
# GenAI events (OTLP log records or span events) and their attributes.
EVENT_NAME = "event.name"
EVENT_USER_MESSAGE = "gen_ai.user.message"
EVENT_ASSISTANT_MESSAGE = "gen_ai.assistant.message"
EVENT_TOOL_MESSAGE = "gen_ai.tool.message"
EVENT_SYSTEM_MESSAGE = "gen_ai.system.message"
EVENT_CHOICE = "gen_ai.choice"
EVENT_INFERENCE_DETAILS = "gen_ai.client.inference.operation.details"
EVENT_CONTENT_PROMPT = "gen_ai.content.prompt"  # older semconv: the whole prompt as one JSON attribute
EVENT_CONTENT_COMPLETION = "gen_ai.content.completion"
EVENT_CONTENT = "gen_ai.event.content"
EVENT_PROMPT = "gen_ai.prompt"  # the attribute of gen_ai.content.prompt events
EVENT_COMPLETION = "gen_ai.completion"

# OpenInference (Arize Phoenix); messages are flattened: `llm.input_messages.N.message.role`, ...
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
OPENINFERENCE_MODEL_NAME = "llm.model_name"
OPENINFERENCE_PROVIDER = "llm.provider"
OPENINFERENCE_SYSTEM = "llm.system"
OPENINFERENCE_INVOCATION_PARAMETERS = "llm.invocation_parameters"
OPENINFERENCE_INPUT_MESSAGES = "llm.input_messages."
OPENINFERENCE_OUTPUT_MESSAGES = "llm.output_messages."
OPENINFERENCE_TOKEN_COUNT_PREFIX = "llm.token_count."
OPENINFERENCE_TOKEN_COUNT_PROMPT = "llm.token_count.prompt"
OPENINFERENCE_TOKEN_COUNT_COMPLETION = "llm.token_count.completion"
OPENINFERENCE_TOKEN_COUNT_CACHE_READ = "llm.token_count.prompt_details.cache_read"
OPENINFERENCE_TOKEN_COUNT_CACHE_WRITE = "llm.token_count.prompt_details.cache_write"
OPENINFERENCE_TOKEN_COUNT_REASONING = "llm.token_count.completion_details.reasoning"
OPENINFERENCE_INPUT_VALUE = "input.value"
OPENINFERENCE_OUTPUT_VALUE = "output.value"
OPENINFERENCE_INPUT_MIME_TYPE = "input.mime_type"
OPENINFERENCE_OUTPUT_MIME_TYPE = "output.mime_type"
# ... and inside one flattened message:
OPENINFERENCE_MESSAGE_ROLE = "message.role"
OPENINFERENCE_MESSAGE_CONTENT = "message.content"
OPENINFERENCE_MESSAGE_TOOL_CALL_ID = "message.tool_call_id"
OPENINFERENCE_MESSAGE_CONTENTS = "message.contents."
OPENINFERENCE_MESSAGE_TOOL_CALLS = "message.tool_calls."
OPENINFERENCE_CONTENT_TYPE = "message_content.type"
OPENINFERENCE_CONTENT_TEXT = "message_content.text"
OPENINFERENCE_CONTENT_IMAGE_URL = "message_content.image.image.url"
OPENINFERENCE_TOOL_CALL_ID = "tool_call.id"
OPENINFERENCE_TOOL_CALL_NAME = "tool_call.function.name"
OPENINFERENCE_TOOL_CALL_ARGUMENTS = "tool_call.function.arguments"

# OpenLLMetry (Traceloop); older versions flatten messages: `gen_ai.prompt.N.role`, ...
OPENLLMETRY_REQUEST_TYPE = "llm.request.type"
OPENLLMETRY_IS_STREAMING = "llm.is_streaming"
OPENLLMETRY_GEN_AI_IS_STREAMING = "gen_ai.is_streaming"
OPENLLMETRY_USAGE_TOTAL_TOKENS = "gen_ai.usage.total_tokens"
OPENLLMETRY_USAGE_PREFIX = "llm.usage."
OPENLLMETRY_USAGE_PROMPT_TOKENS = "llm.usage.prompt_tokens"
OPENLLMETRY_USAGE_COMPLETION_TOKENS = "llm.usage.completion_tokens"
OPENLLMETRY_USAGE_CACHE_READ_INPUT_TOKENS = "llm.usage.cache_read_input_tokens"
OPENLLMETRY_SPAN_KIND = "traceloop.span.kind"
OPENLLMETRY_TRACELOOP_PREFIX = "traceloop."
OPENLLMETRY_PROMPTS = "gen_ai.prompt."
OPENLLMETRY_COMPLETIONS = "gen_ai.completion."
OPENLLMETRY_FIRST_PROMPT_CONTENT = "gen_ai.prompt.0.content"
OPENLLMETRY_FIRST_COMPLETION_CONTENT = "gen_ai.completion.0.content"
# ... and inside one flattened message:
OPENLLMETRY_MESSAGE_KEYS = ("role", "content", "tool_call_id", "finish_reason")
OPENLLMETRY_MESSAGE_TOOL_CALLS = "tool_calls."

# Vercel AI SDK (`experimental_telemetry`).
VERCEL_OPERATION_ID = "ai.operationId"
VERCEL_OPERATION_NAME = "operation.name"
VERCEL_MODEL_ID = "ai.model.id"
VERCEL_MODEL_PROVIDER = "ai.model.provider"
VERCEL_PROMPT_MESSAGES = "ai.prompt.messages"
VERCEL_RESPONSE_TEXT = "ai.response.text"
VERCEL_RESPONSE_OBJECT = "ai.response.object"
VERCEL_RESPONSE_TOOL_CALLS = "ai.response.toolCalls"
VERCEL_RESPONSE_MODEL = "ai.response.model"
VERCEL_RESPONSE_ID = "ai.response.id"
VERCEL_RESPONSE_FINISH_REASON = "ai.response.finishReason"
VERCEL_USAGE_PREFIX = "ai.usage."
VERCEL_USAGE_INPUT_TOKENS = "ai.usage.inputTokens"
VERCEL_USAGE_PROMPT_TOKENS = "ai.usage.promptTokens"  # AI SDK 4
VERCEL_USAGE_OUTPUT_TOKENS = "ai.usage.outputTokens"
VERCEL_USAGE_COMPLETION_TOKENS = "ai.usage.completionTokens"  # AI SDK 4
VERCEL_USAGE_CACHED_INPUT_TOKENS = "ai.usage.cachedInputTokens"
VERCEL_USAGE_REASONING_TOKENS = "ai.usage.reasoningTokens"

# Pydantic AI / Logfire.
LOGFIRE_MSG = "logfire.msg"
LOGFIRE_SPAN_TYPE = "logfire.span_type"  # "span", or "log" for a zero-length log span
LOGFIRE_LEVEL_NUM = "logfire.level_num"
LOGFIRE_REQUEST_DATA = "request_data"  # its LLM integrations' request (JSON): the whole request in semconv v1
PYDANTIC_AI_MODEL_REQUEST_PARAMETERS = "model_request_parameters"
PYDANTIC_AI_EVENTS = "events"  # older versions: a JSON list of GenAI events, each {"event.name": ...}

# OpenLIT: its spans say who sent them (also a resource attribute); content may be in its text form.
OPENLIT_SCOPE_PREFIX = "openlit"
TELEMETRY_SDK_NAME = "telemetry.sdk.name"
OPENLIT_SDK_NAME = "openlit"

# LiteLLM's own OTel callback: the name it was given (`provider/model`) besides the semconv model.
LITELLM_SCOPE = "litellm"
LITELLM_PROVIDER_MODEL = "litellm.provider.model"

# MLflow Tracing exported as OTLP: `mlflow.*` attributes, each value JSON-encoded.
MLFLOW_SPAN_TYPE = "mlflow.spanType"
MLFLOW_SPAN_INPUTS = "mlflow.spanInputs"
MLFLOW_SPAN_OUTPUTS = "mlflow.spanOutputs"
MLFLOW_TOKEN_USAGE = "mlflow.chat.tokenUsage"
MLFLOW_CHAT_MESSAGES = "mlflow.chat.messages"  # MLflow 2: the conversation, the reply last
MLFLOW_MODEL = "mlflow.llm.model"
MLFLOW_MESSAGE_FORMAT = "mlflow.message.format"

# Langfuse SDK v3+ (its own OTel scope): observations; JSON keys inside usage_details stay in the mapper.
LANGFUSE_SCOPE = "langfuse-sdk"
LANGFUSE_OBSERVATION_TYPE = "langfuse.observation.type"
LANGFUSE_MODEL = "langfuse.observation.model.name"
LANGFUSE_USAGE_DETAILS = "langfuse.observation.usage_details"
LANGFUSE_INPUT = "langfuse.observation.input"
LANGFUSE_OUTPUT = "langfuse.observation.output"

# Genkit (Go, JS, Python): `genkit:*` span attributes; keys inside genkit:input / genkit:output stay in the mapper.
GENKIT_SCOPE = "genkit-tracer"
GENKIT_TYPE = "genkit:type"
GENKIT_SUBTYPE = "genkit:metadata:subtype"
GENKIT_NAME = "genkit:name"
GENKIT_INPUT = "genkit:input"
GENKIT_OUTPUT = "genkit:output"

# LlamaIndex's own OpenTelemetry (llama-index-observability-otel): a model call's data is in two span events,
# their attributes flattened from LlamaIndex's instrumentation events (keys inside `messages` stay in the mapper).
LLAMA_INDEX_SCOPE = "llamaindex.opentelemetry.tracer"
LLAMA_INDEX_CHAT_START = "LLMChatStartEvent"
LLAMA_INDEX_CHAT_END = "LLMChatEndEvent"
LLAMA_INDEX_MESSAGES = "messages"
LLAMA_INDEX_MODEL = "model_dict.model_name"
LLAMA_INDEX_MODEL_CLASS = "model_dict.class_name"
LLAMA_INDEX_RESPONSE_ROLE = "response.message.role"
LLAMA_INDEX_RESPONSE_BLOCKS = "response.message.blocks"
LLAMA_INDEX_RESPONSE_TOOL_CALLS = "response.message.additional_kwargs.tool_calls"
LLAMA_INDEX_RAW_ID = "response.raw.id"
LLAMA_INDEX_RAW_MODEL = "response.raw.model"
LLAMA_INDEX_RAW_CHOICES = "response.raw.choices"
LLAMA_INDEX_RAW_PROMPT_TOKENS = "response.raw.usage.prompt_tokens"
LLAMA_INDEX_RAW_COMPLETION_TOKENS = "response.raw.usage.completion_tokens"
LLAMA_INDEX_RAW_INPUT_TOKENS = "response.raw.usage.input_tokens"
LLAMA_INDEX_RAW_OUTPUT_TOKENS = "response.raw.usage.output_tokens"
LLAMA_INDEX_RAW_CACHED_TOKENS = "response.raw.usage.prompt_tokens_details.cached_tokens"
LLAMA_INDEX_RAW_REASONING_TOKENS = "response.raw.usage.completion_tokens_details.reasoning_tokens"

# Anthropic SDK native spans.
ANTHROPIC_STOP_REASON = "anthropic.message.stop_reason"

# Resource attributes beyond service.name (structural: collector/redaction.py).
SERVICE_VERSION = "service.version"
SERVICE_NAMESPACE = "service.namespace"
SERVICE_INSTANCE_ID = "service.instance.id"
DEPLOYMENT_ENVIRONMENT = "deployment.environment"
DEPLOYMENT_ENVIRONMENT_NAME = "deployment.environment.name"
HOST_ARCH = "host.arch"
OS_TYPE = "os.type"
TELEMETRY_SDK_PREFIX = "telemetry.sdk."
TELEMETRY_AUTO_PREFIX = "telemetry.auto."
PROCESS_RUNTIME_PREFIX = "process.runtime."

# The span lake (collector/schema.py turns these into Arrow schemas).
#
# `tenant` and `date` are not stored in the files: they are hive partition keys
# (`spans/tenant=<t>/date=<YYYY-MM-DD>/`), the standard layout Spark, Trino and DuckDB read.
# Times are UTC, stored as naive nanosecond timestamps so DuckDB keeps nanosecond precision
# (`TIMESTAMP_NS`; a tz-aware type would round to microseconds).


@dataclass(frozen=True)
class Column:
    name: str
    arrow_type: str  # one of: string, int64, timestamp_ns, string_list
    doc: str


SPAN_COLUMNS: tuple[Column, ...] = (
    Column("trace_id", "string", "32 lower-case hex digits"),
    Column("span_id", "string", "16 lower-case hex digits"),
    Column("parent_span_id", "string", "16 hex digits; NULL for a root span"),
    Column("trace_state", "string", "W3C trace state; NULL when empty"),
    Column("name", "string", "span name"),
    Column("kind", "string", "UNSPECIFIED, INTERNAL, SERVER, CLIENT, PRODUCER or CONSUMER"),
    Column("start_time", "timestamp_ns", "span start, UTC, nanoseconds"),
    Column("end_time", "timestamp_ns", "span end, UTC, nanoseconds"),
    Column("duration_ns", "int64", "end_time - start_time in nanoseconds"),
    Column("status_code", "string", "UNSET, OK or ERROR"),
    Column("status_message", "string", "status description; NULL when empty"),
    Column("service_name", "string", f"resource attribute {SERVICE_NAME}"),
    Column("scope_name", "string", "instrumentation scope name"),
    Column("scope_version", "string", "instrumentation scope version"),
    Column("resource_attributes", "string", "JSON object of all resource attributes"),
    Column(
        "attributes",
        "string",
        "JSON object of span attributes, typed (string/int/float/bool/list/object; bytes as "
        "base64); message contents live in their own columns below, not here",
    ),
    Column("events", "string", "JSON list of {name, time_unix_nano, attributes}"),
    Column("links", "string", "JSON list of {trace_id, span_id, trace_state, attributes}"),
    Column("dropped_counts", "string", "JSON {attributes, events, links} counts dropped by the SDK; NULL when all zero"),
    # The GenAI columns below are filled by collector.dialects from whichever instrumentation sent
    # the span (docs/tracing.md, *Dialects*); the attribute named is the OTel GenAI semconv one.
    Column("operation", "string", f"{OPERATION_NAME} (chat, text_completion, embeddings, ...)"),
    Column("provider", "string", f"{PROVIDER_NAME} (else {SYSTEM}), normalised to the semconv values"),
    Column("request_model", "string", REQUEST_MODEL),
    Column("response_model", "string", RESPONSE_MODEL),
    Column("response_id", "string", RESPONSE_ID),
    Column("finish_reasons", "string_list", RESPONSE_FINISH_REASONS),
    Column("input_tokens", "int64", f"{USAGE_INPUT_TOKENS} (or gen_ai.usage.prompt_tokens)"),
    Column("output_tokens", "int64", f"{USAGE_OUTPUT_TOKENS} (or gen_ai.usage.completion_tokens)"),
    Column("cached_input_tokens", "int64", USAGE_CACHE_READ_INPUT_TOKENS),
    Column("cache_creation_input_tokens", "int64", USAGE_CACHE_CREATION_INPUT_TOKENS),
    Column(
        "reasoning_tokens",
        "int64",
        f"{USAGE_REASONING_OUTPUT_TOKENS} (or the older gen_ai.usage.reasoning_tokens)",
    ),
    Column("intent_key", "string", f"{INTENT_KEY} if valid (verdict.intent.validate_intent_key), else NULL"),
    Column(
        "intent_key_error",
        "string",
        f"why {INTENT_KEY} was not accepted (redacted); NULL when valid or absent. The sent value stays "
        "in `attributes`",
    ),
    Column("workload", "string", WORKLOAD),
    Column(
        "conversation_id",
        "string",
        f"{CONVERSATION_ID} or a vendor spelling (CONVERSATION_ID_ATTRIBUTES, docs/conversations.md) if valid "
        "(verdict.conversation.validate_conversation_id), else NULL",
    ),
    Column("error_type", "string", ERROR_TYPE),
    Column("input_messages", "string", f"{INPUT_MESSAGES} (semconv message JSON, redacted)"),
    Column("output_messages", "string", f"{OUTPUT_MESSAGES} (semconv message JSON, redacted)"),
    Column("system_instructions", "string", f"{SYSTEM_INSTRUCTIONS} (semconv parts JSON, redacted)"),
    Column(
        "content_omitted",
        "string",
        f"{CONTENT_OMITTED}: why the Verdict SDK exported the span without its content (export_backlog, "
        "content_error; docs/tracing.md, under overload); NULL when it was not shed (and in segments written before "
        "the column). The attribute stays in `attributes`",
    ),
    Column(
        "dialect",
        "string",
        "the instrumentation dialect recognised (verdict, vercel_ai, openinference, openllmetry, pydantic_ai, "
        "anthropic, langfuse, genkit, openlit, otel_genai, genai_events); NULL when none",
    ),
    Column("received_at", "timestamp_ns", "when the collector accepted the request, UTC"),
)

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in SPAN_COLUMNS)

# OTLP log records (`logs/tenant=<t>/date=<d>/`): GenAI events among them (openai-v2's default
# mode) carry the messages of the span they belong to; `llm_calls` joins them on (trace_id, span_id).
LOG_COLUMNS: tuple[Column, ...] = (
    Column("record_id", "string", "SHA-256 (first 32 hex digits) of the record as sent: retried copies share it"),
    Column("trace_id", "string", "32 hex digits of the span the record was emitted in; NULL without one"),
    Column("span_id", "string", "16 hex digits; NULL without one"),
    Column("time", "timestamp_ns", "event time (time_unix_nano, else observed time, else received), UTC"),
    Column("observed_time", "timestamp_ns", "observed_time_unix_nano; NULL when unset"),
    Column("sequence", "int64", "position of the record in its export request (orders events of one instant)"),
    Column("severity_number", "int64", "1-24; NULL when unset"),
    Column("severity_text", "string", "severity text; NULL when empty"),
    Column("event_name", "string", "the record's event_name, else its event.name attribute"),
    Column("body", "string", "JSON of the body AnyValue (redacted)"),
    Column("attributes", "string", "JSON object of the record's attributes (redacted)"),
    Column("service_name", "string", f"resource attribute {SERVICE_NAME}"),
    Column("scope_name", "string", "instrumentation scope name"),
    Column("scope_version", "string", "instrumentation scope version"),
    Column("resource_attributes", "string", "JSON object of all resource attributes (redacted)"),
    Column("input_messages", "string", "GenAI events: the input messages this record carries (semconv JSON, redacted)"),
    Column("output_messages", "string", "GenAI events: the output messages this record carries"),
    Column("system_instructions", "string", "GenAI events: the system instruction parts this record carries"),
    Column("received_at", "timestamp_ns", "when the collector accepted the request, UTC"),
)
SCHEMAS = {"spans": SPAN_COLUMNS, "logs": LOG_COLUMNS}
