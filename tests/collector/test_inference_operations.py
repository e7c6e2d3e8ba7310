"""Only model inference is a call (issue 25, item 2): an allow-list of operations, so framework steps
(OpenLLMetry's LangChain/LangGraph tasks, workflows, agents, tools; agent and tool spans of any sender) and
embeddings stay in `spans` and never reach `llm_calls`, whatever attributes they carry."""

from __future__ import annotations

import pytest

from collector.dialects import normalise
from tests.collector import dialect_payloads as payloads
from tests.collector.test_call_identity import SECOND, T0, Call, calls, land, openllmetry_span

LANGCHAIN = "opentelemetry.instrumentation.langchain"


def _step(kind: str, span: int, parent: int, **attrs) -> payloads.SpanSpec:
    """An OpenLLMetry LangChain step: the entity's input and output, a model name, usage rolled up."""
    return payloads.SpanSpec(LANGCHAIN, f"step.{kind}", {
        "traceloop.span.kind": kind, "traceloop.entity.name": f"step-{span}",
        "traceloop.entity.input": '{"question": "where is order 7?"}', "traceloop.entity.output": '{"answer": "x"}',
        "gen_ai.request.model": "gpt-4o-mini", "gen_ai.system": "openai", "gen_ai.usage.input_tokens": 41, **attrs},
        trace=1, span=span, parent=parent, start=T0, end=T0 + 3 * SECOND)


@pytest.mark.parametrize(("kind", "operation"), [("workflow", "invoke_workflow"), ("task", "execute_task"),
                                                 ("agent", "invoke_agent"), ("tool", "execute_tool")])
def test_openllmetry_framework_steps_get_their_operation(kind, operation):
    spec = _step(kind, 1, 0)
    assert normalise(spec.scope, spec.name, spec.attrs, {}, [])[1].operation == operation


def _model_call(n: int, span: int, parent: int) -> payloads.SpanSpec:
    spec = openllmetry_span(Call(n, T0 + n * SECOND, T0 + (n + 1) * SECOND, f"chatcmpl-{n}"), 1, span)
    return payloads.SpanSpec(**{**spec.__dict__, "parent": parent})


def test_an_openllmetry_langgraph_app_is_one_row_per_model_call(tmp_path):
    """OpenLLMetry alone (one instrumentation): workflow > agent > tasks (one sent as execute_task, with the
    model and usage) > two model calls, and a tool step: two rows, the model calls."""
    execute = {"gen_ai.operation.name": "execute_task"}
    land(tmp_path, "langgraph", [
        _step("workflow", 1, 0), _step("agent", 2, 1), _step("task", 3, 2, **execute), _model_call(1, 4, 3),
        _step("tool", 5, 2), _step("task", 6, 2, **execute), _model_call(2, 7, 6)])
    rows = calls(tmp_path, "langgraph")
    assert [(r["span_id"], r["operation"]) for r in rows] == [(f"{4:016x}", "chat"), (f"{7:016x}", "chat")]


def test_other_senders_steps_and_embeddings_are_no_call(tmp_path):
    """Pydantic AI's agent run, OpenInference's chain, an OpenLLMetry embedding next to one model call."""
    land(tmp_path, "steps", [
        _model_call(1, 4, 1),
        payloads.SpanSpec("pydantic-ai", "agent run", {"gen_ai.operation.name": "invoke_agent",
                                                       "gen_ai.request.model": "gpt-4o-mini"}, trace=1, span=1),
        payloads.SpanSpec("openinference.instrumentation.langchain", "RunnableSequence", {
            "openinference.span.kind": "CHAIN", "llm.model_name": "gpt-4o-mini"}, trace=1, span=2),
        payloads.SpanSpec("opentelemetry.instrumentation.openai.v1", "openai.embeddings", {
            "llm.request.type": "embedding", "gen_ai.request.model": "text-embedding-3-small"}, trace=1, span=3),
    ])
    (row,) = calls(tmp_path, "steps")
    assert (row["span_id"], row["operation"]) == (f"{4:016x}", "chat")


def test_gemini_generate_content_is_a_call(tmp_path):
    spec = payloads.SpanSpec("opentelemetry.instrumentation.google_genai", "generate_content gemini-2.0-flash", {
        "gen_ai.operation.name": "generate_content", "gen_ai.system": "gemini", "gen_ai.request.model": "gemini-2.0-flash",
        "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 4}, trace=2, span=2)
    land(tmp_path, "gemini", [spec])
    (row,) = calls(tmp_path, "gemini")
    assert (row["operation"], row["provider"]) == ("generate_content", "gcp.gemini")
