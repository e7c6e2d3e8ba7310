"""Each detector on its positive corpus; the negative corpus passes unchanged."""

from __future__ import annotations

import pytest

from tests.redact.corpus import NEGATIVE, POSITIVE
from verdict.redact import LABELS, Redactor, redact_text


@pytest.mark.parametrize(("label", "text", "secret"), POSITIVE)
def test_positive_corpus_is_redacted(label: str, text: str, secret: str) -> None:
    assert secret in text  # the corpus entry itself is consistent
    out = redact_text(text)
    assert f"<{label}>" in out, out
    assert secret not in out, out


@pytest.mark.parametrize("text", NEGATIVE)
def test_negative_corpus_is_unchanged(text: str) -> None:
    assert redact_text(text) == text
    assert Redactor().find(text) == []


def test_every_label_has_positive_examples() -> None:
    assert {label for label, _, _ in POSITIVE} == set(LABELS)


def test_url_credentials_keep_scheme_and_host() -> None:
    out = redact_text("postgres://app:s3cr3t@db.internal:5432/orders")
    assert out == "postgres://<URL_CREDENTIALS>@db.internal:5432/orders"


def test_surrounding_text_is_kept_exactly() -> None:
    text = "Hi Bob,\n\ncall (415) 555-0134 or mail bob@example.com.\nThanks!"
    assert redact_text(text) == "Hi Bob,\n\ncall <PHONE> or mail <EMAIL>.\nThanks!"


def test_overlapping_findings_become_one_placeholder() -> None:
    # The header value is both an assignment (SECRET) and a bearer value (AUTH): one replacement,
    # named after the stronger detector, covering both.
    out = redact_text("Authorization: Bearer 8f14e45fceea167a5a36dedd4bea2543")
    assert out == "Authorization: <AUTH>"
    out = redact_text("api_key=sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEf")
    assert out == "api_key=<API_KEY>"


def test_findings_report_spans_and_labels() -> None:
    text = "mail bob@example.com or 415-555-0134"
    found = Redactor().find(text)
    assert [(text[f.start : f.end], f.label) for f in found] == [
        ("bob@example.com", "EMAIL"),
        ("415-555-0134", "PHONE"),
    ]


def test_single_digit_dotted_quads_are_versions_and_version_context_wins() -> None:
    assert redact_text("upgrade to 1.2.3.4") == "upgrade to 1.2.3.4"
    assert redact_text("release 10.2.30.4 is out") == "release 10.2.30.4 is out"
    assert redact_text("host 10.2.30.4 is down") == "host <IP> is down"


def test_non_ascii_text_around_findings() -> None:
    text = "Grüße an İstanbul: bob@example.com, Authorization: Bearer 8f14e45fceea167a5a36"
    out = redact_text(text)
    assert out == "Grüße an İstanbul: <EMAIL>, Authorization: <AUTH>"
