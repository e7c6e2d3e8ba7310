"""Modes (redact, hash, drop), configuration errors and user-supplied patterns."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from verdict.redact import Redactor, default_redactor, redact_text

TEXT = "mail bob@example.com or call 415-555-0134"


def _hmac12(secret: bytes, value: str) -> str:
    return hmac.new(secret, value.encode(), hashlib.sha256).hexdigest()[:12]


def test_redact_mode_is_the_default() -> None:
    assert default_redactor.mode == "redact"
    assert redact_text(TEXT) == "mail <EMAIL> or call <PHONE>"


def test_hash_mode_is_hmac_sha256_of_the_value_and_stable() -> None:
    secret = b"tenant-acme-key"
    out = Redactor(mode="hash", secret=secret).text(TEXT)
    expected = (
        f"mail <EMAIL:{_hmac12(secret, 'bob@example.com')}> "
        f"or call <PHONE:{_hmac12(secret, '415-555-0134')}>"
    )
    assert out == expected
    # Stable across calls and instances (joins across spans still work) ...
    assert Redactor(mode="hash", secret=secret).text(TEXT) == expected
    # ... and keyed: another secret gives other digests.
    assert Redactor(mode="hash", secret=b"other").text(TEXT) != expected


def test_hash_mode_for_structured_credentials() -> None:
    redactor = Redactor(mode="hash", secret=b"k")
    a = redactor.value({"password": {"x": 1, "y": 2}})
    b = redactor.value({"password": {"y": 2, "x": 1}})
    assert a == b  # canonical JSON: key order does not matter
    assert a["password"].startswith("<SECRET:") and len(a["password"]) == len("<SECRET:>") + 12
    assert redactor.value({"password": "hunter2"}) == {
        "password": f"<SECRET:{_hmac12(b'k', 'hunter2')}>"
    }


def test_drop_mode_removes_values() -> None:
    redactor = Redactor(mode="drop")
    assert redactor.text(TEXT) == "mail  or call "
    assert redactor.value({"password": "x", "user": "bob", "token": None}) == {
        "user": "bob",
        "token": None,
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "mask"}, "redaction mode must be one of redact, hash, drop, got 'mask'"),
        ({"mode": "hash"}, "hash mode needs a secret"),
        ({"mode": "hash", "secret": b""}, "hash mode needs a secret"),
        ({"mode": "hash", "secret": "text"}, "secret must be bytes, got str"),
        ({"extra_patterns": {"ticket": r"TCK-\d+"}}, "extra pattern label must be"),
        ({"extra_patterns": {"TICKET": r"TCK-(\d+"}}, "extra pattern TICKET: invalid regex"),
        ({"extra_patterns": {"TICKET": r"\d*"}}, "matches the empty string"),
        ({"extra_patterns": {"TRUNCATED": r"x"}}, "is reserved"),
        ({"hook": "not callable"}, "hook must be callable"),
        ({"max_depth": 0}, "max_depth must be a positive integer"),
        ({"max_items": -1}, "max_items must be a positive integer"),
        ({"max_string": True}, "max_string must be a positive integer"),
    ],
)
def test_configuration_errors_are_precise(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        Redactor(**kwargs)
    assert message in str(raised.value)


def test_text_requires_a_string() -> None:
    with pytest.raises(TypeError, match="expected str, got bytes"):
        default_redactor.text(b"bob@example.com")  # type: ignore[arg-type]


def test_user_patterns_get_their_label_and_win_overlaps() -> None:
    redactor = Redactor(extra_patterns={"TICKET": r"TCK-\d{6}", "EMPLOYEE": r"\bE\d{5}\b"})
    out = redactor.text("see TCK-123456 for E12345 (mail bob@example.com)")
    assert out == "see <TICKET> for <EMPLOYEE> (mail <EMAIL>)"
    assert redactor.text(out) == out  # user placeholders are protected too


def test_user_patterns_in_hash_and_drop_modes() -> None:
    hashed = Redactor(mode="hash", secret=b"k", extra_patterns={"TICKET": r"TCK-\d{6}"})
    assert hashed.text("TCK-123456") == f"<TICKET:{_hmac12(b'k', 'TCK-123456')}>"
    dropped = Redactor(mode="drop", extra_patterns={"TICKET": r"TCK-\d{6}"})
    assert dropped.text("a TCK-123456 b") == "a  b"


def test_idempotent_on_glued_findings() -> None:
    # The second IBAN is glued to the first; once the first is replaced it stands alone.
    text = "GB29NWBK60161331926819GB29NWBK60161331926819"
    for redactor in (Redactor(), Redactor(mode="hash", secret=b"k")):
        once = redactor.text(text)
        assert redactor.text(once) == once
