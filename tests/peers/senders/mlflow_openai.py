"""Two chat completions with the `openai` client under MLflow tracing (`mlflow.openai.autolog()`), exported the
way MLflow documents for an OpenTelemetry backend: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set, MLflow's own
OTLP/HTTP protobuf exporter sends its spans there (no tracking server). Its spans carry `mlflow.*` attributes:
`mlflow.spanType`, `mlflow.spanInputs`/`mlflow.spanOutputs` (the request and response as JSON),
`mlflow.chat.tokenUsage`.

usage: mlflow_openai.py [stream]
`stream`: both calls streamed with `stream_options.include_usage` (the chunks consumed).
"""

from __future__ import annotations

import os
import sys

import _peer


def main() -> None:
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = _peer.endpoint("traces")
    os.environ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
    os.environ["OTEL_SERVICE_NAME"] = _peer.SERVICE
    if _peer.headers():
        os.environ["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = os.environ["PEER_OTLP_HEADERS"]
    import mlflow
    import openai

    # MLflow's own (isolated) tracer provider: flushed before the report
    from mlflow.tracing.provider import provider

    mlflow.openai.autolog()
    client = openai.OpenAI(base_url=os.environ["PEER_OPENAI_BASE_URL"], api_key="sk-fake-peer", max_retries=0)
    calls = _peer.chat_completions(client, "openai", stream=sys.argv[1:] == ["stream"])
    _peer.report(_peer.versions("mlflow-skinny", "openai", "opentelemetry-sdk"), calls, provider.get())


if __name__ == "__main__":
    main()
