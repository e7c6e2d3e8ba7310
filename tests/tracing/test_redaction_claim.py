"""The SDK's tracer scope claims the built-in redaction only when that redactor wrote the content, so an
authenticated collector never skips redacting content that a custom (possibly weaker) redactor or no
redactor at all produced (collector/redaction.py)."""

from __future__ import annotations

import verdict
from verdict.redact import SDK_REDACTION_ATTRIBUTE

MESSAGES = [{"role": "user", "content": "mail bob@example.com"}]


class KeepEverything:
    """A custom redactor that redacts nothing: its content must not carry the built-in claim."""

    def text(self, s: str) -> str:
        return s

    def value(self, obj):
        return obj


def _scope_attributes(traced, fake_openai) -> dict:
    fake_openai.client().chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    span = traced.one()
    return dict(span.instrumentation_scope.attributes or {})


def test_the_built_in_redactor_is_claimed_with_the_engine_version(fake_openai, traced):
    assert _scope_attributes(traced, fake_openai) == {SDK_REDACTION_ATTRIBUTE: verdict.__version__}
    assert "bob@example.com" not in str(traced.attrs())


def test_a_custom_redactor_or_no_content_makes_no_claim(fake_openai, restart):
    traced = restart(redactor=KeepEverything())
    assert SDK_REDACTION_ATTRIBUTE not in _scope_attributes(traced, fake_openai)
    traced = restart(capture_content=False)
    assert SDK_REDACTION_ATTRIBUTE not in _scope_attributes(traced, fake_openai)
