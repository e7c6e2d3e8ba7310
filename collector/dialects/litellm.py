"""LiteLLM's own OpenTelemetry callback (`litellm.callbacks = ["otel"]`, scope `litellm`).

Per call a `litellm_request` span with the GenAI semconv attributes (read by the standard layer: the model
as the provider got it, `gen_ai.system`, usage, content) and the name LiteLLM was given,
`litellm.provider.model` (`openai/gpt-4o-mini`), which stays in `attributes`; a model named only there is
split like every router's name (collector.dialects.vocabulary). Its child `raw_gen_ai_request` span holds
the provider's raw request and response (`llm.<provider>.*`, redacted in `attributes`): the same call
again, so no call of its own. OpenInference's LiteLLM instrumentation is the openinference dialect's.
"""

from __future__ import annotations

from collector.dialects.common import EMPTY, GenAIFields, to_str
from verdict.semconv import LITELLM_PROVIDER_MODEL, LITELLM_SCOPE


def recognises(scope_name: str, attrs: dict) -> bool:
    return scope_name == LITELLM_SCOPE


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    if base.operation is None:
        return EMPTY  # raw_gen_ai_request, or a LiteLLM span that is no model call
    return EMPTY._replace(request_model=to_str(attrs.get(LITELLM_PROVIDER_MODEL)))
