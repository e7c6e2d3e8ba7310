"""The message-role check's one-search fast path (collector.dialects.vocabulary._OTHER_ROLE) returns exactly what
the findall over every role returns, for any text: message JSON with known, aliased, unknown, empty and escaped
roles, and fragments glued into broken JSON."""

from __future__ import annotations

import json

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from collector.dialects import vocabulary
from collector.dialects.common import parse_json


def _reference(column: str, unnamed: str | None = None):
    """vocabulary.messages on text before the fast path: findall, then the per-role check."""
    found = vocabulary._ROLE.findall(column)
    if all(r in vocabulary.ROLES for r in found):
        return column, ()
    parsed = parse_json(column)
    if not isinstance(parsed, list):
        return column, tuple(r for r in found if vocabulary.role_name(r) not in vocabulary.ROLES)
    fixed, left = vocabulary.messages(parsed, unnamed)
    return orjson.dumps(fixed).decode(), left


_ROLES = ["user", "assistant", "system", "tool", "users", "use", "toolx", "model", "Human", "", "us\\\"er", "user ",
          "critic", "tool-call", "assistantsystem"]
_FRAGMENTS = ['"role"', '"role":', '"role" : ', ": ", '"', "\\", ",", "{", "}", "[", "]", " ", '"content": "hi"']
fragments = st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.sampled_from(_ROLES), st.text(max_size=4)),
                     max_size=16).map("".join)
message_json = st.lists(st.sampled_from(_ROLES), max_size=4).map(
    lambda roles: json.dumps([{"role": r, "parts": [{"type": "text", "content": "x"}]} for r in roles]))


@settings(max_examples=1500, deadline=None)
@given(column=st.one_of(fragments, message_json), unnamed=st.sampled_from([None, "assistant"]))
@example(column='[{"role": "users"}]', unnamed=None)
@example(column='"role": "user""role": "critic"', unnamed=None)
@example(column='[{"role": "critic"}]', unnamed="assistant")
def test_fast_role_check_returns_what_the_findall_returns(column: str, unnamed: str | None) -> None:
    fixed, left = vocabulary.messages(column, unnamed)
    expected_fixed, expected_left = _reference(column, unnamed)
    assert left == expected_left
    assert fixed == expected_fixed
