"""The shortcuts that skip work are exact: the credential-word hints cover every credential name,
hint-driven assignment scanning (hints up to the last separator that can be an assignment) finds
what examining every `:` and `=` finds, the number scan finds the same in ASCII text (searched
from digit to digit) as in other text, and text that the quick pre-check clears has no finding
from any detector."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.redact.strategies import fragment_text
from verdict.redact import Redactor
from verdict.redact.assignments import _assignment_at, scan_assignments
from verdict.redact.credentials import (
    _CONTAINS,
    _EXACT,
    _HINTS,
    _SUFFIXES,
    _has_hint,
    credential_name_hints,
    is_credential_name,
)
from verdict.redact.numbers import scan_numbers
from verdict.redact.redactor import maybe_sensitive

_NAME_PARTS = [
    "pass", "word", "pass_word", "p-a-s-s", "PaSs", "api", "_", "-", ".", "key", "KEY", "token",
    "tokens", "auth", "author", "x", "2", "session", "id", "cv", "c", "v", "pin", "ping", "jwt",
    "otp", "pwd", "secret", "client", "cookie", "cred", "ential", "role", "content", "İ",
    ":", "=", ": ", " = ", '"', "'", '\\"', " ", "\t", "\n", "a:b", "12:34", "null", "hunter2",
    "Bearer abc", "a=1; b=2", "://", " " * 20, "\t" * 9, "x" * 30, "_" * 25,
]  # fmt: skip
name_heavy_text = st.lists(st.sampled_from(_NAME_PARTS), max_size=30).map("".join)


def _reference_scan(s: str) -> list:
    """Every `:` and `=` examined (the scan without hints)."""
    out: list = []
    for separator in ":=":
        i = s.find(separator)
        while i >= 0:
            i = s.find(separator, max(i + 1, _assignment_at(s, i, out)))
    return out


def test_every_credential_word_contains_a_hint_that_cannot_overlap_itself() -> None:
    for word in (*_CONTAINS, *_SUFFIXES, *_EXACT):
        assert is_credential_name(word)
        assert any(hint in word for hint in _HINTS), word
    for hint in _HINTS:
        assert all(hint[:n] != hint[-n:] for n in range(1, len(hint))), hint


def test_hints_end_after_credential_words_and_skip_longer_words() -> None:
    s = "the author's tokens: 3, x-api-key: k, shopping: y, access_token = t"
    assert [s[end - 5 : end] for end in credential_name_hints(s) or ()] == [" auth", "i-key", "token"]
    assert credential_name_hints("role: user") == []
    assert credential_name_hints("p-a-s-s: x") is None  # spelled with separators inside


def test_separator_at_the_far_end_of_a_names_reach_is_examined() -> None:
    # A 64-character credential name whose hint ("pass") is at its start; a quote and spaces
    # fill the rest of the 72-character window the name is read from.
    text = '{"' + "password" + "x" * 56 + '"' + " " * 7 + ': "hunter2", "a": 1, "b": 2, "c": 3}'
    found: list = []
    scan_assignments(text, found)
    assert [text[f.start : f.end] for f in found] == ["hunter2"]
    assert sorted(found) == sorted(_reference_scan(text))


def test_separators_inside_a_value_found_from_an_earlier_hint_are_skipped() -> None:
    # "token:" is inside the password's value and far from the "pass" hint (its own stretch).
    text = '{"password": "' + "y" * 80 + ' token: zzz", "a": "b", "c": "d", "e": "f"}'
    found: list = []
    scan_assignments(text, found)
    assert [text[f.start : f.end] for f in found] == ["y" * 80 + " token: zzz"]
    assert sorted(found) == sorted(_reference_scan(text))


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(name_heavy_text, fragment_text))
def test_hint_driven_scan_equals_examining_every_separator(text: str) -> None:
    text += '"":' * (len(text) // 16 + 1)  # key-dense: scanned from hints (_QUOTE_SPACING)
    found: list = []
    scan_assignments(text, found)
    assert sorted(found) == sorted(_reference_scan(text))


def _found(text: str) -> list[str]:
    found: list = []
    scan_assignments(text, found)
    return [text[f.start : f.end] for f in sorted(found)]


def test_hints_stop_at_the_last_separator_that_can_be_an_assignment() -> None:
    content = "I forgot the password and my api key again, the token expired too. " * 2
    # Assistant message: `"finish_reason":` after a long content is no assignment, so the
    # credential words in the content are never looked at; one before the content still counts.
    assistant = '[{"role": "assistant", "parts": [{"type": "text", "content": "' + content + '"}], '
    assert _found(assistant + '"finish_reason": "stop"}]') == []
    assert _found('[{"token": "t0ps3cret", ' + assistant[2:] + '"finish_reason": "stop"}]') == [
        "t0ps3cret"
    ]
    # The last separator after a long stretch is an assignment: found.
    assert _found(assistant + '"api_key": "k-123"}]') == ["k-123"]
    assert _found(assistant + '"x-api-key": k-456}]') == ["k-456"]
    # User message: nothing after the last separator is a name; before it, names still count.
    user = '[{"role": "user", "parts": [{"type": "text", "content": "pwd=hunter2 then '
    assert _found(user + content + '"}]}]') == ["hunter2"]
    assert _found('{"a": "b", "password": "at the last separator"') == ["at the last separator"]
    assert _found('"password"' + " " * 80 + ': "far"') == []  # beyond a name's reach
    assert _found('"password":' + " " * 80 + '"v"') == ["v"]


@settings(max_examples=400, deadline=None)
@given(
    head=name_heavy_text,
    middle=st.one_of(fragment_text, name_heavy_text),
    name=st.sampled_from(_NAME_PARTS),
    gap=st.integers(min_value=0, max_value=160),
)
def test_scan_with_a_long_last_stretch_equals_examining_every_separator(
    head: str, middle: str, name: str, gap: int
) -> None:
    # Key-dense JSON-like text whose last separator follows a stretch without one, as in an
    # assistant message (the last name is sometimes a credential name, sometimes not).
    text = '"a":' * 8 + head + middle + " " * gap + '"' + name + '": "v"'
    found: list = []
    scan_assignments(text, found)
    assert sorted(found) == sorted(_reference_scan(text))


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(name_heavy_text, fragment_text, st.text()))
def test_the_chained_hint_check_agrees_with_the_hint_list(text: str) -> None:
    for sample in (text, text.lower()):
        assert _has_hint(sample) == any(hint in sample for hint in _HINTS)
    assert all(_has_hint(f"x{hint}y") for hint in _HINTS)
    assert not _has_hint("role content type parts finish_reason stop")


def test_number_scan_is_the_same_in_ascii_and_in_other_text() -> None:
    # ASCII text is searched from digit to digit; text with other characters by `re` alone.
    text = (
        "Ticket 70717355: call (415) 555-0134 today, card 4111 1111 1111 1111, "
        + "no digits for a long while here " * 4
        + "then 203.0.113.42 and IBAN DE89 3704 0044 0532 0130 00, order 48213."
    )
    expected = ["555-0134", "4111 1111 1111 1111", "203.0.113.42", "DE89 3704 0044 0532 0130 00"]
    for variant in (text, text.replace("a long while", "a l\u00f6ng while"), "\u00e9 " + text):
        found: list = []
        scan_numbers(variant, found)
        assert [variant[f.start : f.end] for f in sorted(found)][-3:] == expected[1:], variant
        assert any(variant[f.start : f.end].endswith(expected[0]) for f in found)
    assert _numbers("415-555-0134 first, 203.0.113.42") == ["415-555-0134", "203.0.113.42"]
    assert _numbers("12345678 and 1234567 and 1.2.3.4") == []
    assert _numbers("x" * 500) == [] and _numbers("") == []


def _numbers(text: str) -> list[str]:
    found: list = []
    scan_numbers(text, found)
    return [text[f.start : f.end] for f in sorted(found)]


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(fragment_text, name_heavy_text))
def test_number_scan_finds_the_same_after_a_non_ascii_prefix(text: str) -> None:
    # "\u00e9 " makes the text non-ASCII (no digit skipping) and, like the start of the text,
    # neither continues a number nor names a version, so findings only move by two.
    assert [(f.start + 2, f.end + 2, f.label) for f in _scan_numbers(text)] == [
        (f.start, f.end, f.label) for f in _scan_numbers("\u00e9 " + text)
    ]


def _scan_numbers(text: str) -> list:
    found: list = []
    scan_numbers(text, found)
    return sorted(found)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(fragment_text, st.text(), name_heavy_text))
def test_text_cleared_by_the_quick_check_has_no_finding(text: str) -> None:
    cleared = not maybe_sensitive(text)
    assert not cleared or Redactor().find(text) == []
