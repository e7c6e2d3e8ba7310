"""`Redactor.value`: credential-named keys, nesting, numbers, the hook, depth and size bounds."""

from __future__ import annotations

import pytest

from verdict.redact import (
    MAX_DEPTH_MARKER,
    TRUNCATED_MARKER,
    Redactor,
    is_credential_name,
    redact_value,
)


@pytest.mark.parametrize(
    "name",
    [
        "password", "passwd", "pwd", "PASSWORD", "db_password", "password_hash", "api_key",
        "apikey", "API-Key", "x-api-key", "apiKey", "token", "access_token", "refreshToken",
        "csrf-token", "secret", "client_secret", "ClientSecret", "authorization",
        "Proxy-Authorization", "cookie", "set-cookie", "Set-Cookie", "private_key",
        "privateKey", "aws_secret_access_key", "AWS_ACCESS_KEY_ID".replace("_ID", ""),
        "credentials", "session_id", "sessionId", "basic_auth", "passphrase", "jwt", "otp",
    ],
)  # fmt: skip
def test_credential_names(name: str) -> None:
    assert is_credential_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "name", "email", "key", "keys", "monkey", "author", "max_tokens", "input_tokens",
        "tokens", "token_type", "tokenizer", "secretary", "eos_token", "pad_token", "bypass",
        "compass", "passenger", "description", "public_key", "", "id",
    ],
)  # fmt: skip
def test_not_credential_names(name: str) -> None:
    assert not is_credential_name(name)


def test_credential_values_are_redacted_whatever_their_shape() -> None:
    value = {
        "user": "bob",
        "password": "hunter2",
        "api_key": 12345,
        "Authorization": ["Bearer abc", "Basic xyz"],
        "client_secret": {"primary": "a", "backup": {"deep": "b"}},
        "token": None,
        "cookie": "",
        "nested": [{"access_token": "t0k3n", "scope": "read"}],
    }
    assert redact_value(value) == {
        "user": "bob",
        "password": "<SECRET>",
        "api_key": "<SECRET>",
        "Authorization": "<SECRET>",
        "client_secret": "<SECRET>",
        "token": None,  # nothing to hide; "no token" stays visible
        "cookie": "",
        "nested": [{"access_token": "<SECRET>", "scope": "read"}],
    }


def test_strings_keys_and_long_integers_are_scanned() -> None:
    value = {
        "note": "mail bob@example.com",
        "bob@example.com": "key holds an address",
        "phone": 14155550134,
        "card": 4111111111111111,
        "count": 42,
        "ratio": 0.5,
        "ok": True,
        "items": ("415-555-0134", None),
    }
    assert redact_value(value) == {
        "note": "mail <EMAIL>",
        "<EMAIL>": "key holds an address",
        "phone": 14155550134,  # unformatted digits need a context word in the same text
        "card": "<CARD>",
        "count": 42,
        "ratio": 0.5,
        "ok": True,
        "items": ("<PHONE>", None),
    }


def test_input_is_not_mutated() -> None:
    value = {"password": "x", "list": ["bob@example.com"]}
    redact_value(value)
    assert value == {"password": "x", "list": ["bob@example.com"]}


def test_depth_bound_replaces_deeper_containers_with_a_marker() -> None:
    deep: object = "bob@example.com"
    for _ in range(10):
        deep = [deep]
    out = Redactor(max_depth=3).value(deep)
    assert out == [[[MAX_DEPTH_MARKER]]]


def test_self_referencing_value_is_bounded() -> None:
    loop: list[object] = ["x"]
    loop.append(loop)
    out = Redactor(max_depth=4).value(loop)
    assert out == ["x", ["x", ["x", ["x", MAX_DEPTH_MARKER]]]]


def test_item_budget_truncates_with_a_marker() -> None:
    # Every value counts, containers included: the dict, the list and three numbers make five.
    out = Redactor(max_items=5).value({"a": list(range(10)), "b": "x"})
    assert out == {"a": [0, 1, 2, TRUNCATED_MARKER], TRUNCATED_MARKER: TRUNCATED_MARKER}


def test_long_strings_are_cut_and_marked() -> None:
    out = Redactor(max_string=20).value("mail bob@example.com and much more text")
    assert out == "mail <EMAIL>" + TRUNCATED_MARKER


def test_hook_sees_structured_content_before_redaction() -> None:
    seen = []

    def hook(value: object) -> object:
        seen.append(value)
        return {**value, "internal_note": "removed by hook"} if isinstance(value, dict) else value

    redactor = Redactor(hook=hook)
    out = redactor.value({"email": "bob@example.com"})
    assert seen == [{"email": "bob@example.com"}]  # unredacted: the hook may need raw content
    assert out == {"email": "<EMAIL>", "internal_note": "removed by hook"}


def test_hook_output_is_still_redacted() -> None:
    redactor = Redactor(hook=lambda value: f"{value} and call 415-555-0134")
    assert redactor.value("hi") == "hi and call <PHONE>"


def test_other_types_become_redacted_text() -> None:
    out = redact_value({"raw": b"mail bob@example.com", "tags": {"415-555-0134"}})
    assert out == {"raw": "mail <EMAIL>", "tags": ["<PHONE>"]}


def test_long_strings_are_cut_at_a_space_not_inside_a_secret() -> None:
    text = "call 415-555-0134 now " * 3
    out = Redactor(max_string=30).value(text)
    assert out == "call <PHONE> now call" + TRUNCATED_MARKER  # not "...call 415-555-01"


def test_cut_strings_stay_stable_when_redacted_again() -> None:
    redactor = Redactor(mode="hash", secret=b"k", max_string=40)
    once = redactor.value("a@b.io " * 20)  # hash placeholders are longer than the values
    assert len(once) > 40
    assert redactor.value(once) == once
