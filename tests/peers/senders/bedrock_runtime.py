"""The scenario's two questions through boto3's `bedrock-runtime` client under one Bedrock instrumentation:
the first with the Converse API, the second with InvokeModel (an Anthropic Messages body), the two ways teams
call Bedrock.

usage: bedrock_runtime.py openinference|openllmetry
"""

from __future__ import annotations

import json
import os
import sys

import _peer


def instrument(suite: str, tracer_provider) -> dict[str, str]:
    if suite == "openinference":
        from openinference.instrumentation.bedrock import BedrockInstrumentor

        BedrockInstrumentor().instrument(tracer_provider=tracer_provider)
        return _peer.versions("openinference-instrumentation-bedrock")
    if suite == "openllmetry":
        from opentelemetry.instrumentation.bedrock import BedrockInstrumentor as OpenLLMetryBedrock

        OpenLLMetryBedrock().instrument(tracer_provider=tracer_provider)
        return _peer.versions("opentelemetry-instrumentation-bedrock")
    raise SystemExit(f"unknown suite {suite!r}")


def main() -> None:
    tp = _peer.tracer_provider()
    packages = instrument(sys.argv[1], tp) | _peer.versions("boto3", "botocore", "opentelemetry-sdk")

    import boto3

    client = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=os.environ["PEER_BEDROCK_URL"],
                          aws_access_key_id="AKIAFAKEPEER", aws_secret_access_key="fake-peer-secret")
    first, second = _peer.QUESTIONS
    with _peer.intent():
        client.converse(modelId=_peer.BEDROCK_MODEL, system=[{"text": _peer.SYSTEM}],
                        messages=[{"role": "user", "content": [{"text": first}]}],
                        inferenceConfig={"maxTokens": 200})
    with _peer.intent():
        body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 200, "system": _peer.SYSTEM,
                "messages": [{"role": "user", "content": [{"type": "text", "text": second}]}]}
        response = client.invoke_model(modelId=_peer.BEDROCK_MODEL, body=json.dumps(body))
        json.loads(response["body"].read())
    _peer.report(packages, [f"converse(modelId={_peer.BEDROCK_MODEL})", f"invoke_model(modelId={_peer.BEDROCK_MODEL})"],
                 tp)


if __name__ == "__main__":
    main()
