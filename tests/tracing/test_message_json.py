"""The remembered JSON of plain chat messages (content.MessageJSON) is exactly what the structured path
(build the semconv lists, redact, serialize bounded) gives: for every message list hypothesis makes up
(plain and tool messages, texts with secrets, quotes, control characters and non-ASCII), with the
fragments remembered from earlier lists or not, under size limits that force truncation, and for
redactors the memory must not be used with (a structured hook, a subclass, two redactors in turn)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.redact.strategies import fragment_text, planted_text
from verdict import semconv as sc
from verdict.redact import Redactor
from verdict.tracing.call import Operation
from verdict.tracing.openai_patch import ChatCompletions

CHAT = ChatCompletions(stream_types=())
texts = st.one_of(planted_text, fragment_text, st.text(max_size=40), st.sampled_from(["", 'say "hi"\n\t\x00', "é💡"]))
plain = st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant", "developer"]), "content": texts})
other = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["tool", "function", ""]), "content": texts}),
    st.fixed_dictionaries({"role": st.just("tool"), "content": texts, "tool_call_id": st.just("call_1")}),
    st.fixed_dictionaries({"role": st.just("user"), "content": st.just([{"type": "text", "text": "jane@example.com"}])}),
    st.fixed_dictionaries({"role": st.just("user"), "content": st.none()}),
)
# Mostly plain messages (the fast path), sometimes one it must refuse.
message_lists = st.lists(st.one_of(plain, plain, plain, other), max_size=6).map(tuple)
OUTPUT = (("Refunded to jane.doe@example.com.", None, "stop"),)


def structured(request: Any, redactor: Any, max_bytes: int) -> dict[str, str]:
    return Operation.content_attributes(CHAT, request, OUTPUT, redactor, max_bytes)


def fast(request: Any, redactor: Any, max_bytes: int) -> dict[str, str]:
    return CHAT.content_attributes(request, OUTPUT, redactor, max_bytes)


BUILT_IN = Redactor()
HASHING = Redactor(mode="hash", secret=b"k")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(earlier=message_lists, request=message_lists, max_bytes=st.sampled_from([64, 300, 1_000_000]),
       redactor=st.sampled_from([BUILT_IN, HASHING]))
def test_same_json_as_the_structured_path(earlier, request, max_bytes, redactor):
    fast(earlier, redactor, max_bytes)  # fragments remembered from another list, maybe shared
    assert fast(request, redactor, max_bytes) == structured(request, redactor, max_bytes)
    assert fast(request, redactor, max_bytes) == structured(request, redactor, max_bytes)  # remembered now


def test_each_redactor_gets_its_own_redaction():
    request = ({"role": "user", "content": "mail jane.doe@example.com"},)
    first = json.loads(fast(request, BUILT_IN, 1_000_000)[sc.INPUT_MESSAGES])
    hashed = json.loads(fast(request, HASHING, 1_000_000)[sc.INPUT_MESSAGES])
    assert first[0]["parts"][0]["content"] == "mail <EMAIL>"
    assert hashed[0]["parts"][0]["content"].startswith("mail <EMAIL:")
    assert fast(request, BUILT_IN, 1_000_000) == structured(request, BUILT_IN, 1_000_000)


class _Counting(Redactor):
    """A redactor the memory must not trust: a subclass may not be a function of the text."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def text(self, s: str) -> str:
        self.seen += 1
        return f"{self.seen}:{super().text(s)}"


def test_other_redactors_take_the_structured_path():
    request = ({"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"})
    counting = _Counting()
    assert json.loads(fast(request, counting, 1_000_000)[sc.INPUT_MESSAGES])[0]["parts"][0]["content"] == "1:be brief"
    assert json.loads(fast(request, counting, 1_000_000)[sc.INPUT_MESSAGES])[0]["parts"][0]["content"] == "4:be brief"
    hooked = Redactor(hook=lambda value: {**value, sc.INPUT_MESSAGES: []})
    assert sc.INPUT_MESSAGES not in fast(request, hooked, 1_000_000)
