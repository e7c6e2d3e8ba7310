"""The shortcuts that skip work are exact: the credential-word hints cover every credential name,
hint-driven assignment scanning finds what examining every `:` and `=` finds, and text that the
quick pre-check clears has no finding from any detector."""

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
    credential_name_hints,
    is_credential_name,
)
from verdict.redact.redactor import _MAYBE_SENSITIVE

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
    assert [s[end - 5 : end] for end in credential_name_hints(s)] == [" auth", "i-key", "token"]
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


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(fragment_text, st.text(), name_heavy_text))
def test_text_cleared_by_the_quick_check_has_no_finding(text: str) -> None:
    cleared = _MAYBE_SENSITIVE.search(text) is None
    assert not cleared or Redactor().find(text) == []
