"""Agent trajectories (issue 29, item 4): the tool calls and results a graded model call carries, read from the
recorded peer traces replayed through the real collector process, and the deterministic check that every tool
call got a result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collector.views import open_scoped
from verdict.tenancy import validate_tenant_id
from verdict_daemon.service.material import parse_messages
from verdict_daemon.service.trajectory import MAX_CHARS, MAX_STEPS, Step, Trajectory, trajectory

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dialects"
# Tool call in an assistant message, result in a `tool` message (Vercel AI, Agno) or a `user` one (Strands).
TOOL_SENDERS = ("vercel-ai-7-tool", "agno-openinference", "strands-latest")
SENDERS = (*TOOL_SENDERS, "smolagents-openinference", "pydantic-ai")
RESULT = "two charges of 12.00 EUR on 2026-12-01"


def _token(sender: str) -> str:
    return f"token-for-{sender}-0123456789"


@pytest.fixture(scope="module")
def graded_calls(tmp_path_factory, request) -> dict[str, list[tuple[str, str]]]:
    """Per sender: (input, output messages) of each trace's graded call (its last model call)."""
    from tests.collector.conftest import Collector, post_recording

    tmp = tmp_path_factory.mktemp("trajectories")
    tokens = tmp / "tokens.yaml"
    tokens.write_text("".join(f'"{_token(s)}": {s}\n' for s in SENDERS))
    collector = Collector(tmp / "data", ("--tokens", str(tokens)))
    collector.start()
    request.addfinalizer(collector.process.kill)  # a no-op once it exited
    for sender in SENDERS:
        for name in json.loads((FIXTURES / sender / "manifest.json").read_text())["arrival_order"]:
            post_recording(collector.http_port, FIXTURES / sender / name, _token(sender))
    assert collector.stop() == 0
    calls = {}
    for sender in SENDERS:
        con = open_scoped(collector.data_dir, validate_tenant_id(sender))
        calls[sender] = con.execute("""SELECT arg_max(input_messages, end_time), arg_max(output_messages, end_time)
                                       FROM llm_calls GROUP BY trace_id ORDER BY min(start_time)""").fetchall()
        con.close()
    return calls


@pytest.mark.parametrize("sender", TOOL_SENDERS)
def test_an_agent_run_has_its_tool_call_and_result(graded_calls, sender):
    for n, (inputs, outputs) in enumerate(graded_calls[sender]):
        seen = trajectory(parse_messages(inputs), parse_messages(outputs))
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
        assert trajectory(parse_messages(inputs), parse_messages(outputs)) is None, sender


def _call(name: str, call_id: str, **arguments) -> dict:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def _result(call_id: str, response: str) -> dict:
    return {"type": "tool_call_response", "id": call_id, "response": response}


def test_a_tool_call_without_a_result_is_reported():
    inputs = [{"role": "user", "parts": [{"type": "text", "content": "refund order 7"}]},
              {"role": "assistant", "parts": [_call("find_order", "a", id=7), _call("refund", "b", id=7)]},
              {"role": "tool", "parts": [_result("b", "refunded")]}]
    outputs = [{"role": "assistant", "parts": [_call("notify", "c", to="user")]}]  # the run ended on this call
    seen = trajectory(inputs, outputs)
    assert seen is not None and seen.unanswered == ("find_order", "notify")
    assert [(s.kind, s.name) for s in seen.steps] == [("tool_call", "find_order"), ("tool_call", "refund"),
                                                     ("tool_result", "refund"), ("tool_call", "notify")]
    assert seen.text().endswith("(no result for: find_order, notify)")
    answered = trajectory(inputs[:2] + [{"role": "tool", "parts": [_result("a", "found"), _result("b", "done")]}], [])
    assert answered is not None and answered.unanswered == ()


def test_a_result_without_an_id_answers_the_oldest_waiting_call():
    inputs = [{"role": "assistant", "parts": [_call("first", ""), _call("second", "")]},
              {"role": "tool", "parts": [{"type": "tool_call_response", "response": {"rows": 2}}]}]
    seen = trajectory(inputs, [])
    assert seen is not None and seen.unanswered == ("second",)
    assert seen.steps[-1] == Step("tool_result", "first", "", '{"rows": 2}')


def test_a_trajectory_is_bounded_and_survives_storage():
    calls = [{"role": "assistant", "parts": [_call("search", f"c{i}", q="x" * 2000)]} for i in range(MAX_STEPS + 5)]
    seen = trajectory(calls, [])
    assert seen is not None and len(seen.steps) == MAX_STEPS and seen.omitted == 5
    assert all(len(s.content) == MAX_CHARS and s.content.endswith("…") for s in seen.steps)
    assert len(seen.unanswered) == MAX_STEPS + 5  # the check counts the steps not shown too
    assert seen.text().startswith("(5 earlier steps not shown)\n[step 6] call search:")
    assert Trajectory.from_dict(json.loads(json.dumps(seen.to_dict()))) == seen
    assert seen.within(2).steps == seen.steps[-2:] and seen.within(2).omitted == MAX_STEPS + 3
