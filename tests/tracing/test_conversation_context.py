"""conversation_context: the id and the end marker on Verdict's own spans and other instrumentations' spans,
validation, nesting (issue 29, item 1)."""

from __future__ import annotations

import pytest
from opentelemetry import trace

import verdict
import verdict.tracing as vt
from tests.fakes import Reply
from verdict.conversation import validate_conversation_id


def test_own_and_foreign_spans_carry_the_conversation(fake_openai, traced):
    client = fake_openai.client()
    other = trace.get_tracer("app.handlers")
    fake_openai.enqueue(Reply("one", usage=(3, 1)), Reply("two", usage=(3, 1)), Reply("three", usage=(3, 1)))
    with vt.conversation_context("conv-7f3a"):
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        with other.start_as_current_span("handle"):
            pass
        with other.start_as_current_span("own", attributes={"session.id": "phoenix-1"}):
            pass  # the instrumentation's own spelling wins: nothing stamped over it
    with verdict.conversation_context("conv-7f3a", end=True):
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "bye"}])
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "outside"}])

    first, last, outside = traced.spans()
    assert first.attributes["gen_ai.conversation.id"] == "conv-7f3a"
    assert "verdict.conversation.end" not in first.attributes
    assert last.attributes["gen_ai.conversation.id"] == "conv-7f3a"
    assert last.attributes["verdict.conversation.end"] is True
    assert "gen_ai.conversation.id" not in outside.attributes
    by_name = {s.name: s for s in traced.all_spans()}
    assert by_name["handle"].attributes["gen_ai.conversation.id"] == "conv-7f3a"
    assert "gen_ai.conversation.id" not in by_name["own"].attributes
    assert by_name["own"].attributes["session.id"] == "phoenix-1"


def test_nesting_restores_the_outer_conversation():
    with vt.conversation_context("outer") as outer:
        with vt.conversation_context("inner", end=True) as inner:
            assert inner == vt.Conversation("inner", True)
        assert outer == vt.Conversation("outer", False)
        from verdict.tracing.context import conversation_attributes

        assert conversation_attributes() == {"gen_ai.conversation.id": "outer"}


@pytest.mark.parametrize(("value", "reason"), [
    ("", "must not be empty"),
    ("x" * 129, "limit is 128"),
    ("two words", "without whitespace"),
    ("jane.roe@example.com", "redaction"),
    ("+14155552671", "redaction"),
    (42, "must be a string"),
])
def test_invalid_ids_are_refused_at_once(value, reason):
    with pytest.raises(ValueError, match=reason):
        vt.conversation_context(value)
    with pytest.raises(ValueError, match=reason):
        validate_conversation_id(value)


@pytest.mark.parametrize("value", ["3408c808-e93d-4579-a0eb-5fd4922a7758", "c1", "thread_abc123", "x" * 128])
def test_valid_ids(value):
    assert validate_conversation_id(value) == value
