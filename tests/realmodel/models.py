"""Judge models on the tier's llama.cpp server for the daemon's `module:attribute` model form: the base URL
comes from OPENAI_BASE_URL (set by the tests), the options are the ones docs/models.md recommends."""

from __future__ import annotations

from tests.realmodel.server import MODEL_ALIAS
from verdict.models.openai_model import OpenAIModel


def judge_model() -> OpenAIModel:
    return OpenAIModel(MODEL_ALIAS, supports_json_schema=False, timeout=300.0)


def refused_parameter_model() -> OpenAIModel:
    """Sends, with every call, a parameter value llama.cpp's request validation refuses (HTTP 422 naming it):
    a deterministic refusal, as a misconfigured judge meets it."""
    return _Refused(MODEL_ALIAS, supports_json_schema=False, timeout=300.0)


class _Refused(OpenAIModel):
    def _attempt(self, request, params):
        return super()._attempt(request, {**params, "frequency_penalty": "high"})
