"""Agent trajectories (issue 29, item 4): the tool calls and results a graded model call carries, read from the
recorded peer traces replayed through the real collector process, stored by the real sampler and shown to a rubric
judge built from the config (its scripted model, the only stand-in, records every request); and the deterministic
check that every tool call got a result."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from collector.views import open_scoped
from tests.daemon.recorded_peers import RECORDING_JUDGE, judged, replay_fixtures, sampled
from verdict.models.scripted import ScriptedModel
from verdict.tenancy import validate_tenant_id
from verdict_daemon.config import DaemonConfig, EvaluatorConfig, Judging, parse_config
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.cycle import build_evaluator, build_evaluators
from verdict_daemon.service.evaluators import tool_call_check
from verdict_daemon.service.judge_evaluators import build_judge_evaluator
from verdict_daemon.service.judging import judge, pending_work
from verdict_daemon.service.material import Material, parse_messages
from verdict_daemon.service.trajectory import (
    MAX_CHARS,
    MAX_STEPS,
    Step,
    Trajectory,
    tool_span,
    trajectory_of,
)

# Tool call in an assistant message, result in a `tool` message (Vercel AI, Agno, OTel JS log events) or a `user` one
# (Strands).
TOOL_SENDERS = ("vercel-ai-7-tool", "agno-openinference", "strands-latest", "otel-js-openai-tool")
# Tool executions recorded as spans: OpenInference TOOL spans (CrewAI, smolagents), GenAI `execute_tool` (ADK).
SPAN_SENDERS = ("crewai-openinference", "google-adk", "strands", "strands-openinference", "agno-openllmetry",
                "llama-index-openinference", "pydantic-ai-tool", "langgraph-agent-openinference",
                "openai-agents-openinference")
TWO_TOOLS = "langgraph-agent-two-tools-openinference"  # lookup_charge, then refund_charge, then the answer
SENDERS = (*TOOL_SENDERS, *SPAN_SENDERS, "smolagents-openinference", "pydantic-ai", TWO_TOOLS)
RESULT = "two charges of 12.00 EUR on 2026-12-01"
REFUND_RESULT = "refund of 12.00 EUR issued for charge 2"


@pytest.fixture(scope="module")
def lake(tmp_path_factory, request) -> Path:
    """The data dir after every sender's recording landed in its own tenant of the collector process."""
    return replay_fixtures(tmp_path_factory.mktemp("trajectories") / "data", SENDERS, request)


@pytest.fixture(scope="module")
def graded_calls(lake) -> dict[str, list[tuple[str, str]]]:
    """Per sender: (input, output messages) of each trace's graded call (its last model call)."""
    calls = {}
    for sender in SENDERS:
        con = open_scoped(lake, validate_tenant_id(sender))
        calls[sender] = con.execute("""SELECT arg_max(input_messages, end_time), arg_max(output_messages, end_time)
                                       FROM llm_calls GROUP BY trace_id ORDER BY min(start_time)""").fetchall()
        con.close()
    return calls


@pytest.mark.parametrize("sender", TOOL_SENDERS)
def test_an_agent_run_has_its_tool_call_and_result(graded_calls, sender):
    for n, (inputs, outputs) in enumerate(graded_calls[sender]):
        seen = trajectory_of(parse_messages(inputs), parse_messages(outputs))
        assert seen is not None, sender
        call_id = f"call_{n}"
        result = seen.steps[1].content
        assert seen.steps[0] == Step("tool_call", "lookup_charge", call_id, '{"card_last4": "1111"}'), sender
        assert (seen.steps[1].kind, seen.steps[1].name, seen.steps[1].call_id) == ("tool_result", "lookup_charge",
                                                                                   call_id)
        assert RESULT in result and len(seen.steps) == 2 and seen.unanswered == (), sender
        assert seen.text() == (f"[step 1] call lookup_charge: {{\"card_last4\": \"1111\"}}\n"
                               f"[step 2] result of lookup_charge: {result}")


@pytest.mark.parametrize("sender", ["smolagents-openinference", "pydantic-ai"])
def test_a_call_without_tool_parts_has_no_trajectory(graded_calls, sender):
    """pydantic-ai's recorded run calls no tool; smolagents' last call answers with `final_answer` (the answer,
    not a step) and its input recounts the earlier tool call as text only: no trajectory, the old judged item."""
    assert graded_calls[sender]
    for inputs, outputs in graded_calls[sender]:
        assert trajectory_of(parse_messages(inputs), parse_messages(outputs)) is None, sender


@pytest.mark.parametrize("sender", ["vercel-ai-7-tool", "pydantic-ai-tool", "langgraph-agent-openinference",
                                    "openai-agents-openinference"])
def test_the_judge_reads_an_agent_runs_trajectory(lake, sender):
    stored, prompts = judged(lake, sender, 20)
    assert [json.loads(s)["trajectory"]["unanswered"] for s in stored if s] == [[], []]
    assert len(prompts) == 2
    for prompt in prompts:
        block = prompt.split("</context>\n<trajectory>\n", 1)[1].split("\n</trajectory>", 1)[0]
        assert block == (f'[step 1] call lookup_charge: {{"card_last4": "1111"}}\n'
                         f"[step 2] result of lookup_charge: {RESULT}"), prompt
        assert prompt.rindex("</trajectory>") < prompt.rindex("<answer>")  # the answer stays last
    # an evaluator shown no trajectory (trajectory_steps 0: one without `trajectory = true`): the old prompt and fingerprint
    _, plain = judged(lake, sender, 0)
    assert len(plain) == 2 and not any("<trajectory>" in prompt for prompt in plain)
    config = EvaluatorConfig(name="quality", kind="rubric", model=RECORDING_JUDGE)
    assert build_evaluator(config, 0, 0).fingerprint == build_judge_evaluator(config).fingerprint != \
        build_evaluator(config, 0, 20).fingerprint != build_evaluator(config, 0, 5).fingerprint


def test_a_graph_evaluator_reads_the_trajectory_as_source_trajectory(lake):
    from tests.daemon.graphs import CompletenessUnit
    from verdict.graph import Pipeline
    from verdict_daemon.service.evaluators import GraphEvaluator

    materials = [m for m, _ in pending_work(sampled(lake, "agno-openinference"), validate_tenant_id(
        "agno-openinference"), "no-such-fingerprint", 3, 100)]
    model = ScriptedModel(lambda request: json.dumps({"note": "ok", "complete": True}), record=True)
    graph = Pipeline() >> CompletenessUnit().prompt("@user\nSteps:\n{source.trajectory}\nNow: {source.response}"
                                                    ).via(model)
    shown, hidden = GraphEvaluator("g", "m:a", graph, 0, 20), GraphEvaluator("g", "m:a", graph)
    assert len(materials) == 2 and shown.fingerprint != hidden.fingerprint
    shown.evaluate(materials[0])
    hidden.evaluate(materials[0])
    with_steps, without = (r.messages[0].content for r in model.requests)
    assert with_steps.startswith('Steps:\n[step 1] call lookup_charge: {"card_last4": "1111"}\n'
                                 f"[step 2] result of lookup_charge: {RESULT}\nNow: ")
    assert without == f"Steps:\n\nNow: {materials[0].response}"


@pytest.mark.parametrize("sender", ["pydantic-ai"])
def test_a_run_without_tool_steps_is_judged_as_before(lake, sender):
    stored, prompts = judged(lake, sender, 20)
    assert len(stored) == len(prompts) == 2  # pydantic-ai's runs are first turns of a conversation: history only
    assert not any(s and "trajectory" in json.loads(s) for s in stored), stored
    assert not any("<trajectory>" in prompt for prompt in prompts), prompts


def _call(name: str, call_id: str, **arguments) -> dict:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def _result(call_id: str, response: str) -> dict:
    return {"type": "tool_call_response", "id": call_id, "response": response}


def test_a_tool_call_without_a_result_is_reported():
    inputs = [{"role": "user", "parts": [{"type": "text", "content": "refund order 7"}]},
              {"role": "assistant", "parts": [_call("find_order", "a", id=7), _call("refund", "b", id=7)]},
              {"role": "tool", "parts": [_result("b", "refunded")]}]
    outputs = [{"role": "assistant", "parts": [_call("notify", "c", to="user")]}]  # the run ended on this call
    seen = trajectory_of(inputs, outputs)
    assert seen is not None and seen.unanswered == ("find_order", "notify")
    assert [(s.kind, s.name) for s in seen.steps] == [("tool_call", "find_order"), ("tool_call", "refund"),
                                                     ("tool_result", "refund"), ("tool_call", "notify")]
    assert seen.text().endswith("(no result for: find_order, notify)")
    answered = trajectory_of(inputs[:2] + [{"role": "tool", "parts": [_result("a", "found"), _result("b", "done")]}], [])
    assert answered is not None and answered.unanswered == ()


def test_a_result_without_an_id_answers_the_oldest_waiting_call():
    inputs = [{"role": "assistant", "parts": [_call("first", ""), _call("second", "")]},
              {"role": "tool", "parts": [{"type": "tool_call_response", "response": {"rows": 2}}]}]
    seen = trajectory_of(inputs, [])
    assert seen is not None and seen.unanswered == ("second",)
    assert seen.steps[-1] == Step("tool_result", "first", "", '{"rows": 2}')


def test_a_trajectory_is_bounded_and_survives_storage():
    calls = [{"role": "assistant", "parts": [_call("search", f"c{i}", q="x" * 2000)]} for i in range(MAX_STEPS + 5)]
    seen = trajectory_of(calls, [])
    assert seen is not None and len(seen.steps) == MAX_STEPS and seen.omitted == 5
    assert all(len(s.content) == MAX_CHARS and s.content.endswith("…") for s in seen.steps)
    assert len(seen.unanswered) == MAX_STEPS + 5  # the check counts the steps not shown too
    assert seen.text().startswith("(5 earlier steps not shown)\n[step 6] call search:")
    assert Trajectory.from_dict(json.loads(json.dumps(seen.to_dict()))) == seen
    assert seen.within(2).steps == seen.steps[-2:] and seen.within(2).omitted == MAX_STEPS + 3


# --- only the evaluators that ask for trajectories see them; the tool-use rubric; the deterministic check ---------
def _daemon_config(data: Path, conversations: dict | None = None, **evaluator) -> DaemonConfig:
    return parse_config({"data_dir": str(data), "tenants": [{"id": "acme"}], "conversations": conversations or {},
                         "evaluators": [{"name": "quality", "kind": "rubric", "model": RECORDING_JUDGE,
                                         **evaluator}]})


def test_only_an_evaluator_that_asks_for_trajectories_has_them_in_its_fingerprint(tmp_path):
    """Trajectories are on by default (`trajectory_steps` 20), yet an evaluator without `trajectory = true` keeps
    the fingerprint it had before trajectories existed: its drift baselines survive the upgrade."""
    config = _daemon_config(tmp_path)
    assert config.conversations.trajectory_steps == MAX_STEPS
    (plain,) = build_evaluators(config)
    before = build_evaluator(EvaluatorConfig(name="quality", kind="rubric", model=RECORDING_JUDGE),
                             config.conversations.history_tokens)
    assert plain.fingerprint == before.fingerprint and "trajectory_steps" not in plain.definition
    (asking,) = build_evaluators(_daemon_config(tmp_path, trajectory=True))
    assert asking.fingerprint != plain.fingerprint and asking.definition["trajectory_steps"] == MAX_STEPS
    (fewer,) = build_evaluators(_daemon_config(tmp_path, {"trajectory_steps": 5}, trajectory=True))
    assert fewer.fingerprint not in (asking.fingerprint, plain.fingerprint)


def test_the_tool_use_rubric_grades_agent_runs_and_leaves_other_traces_unjudged(lake):
    (evaluator,) = build_evaluators(_daemon_config(lake, rubric="verdict-tool-use", trajectory=True))
    agent, chat = validate_tenant_id("vercel-ai-7-tool"), validate_tenant_id("pydantic-ai")
    ran = judge(sampled(lake, agent), agent, evaluator, Judging(concurrency=1), "run-tool-use-agent")
    asked = len(evaluator.judge.model.requests)  # type: ignore[attr-defined]  # a JudgeEvaluator's Judge
    skipped = judge(sampled(lake, chat), chat, evaluator, Judging(concurrency=1), "run-tool-use-chat")
    assert (ran.judged, ran.no_content, skipped.judged, skipped.no_content, skipped.errors) == (2, 0, 0, 2, 0)
    assert asked == 2 and len(evaluator.judge.model.requests) == asked  # type: ignore[attr-defined]  # not paid
    con = duckdb.connect(str(lake / "state.duckdb"), read_only=True)
    verdicts = con.execute("""SELECT a.tenant_id, v.dimension, v.value, count(*) FROM judgment_attempts a
        JOIN dimension_verdicts v USING (tenant_id, attempt_id) WHERE a.fingerprint = ? GROUP BY ALL ORDER BY ALL""",
                           [evaluator.fingerprint]).fetchall()
    unjudged = con.execute("""SELECT DISTINCT status, error_message FROM judgment_attempts
        WHERE fingerprint = ? AND tenant_id = ?""", [evaluator.fingerprint, chat]).fetchall()
    con.close()
    assert verdicts == [(agent, d, "PASS", 2) for d in ("right_arguments", "right_tool", "tool_calls_answered",
                                                        "used_result")]
    assert unjudged == [("NO_CONTENT", "the trace has no tool trajectory (no tool call or result): not an agent "
                                       "run this rubric grades")]


def test_a_tool_call_without_a_result_fails_the_deterministic_check():
    inputs = [{"role": "user", "parts": [{"type": "text", "content": "refund order 7"}]},
              {"role": "assistant", "parts": [_call("find_order", "a", id=7), _call("refund", "b", id=7)]},
              {"role": "tool", "parts": [_result("b", "refunded")]}]
    material = Material("7" * 32, datetime(2026, 12, 1), "refund order 7", "Refunded order 7.", "", None,
                        trajectory_of(inputs, []))
    config = EvaluatorConfig(name="quality", kind="rubric", model=RECORDING_JUDGE, trajectory=True)
    verdicts = {v.dimension: v for v in build_evaluator(config, 0, MAX_STEPS).evaluate(material).verdicts}
    assert (verdicts["tool_calls_answered"].value, verdicts["tool_calls_answered"].reason) == \
        ("FAIL", "no result for: find_order")
    assert verdicts["relevance"].value == "PASS"  # the judge's dimensions beside it
    # an evaluator that does not ask for trajectories: no check, the judged item as before
    assert "tool_calls_answered" not in {v.dimension for v in build_evaluator(config, 0, 0).evaluate(material).verdicts}
    answered = trajectory_of(inputs + [{"role": "tool", "parts": [_result("a", "found")]}], [])
    assert tool_call_check(Material("7" * 32, datetime(2026, 12, 1), "q", "a", "", None, answered), 5)[0].value == "PASS"


@pytest.mark.parametrize(("evaluator", "conversations", "message"), [
    ({"rubric": "verdict-tool-use"}, {}, "rubric 'verdict-tool-use' has dimensions that need a tool trajectory "
                                         "(right_tool, right_arguments, used_result): set trajectory = true"),
    ({"rubric": "verdict-tool-use", "trajectory": True, "unit": "conversation"}, {},
     "rubric 'verdict-tool-use' has dimensions that need a tool trajectory (right_tool, right_arguments, "
     'used_result): a turn evaluator\'s, not unit = "conversation"'),
    ({"rubric": "no-such-rubric"}, {}, "rubric 'no-such-rubric' is not a shipped rubric (shipped: "
                                       "verdict-conversation, verdict-default, verdict-tool-use)"),
    ({"trajectory": True}, {"trajectory_steps": 0}, "ask for trajectories (trajectory = true) but "
                                                    "conversations.trajectory_steps is 0"),
])
def test_a_tool_use_evaluator_that_cannot_see_trajectories_is_refused_at_start(tmp_path, evaluator, conversations,
                                                                              message):
    with pytest.raises(DaemonError) as raised:
        build_evaluators(_daemon_config(tmp_path, conversations, **evaluator))
    assert raised.value.code == "invalid_config" and message in raised.value.message


def _stored_trajectories(lake: Path, sender: str) -> list[dict | None]:
    store = sampled(lake, sender)
    con = duckdb.connect(str(store.path), read_only=True)
    rows = [json.loads(h).get("trajectory") if h else None for (h,) in con.execute(
        "SELECT history FROM sampled_traces WHERE tenant_id = ? ORDER BY started_at", [sender]).fetchall()]
    con.close()
    return rows


@pytest.mark.parametrize(("sender", "result"), [
    ("vercel-ai-7-tool", RESULT),  # the call in the messages and an execute_tool span with its id: once
    ("agno-openinference", RESULT),  # a TOOL span without a call id: matched by name and arguments
    ("strands-latest", f'[{{"text": "{RESULT}"}}]'),  # an execute_tool span with its id
    ("crewai-openinference", RESULT),  # TOOL spans besides the messages
    ("google-adk", f'{{"result": "{RESULT}"}}'),  # execute_tool spans with ids, no arguments or result recorded
    ("smolagents-openinference", RESULT),  # its messages recount the call as text only: from its TOOL span alone
    ("strands", RESULT),  # execute_tool spans with ids, no arguments or result recorded
    ("strands-openinference", RESULT),  # execute_tool + TOOL attributes on one span, with ids
    ("agno-openllmetry", RESULT),  # traceloop tool spans
    ("llama-index-openinference", RESULT),  # TOOL spans, kwargs-wrapped arguments, no id
    ("pydantic-ai-tool", RESULT),  # its own instrumentation: the result part's key is `result`, an execute_tool span
    # a LangGraph agent (ToolNode) under OpenInference: the TOOL span's input is the bare argument value, its output
    # the LangChain ToolMessage naming the call: matched by that id
    ("langgraph-agent-openinference", RESULT),
    ("openai-agents-openinference", RESULT),  # the OpenAI Agents SDK: a TOOL span without an id, name and arguments
])
def test_a_tool_execution_is_one_step_whether_messages_spans_or_both_record_it(lake, sender, result):
    """The stored trajectory of each recorded agent run: one call and its result per run, never two, and the
    `final_answer` tool span (smolagents) no step."""
    stored = _stored_trajectories(lake, sender)
    assert len(stored) == 2, sender
    for n, trajectory in enumerate(stored):
        call_id = "" if sender == "smolagents-openinference" else f"call_{n}"
        assert trajectory == {"steps": [["tool_call", "lookup_charge", call_id, '{"card_last4": "1111"}'],
                                        ["tool_result", "lookup_charge", call_id, result]],
                              "omitted": 0, "unanswered": []}, sender


def test_an_agent_run_with_two_tools_is_judged_with_both_calls_and_results_in_order(lake):
    """The recorded LangGraph agent that calls lookup_charge, then refund_charge (after the lookup's result), then
    answers: its graded call carries both executions, each result after its call, and its ToolNode's TOOL spans
    (matched by call id) add no step."""
    stored = _stored_trajectories(lake, TWO_TOOLS)
    assert stored == [{"steps": [["tool_call", "lookup_charge", f"call_{n}", '{"card_last4": "1111"}'],
                                 ["tool_result", "lookup_charge", f"call_{n}", RESULT],
                                 ["tool_call", "refund_charge", f"refund_{n}",
                                  '{"card_last4": "1111", "charge_number": 2}'],
                                 ["tool_result", "refund_charge", f"refund_{n}", REFUND_RESULT]],
                       "omitted": 0, "unanswered": []} for n in (0, 1)]
    _, prompts = judged(lake, TWO_TOOLS, 20)
    assert len(prompts) == 2
    for prompt in prompts:
        block = prompt.split("</context>\n<trajectory>\n", 1)[1].split("\n</trajectory>", 1)[0]
        assert block == ('[step 1] call lookup_charge: {"card_last4": "1111"}\n'
                         f"[step 2] result of lookup_charge: {RESULT}\n"
                         '[step 3] call refund_charge: {"card_last4": "1111", "charge_number": 2}\n'
                         f"[step 4] result of refund_charge: {REFUND_RESULT}"), prompt


def test_tool_spans_alone_give_the_steps_and_a_failed_one_is_unanswered():
    """A framework that records tools only as spans: the GenAI, OpenInference and OpenLLMetry spellings, a span
    without a recorded result (it did not fail: answered) and one that ended in error (unanswered)."""
    spans = [tool_span({"gen_ai.tool.name": "find_order", "gen_ai.tool.call.id": "a",
                        "gen_ai.tool.call.arguments": '{"id": 7}', "gen_ai.tool.call.result": '{"status": "paid"}'},
                       False),
             tool_span({"openinference.span.kind": "TOOL", "tool.name": "refund",
                        "input.value": '{"kwargs": {"id": 7}}'}, False),
             tool_span({"traceloop.span.kind": "tool", "traceloop.entity.name": "notify",
                        "traceloop.entity.input": '{"to": "user"}'}, True),
             tool_span({"openinference.span.kind": "TOOL", "input.value": "{}"}, False)]  # no name: not a step
    assert spans[3] is None
    seen = trajectory_of([], [], [s for s in spans if s is not None])
    assert seen is not None and seen.unanswered == ("notify",)
    assert seen.text() == ('[step 1] call find_order: {"id": 7}\n[step 2] result of find_order: {"status": "paid"}\n'
                           '[step 3] call refund: {"id": 7}\n[step 4] result of refund: (result not recorded)\n'
                           '[step 5] call notify: {"to": "user"}\n(no result for: notify)')
    # the same executions also in the graded call's messages: shown once, the spans' extra one first
    inputs = [{"role": "assistant", "parts": [_call("refund", "", id=7)]},
              {"role": "tool", "parts": [_result("", "refunded")]}]
    merged = trajectory_of(inputs, [], [s for s in spans[:2] if s is not None])
    assert merged is not None and [(s.kind, s.name) for s in merged.steps] == [
        ("tool_call", "find_order"), ("tool_result", "find_order"), ("tool_call", "refund"), ("tool_result", "refund")]
    assert merged.steps[-1].content == "refunded"  # the message's step, not the span's


def test_the_judge_sentinel_does_not_apply_to_an_evaluator_of_agent_runs_only(tmp_path):
    """Sentinel items carry no trajectory: the tool-use rubric would skip every one and the gate would block the
    evaluator for good (judge_unhealthy); the check applies to the other evaluators as before."""
    from tests.daemon.test_sentinel import sentinel_file
    from verdict_daemon.config import Sentinel
    from verdict_daemon.service.sentinel_health import load_sets

    config = parse_config({"data_dir": str(tmp_path), "tenants": [{"id": "acme"}], "evaluators": [
        {"name": "quality", "kind": "rubric", "model": RECORDING_JUDGE, "trajectory": True},
        {"name": "tool-use", "kind": "rubric", "model": RECORDING_JUDGE, "rubric": "verdict-tool-use",
         "trajectory": True}]})
    sets = load_sets(Sentinel(file=sentinel_file(tmp_path / "s.jsonl")), build_evaluators(config))
    assert sorted(sets) == ["quality"]
