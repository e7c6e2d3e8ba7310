"""The older GenAI event convention alone: a span with a model but neither `gen_ai.operation.name` nor a
provider, its messages in per-message span events (`gen_ai.system.message`, `gen_ai.user.message`,
`gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`, each with `gen_ai.event.content` or its
own attributes), as Semantic Kernel's .NET and older Python releases and some SDKs send. The standard layer
reads those events (collector.dialects.events); this dialect says the span is a chat call when they gave it
messages. Last in the registry: spans with an operation or a provider are otel_genai's.
"""

from __future__ import annotations

from collector.dialects.common import EMPTY, GenAIFields
from verdict.semconv import REQUEST_MODEL, RESPONSE_MODEL


def recognises(scope_name: str, attrs: dict) -> bool:
    return REQUEST_MODEL in attrs or RESPONSE_MODEL in attrs


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    if base.operation is None and (base.input_messages or base.output_messages):
        return EMPTY._replace(operation="chat")
    return EMPTY
