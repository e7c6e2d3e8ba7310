"""The redactor's fast paths (text skipped when no detector can match, scanners and key shapes
skipped when their anchor is absent, mapping keys redacted once and remembered) are exact: on
adversarial text (numbers, cards, IBANs, keys, JWTs, e-mails, URLs with credentials, IPv6,
assignments, GenAI message JSON) and on natural prose with and without planted secrets of every
class they find and replace exactly what running every scanner, and every key shape, on every text
(and every key of every value) finds."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.redact.strategies import PROSE, SECRETS, fragment_text, natural_text, planted_text
from verdict.redact import Redactor, keys
from verdict.redact import redactor as redactor_module
from verdict.redact.findings import Finding
from verdict.redact.redactor import SCANS, maybe_sensitive


class _FullRedactor(Redactor):
    """The reference: every scanner on every text (none skipped, no text cleared unscanned)."""

    __slots__ = ()

    def _scan(self, s: str, possible: int = 0) -> list[Finding]:  # every family, whatever is possible
        out: list[Finding] = []
        for scan in SCANS:
            scan(s, out)
        return out

    def text(self, s: str) -> str:  # Redactor.text without its gates
        return self._redact(s, 0)

    def _key(self, key: str) -> str:  # every mapping key redacted on every call, nothing remembered
        return self.text(key)


_ATOMS = [
    "4111 1111 1111 1111", "4111111111111111", "GB29 NWBK 6016 1331 9268 19", "DE89370400440532013000",
    "078-05-1120", "+44 20 7946 0958", "(415) 555-0134", "10.0.12.7", "2001:db8::8a2e:370:7334",
    "fe80::1", "a:b:c:d:e:f:1:2", "2001:db8:85a3:0:0:8a2e:370:7334", "::", ":", "jane.doe@example.com", "@", "postgres://app:s3cret@db:5432/x",
    "https://user:pa:ss@host/", "://", "sk-proj-" + "a1B2" * 6, "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "ghp_" + "x1" * 18, "xoxb-1234567890-abc",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "eyJ", "Bearer abc.def-123456", "BEARER ", "Basic dXNlcjpwYXNz",
    "basic ", "-----BEGIN PRIVATE KEY-----", "password=hunter2", '"api_key": "k-123"', "token: abc",
    "Authorization: Bearer x1y2z3w4v5", "Cookie: a=1; b=2", "=", "12:34", "Ticket 12345678:", " ", "\n", '"',
    "İ", "ß", "<EMAIL>", "<SECRET:0123456789ab>",
]  # fmt: skip
atom_text = st.lists(st.one_of(st.sampled_from(_ATOMS), st.text(max_size=6)), max_size=14).map("".join)


def _message_json(texts: list[str]) -> str:
    """A GenAI message column as the SDK writes it, around adversarial content."""
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": t} for t in texts]}])


adversarial = st.one_of(
    atom_text, fragment_text, st.text(), st.lists(atom_text, min_size=1, max_size=3).map(_message_json),
    natural_text, planted_text, st.lists(planted_text, min_size=1, max_size=2).map(_message_json),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=adversarial, mode=st.sampled_from(["redact", "hash", "drop"]))
@example(text="at 2001:db8:85a3:0:0:8a2e:370:7334 now", mode="redact")  # seven colons, no "::"
@example(text="mail a@example.com or https://u:p@h/", mode="redact")
def test_fast_path_finds_and_replaces_exactly_what_every_scanner_does(text: str, mode: str) -> None:
    secret = b"k" if mode == "hash" else None
    fast, full = Redactor(mode=mode, secret=secret), _FullRedactor(mode=mode, secret=secret)
    assert fast.find(text) == full.find(text)
    assert fast.text(text) == full.text(text)


def test_the_reference_runs_every_scanner() -> None:
    # A finding from each gated scanner, so the comparison above cannot pass vacuously.
    text = "a@example.com https://u:p@h/ 2001:db8::8a2e:370:7334"
    labels = {f.label for f in _FullRedactor().find(text)}
    assert {"EMAIL", "URL_CREDENTIALS", "IP"} <= labels
    assert Redactor().find(text) == _FullRedactor().find(text)


def _every_key_shape(s: str) -> list[Finding]:
    """scan_keys without its gates: every shape group, PEM, JWT and auth-header scan."""
    out: list[Finding] = []
    for shapes in (keys._DASH_KEYS, keys._A_KEYS, keys._UNDERSCORE_KEYS):
        keys._scan_shapes(s, shapes, out)
    keys._scan_pem(s, out)
    keys._scan_jwt(s, out)
    keys._auth(s, out)
    return sorted(out)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=adversarial)
@example(text="Authorization: BEARER abcdefgh12345678")  # upper-case scheme: the R gate
@example(text="AUTH: BASIC dXNlcjpwYXNz")  # the C gate
@example(text="id AIza0yA1234567890abcdefghijklmnopqrstuv")  # the z gate (no K, no S)
@example(text="key ASIAIOSFODNN7EXAMPLE")  # the S gate
def test_key_scan_gates_find_what_every_key_shape_finds(text: str) -> None:
    found: list[Finding] = []
    keys.scan_keys(text, found)
    assert sorted(found) == _every_key_shape(text)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=adversarial)
@example(text="İ basıc dXNlcjpwYXNz")  # lower() lengthens the text: the case-insensitive path
@example(text="bAsIc dXNlcjpwYXNz")
def test_text_cleared_by_maybe_sensitive_has_no_finding_from_any_scanner(text: str) -> None:
    assert maybe_sensitive(text) or _FullRedactor().find(text) == []


def test_every_planted_secret_is_found_in_prose_and_ordinary_prose_is_cleared_or_clean() -> None:
    # The natural corpora are not vacuous: each secret is found among the sentences, and the
    # prose alone has no finding (the gates let some of it by, which costs time, not exactness).
    prose = " ".join(PROSE)
    assert _FullRedactor().find(prose) == [] and Redactor().text(prose) == prose
    for secret in SECRETS:
        text = f"{PROSE[0]} {secret} {PROSE[1]}"
        assert Redactor().find(text) == _FullRedactor().find(text) != [], secret


def test_the_auth_gate_is_false_for_prose_with_b_basic_and_bearer_words() -> None:
    # Every sentence but the last two has a "b"; "basic", "basically" and "bearer" are words
    # here, not schemes, yet only texts holding one of those words pass the gate.
    assert all(not keys.has_auth_word(s) for s in PROSE if "basic" not in s.lower() and "bearer" not in s.lower())
    assert sum("b" in s.lower() for s in PROSE) >= 9
    assert keys.has_auth_word("Authorization: BeArEr x") and keys.has_auth_word("İ basıc ")
    assert not maybe_sensitive("Both branches were rebased last week and nobody objected.")


def _keyed(texts: list[str]) -> dict:
    """A value whose keys are the texts, at two depths, beside the GenAI attribute keys."""
    return {"gen_ai.input.messages": [{"role": "user", "parts": [{t: t for t in texts}]}],
            **{t: {t: "value"} for t in texts}}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(adversarial, max_size=6), mode=st.sampled_from(["redact", "hash", "drop"]))
@example(texts=["password", "api_key", "mail a@example.com", "4111 1111 1111 1111"], mode="redact")
def test_remembered_keys_redact_values_exactly_as_every_key_redacted_every_time(texts: list[str], mode: str) -> None:
    secret = b"k" if mode == "hash" else None
    cached, full = Redactor(mode=mode, secret=secret), _FullRedactor(mode=mode, secret=secret)
    value = _keyed(texts)
    expected = full.value(value)
    assert cached.value(value) == expected  # first call: keys redacted and remembered
    assert cached.value(value) == expected  # second call: keys from the cache


def test_the_key_cache_is_bounded_and_stays_exact_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redactor_module, "_KEY_CACHE_SIZE", 3)
    cached, full = Redactor(), _FullRedactor()
    keys_ = [f"key_{n} a{n}@example.com" for n in range(10)] + ["x" * 300 + " b@example.com"]
    for _ in range(2):
        for key in keys_:
            assert cached.value({key: 1}) == full.value({key: 1}) == {full.text(key): 1}
            assert len(cached._keys) <= 3
    assert "x" * 300 + " b@example.com" not in cached._keys  # too long to remember
    assert cached.value({"key_9 a9@example.com": 1}) == {"key_9 <EMAIL>": 1}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(adversarial, min_size=1, max_size=6), mode=st.sampled_from(["redact", "hash", "drop"]),
       extra=st.booleans())
@example(texts=["mail a@example.com", "plain prose", "mail a@example.com"], mode="redact", extra=False)
def test_remembered_texts_redact_exactly_as_every_text_scanned_every_time(texts: list[str], mode: str,
                                                                          extra: bool) -> None:
    # Each text twice (first scanned and remembered, then looked up), interleaved with the others,
    # against the reference that scans every text every time; with and without a user rule.
    secret = b"k" if mode == "hash" else None
    patterns = {"TICKET": r"TCK-\d{6}"} if extra else None
    cached = Redactor(mode=mode, secret=secret, extra_patterns=patterns)
    full = _FullRedactor(mode=mode, secret=secret, extra_patterns=patterns)
    for text in texts + texts:
        assert cached.text(text) == full.text(text)


def test_remembered_texts_belong_to_one_redactor() -> None:
    # The result depends on the redactor's mode, secret and rules: one redactor's remembered text
    # never answers for another.
    text = "call TCK-123456 or mail a@example.com"
    plain, ticket = Redactor(), Redactor(extra_patterns={"TICKET": r"TCK-\d{6}"})
    hashed = Redactor(mode="hash", secret=b"k")
    assert plain.text(text) == plain.text(text) == "call TCK-123456 or mail <EMAIL>"
    assert ticket.text(text) == "call <TICKET> or mail <EMAIL>"
    assert hashed.text(text).startswith("call TCK-123456 or mail <EMAIL:")
    assert Redactor(mode="hash", secret=b"other").text(text) != hashed.text(text)


def test_the_text_cache_is_bounded_and_stays_exact_past_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redactor_module, "_TEXT_CACHE_SIZE", 3)
    monkeypatch.setattr(redactor_module, "_TEXT_CACHE_CHARS", 200)
    cached, full = Redactor(), _FullRedactor()
    texts = [f"note {n}: write to a{n}@example.com" for n in range(10)] + ["x" * 150 + " b@example.com"]
    for _ in range(2):
        for text in texts:
            assert cached.text(text) == full.text(text)
            assert len(cached._texts) <= 3 and cached._text_chars <= 200
            assert cached._text_chars == sum(map(len, cached._texts))
    monkeypatch.setattr(redactor_module, "_TEXT_CACHE_LENGTH", 20)
    long_text = "y" * 30 + " c@example.com"
    assert cached.text(long_text) == "y" * 30 + " <EMAIL>" and long_text not in cached._texts  # too long to remember
