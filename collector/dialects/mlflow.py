"""MLflow Tracing (`mlflow.<flavor>.autolog()`, `@mlflow.trace`) exported as OTLP (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`):
`mlflow.*` span attributes, every value JSON-encoded (a string arrives as `"CHAT_MODEL"`, quotes included).

`mlflow.spanType` says what the span is: `CHAT_MODEL` and `LLM` are model calls, `EMBEDDING` an embedding; agent
and tool spans are the GenAI steps they are; chains, retrievers, parsers and the rest are no GenAI operation. A
call's request and response are its flavor's own objects: `mlflow.spanInputs` (the SDK call's arguments: OpenAI
`messages` or Responses `input`/`instructions`, Anthropic `messages`/`system`) and `mlflow.spanOutputs` (OpenAI
`choices` or Responses `output`, Anthropic `content`, or plain text); MLflow 2's `mlflow.chat.messages` (the
conversation with the reply last) when present. Usage: `mlflow.chat.tokenUsage` (`input_tokens`/`output_tokens`).
The model: `mlflow.llm.model`, else the request's. The provider: named by the flavor's message format
(`mlflow.message.format`: `openai`, `anthropic`, …) when that is a provider; MLflow states none otherwise.
"""

from __future__ import annotations

from collector.dialects.common import (
    EMPTY,
    GenAIFields,
    chat_message,
    parse_json,
    provider_name,
    split_system,
    text_parts,
    to_int,
    to_str,
)
from verdict.semconv import (
    MLFLOW_CHAT_MESSAGES,
    MLFLOW_MESSAGE_FORMAT,
    MLFLOW_MODEL,
    MLFLOW_SPAN_INPUTS,
    MLFLOW_SPAN_OUTPUTS,
    MLFLOW_SPAN_TYPE,
    MLFLOW_TOKEN_USAGE,
)

_OPERATIONS = {"CHAT_MODEL": "chat", "LLM": "text_completion", "EMBEDDING": "embeddings", "AGENT": "invoke_agent",
               "TOOL": "execute_tool"}
# Message formats that name the provider whose API the flavor called (others name a framework: langchain, …).
_PROVIDER_FORMATS = frozenset({"openai", "anthropic", "gemini", "bedrock", "mistral", "groq", "cohere"})


def recognises(scope_name: str, attrs: dict) -> bool:
    return MLFLOW_SPAN_TYPE in attrs


def _decoded(attrs: dict, key: str):
    """MLflow JSON-encodes every attribute value: the value itself (None when absent or not JSON)."""
    return parse_json(attrs.get(key))


def _input_messages(request) -> list[dict]:
    if not isinstance(request, dict):
        return [{"role": "user", "parts": text_parts(request)}] if isinstance(request, str) and request else []
    messages = request.get("messages")
    if messages is None and "input" in request:  # the Responses API: `input` is text or a list of messages
        messages = request["input"] if isinstance(request["input"], list) else [
            {"role": "user", "content": request["input"]}]
    out = [chat_message(m) for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    system = request.get("system", request.get("instructions"))
    if system:
        out.insert(0, {"role": "system", "parts": text_parts(system)})
    return out


def _output_messages(response) -> list[dict]:
    if isinstance(response, str):
        return [{"role": "assistant", "parts": text_parts(response)}] if response else []
    if not isinstance(response, dict):
        return []
    if isinstance(response.get("choices"), list):  # OpenAI chat completions (`text` for completions)
        out = []
        for choice in response["choices"]:
            if not isinstance(choice, dict):
                continue
            message = choice.get("message")
            if not isinstance(message, dict):
                message = {"content": choice.get("text")}
            out.append(chat_message({**message, "role": message.get("role") or "assistant",
                                     "finish_reason": choice.get("finish_reason")}))
        return out
    if isinstance(response.get("output"), list):  # the Responses API: message items hold output_text parts
        return [chat_message({**item, "role": item.get("role") or "assistant"}) for item in response["output"]
                if isinstance(item, dict) and item.get("type") == "message"]
    if "content" in response:  # Anthropic Messages
        return [chat_message({"role": response.get("role") or "assistant", "content": response["content"],
                              "finish_reason": response.get("stop_reason")})]
    return []


def _finish_reasons(response) -> list[str | None] | None:
    if isinstance(response, dict) and isinstance(response.get("choices"), list):
        return [to_str(c.get("finish_reason")) for c in response["choices"] if isinstance(c, dict)] or None
    return None


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    operation = _OPERATIONS.get(to_str(_decoded(attrs, MLFLOW_SPAN_TYPE)) or "")
    if operation not in ("chat", "text_completion", "embeddings"):
        return EMPTY._replace(operation=operation)  # a step, or no GenAI operation at all: never a call
    request, response = _decoded(attrs, MLFLOW_SPAN_INPUTS), _decoded(attrs, MLFLOW_SPAN_OUTPUTS)
    conversation = _decoded(attrs, MLFLOW_CHAT_MESSAGES)
    if isinstance(conversation, list) and conversation and isinstance(conversation[-1], dict):
        inputs, outputs = [chat_message(m) for m in conversation[:-1] if isinstance(m, dict)], [
            chat_message(conversation[-1])]
    else:
        inputs, outputs = _input_messages(request), _output_messages(response)
    system, rest = split_system(inputs)
    usage = _decoded(attrs, MLFLOW_TOKEN_USAGE)
    usage = usage if isinstance(usage, dict) else {}
    reply = response if isinstance(response, dict) else {}
    message_format = to_str(_decoded(attrs, MLFLOW_MESSAGE_FORMAT))
    return EMPTY._replace(
        operation=operation,
        provider=provider_name(message_format) if message_format in _PROVIDER_FORMATS else None,
        request_model=to_str(_decoded(attrs, MLFLOW_MODEL)) or to_str(request.get("model") if isinstance(
            request, dict) else None),
        response_model=to_str(reply.get("model")),
        response_id=to_str(reply.get("id")),
        finish_reasons=_finish_reasons(response),
        input_tokens=to_int(usage.get("input_tokens")),
        output_tokens=to_int(usage.get("output_tokens")),
        cached_input_tokens=to_int(usage.get("cache_read_input_tokens")),
        input_messages=rest,
        output_messages=outputs or None,
        system_instructions=system,
    )
