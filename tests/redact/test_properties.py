"""Property tests: idempotence, placeholders never re-detected, no crash on arbitrary input."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.redact.strategies import fragment_text, json_values
from verdict.redact import LABELS, Redactor

REDACTORS = {
    "redact": Redactor(),
    "hash": Redactor(mode="hash", secret=b"property-test-key"),
}
DROP = Redactor(mode="drop")
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("mode", sorted(REDACTORS))
@SETTINGS
@given(text=st.one_of(fragment_text, st.text()))
def test_text_redaction_is_idempotent(mode: str, text: str) -> None:
    redactor = REDACTORS[mode]
    once = redactor.text(text)
    assert redactor.text(once) == once


@pytest.mark.parametrize("mode", sorted(REDACTORS))
@SETTINGS
@given(value=json_values)
def test_value_redaction_is_idempotent(mode: str, value: object) -> None:
    redactor = REDACTORS[mode]
    once = redactor.value(value)
    assert redactor.value(once) == once or _has_nan(once)


@SETTINGS
@given(text=st.one_of(fragment_text, st.text()))
def test_drop_mode_never_crashes_and_only_removes(text: str) -> None:
    out = DROP.text(text)
    assert len(out) <= len(text)
    assert out.count("<") <= text.count("<")  # drop mode adds no placeholder


@pytest.mark.parametrize("label", LABELS)
@settings(max_examples=10, deadline=None)
@given(digest=st.text(alphabet="0123456789abcdef", min_size=12, max_size=12))
def test_placeholders_never_trigger_detectors(label: str, digest: str) -> None:
    for placeholder in (f"<{label}>", f"<{label}:{digest}>"):
        for context in ("{}", "x {} y", "password={}", '{{"token": "{}"}}', "{}{}", "a@{}.com"):
            text = context.format(placeholder, placeholder)
            for redactor in REDACTORS.values():
                assert placeholder in redactor.text(text)


@SETTINGS
@given(value=json_values)
def test_value_output_is_json_serializable_when_input_is(value: object) -> None:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return
    out = REDACTORS["redact"].value(value)
    json.dumps(out)


def _has_nan(value: object) -> bool:
    # NaN != NaN, so a structure holding one never compares equal to itself.
    return "NaN" in json.dumps(value, default=repr)
