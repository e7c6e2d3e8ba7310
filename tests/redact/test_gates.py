"""The compiled detector-family gate (`verdict/redact/_gate.c`, `redactor.families`) is a superset:
wherever a family's scanner finds something, the family's bit is set; so the gated redactor
finds and replaces exactly what running every scanner does (tests/redact/test_fast_path.py
compares them too). Texts: the fast-path corpora (adversarial fragments, prose with and without
planted secrets, message JSON) and near-misses at each condition's edge (digit runs of 6 to 12
characters with "(" and "+" leads, dotted groups, IBAN-like codes; credential words split by
separators in any case before quotes, escaped quotes, spaces and separators; key prefixes cut
short), in each of CPython's string kinds. Without the compiled module (an SDK installed without
a compiler) the redactor runs every scanner but those whose anchor is absent, as before."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.redact.strategies import PROSE
from tests.redact.test_fast_path import _FullRedactor, _message_json, adversarial
from verdict.redact import Redactor
from verdict.redact import redactor as redactor_module
from verdict.redact.assignments import scan_assignments
from verdict.redact.credentials import _HINTS
from verdict.redact.findings import Finding
from verdict.redact.keys import scan_keys
from verdict.redact.network import scan_emails, scan_ipv6, scan_url_credentials
from verdict.redact.numbers import scan_numbers
from verdict.redact.redactor import ASSIGNMENTS, AT, IPV6, KEYS, NUMBERS, families

SCANNERS: dict[int, tuple[Callable[[str, list[Finding]], None], ...]] = {
    NUMBERS: (scan_numbers,), ASSIGNMENTS: (scan_assignments,), KEYS: (scan_keys,),
    AT: (scan_emails, scan_url_credentials), IPV6: (scan_ipv6,),
}  # fmt: skip


def _found(family: int, text: str) -> list[Finding]:
    out: list[Finding] = []
    for scan in SCANNERS[family]:
        scan(text, out)
    return out


_digit_run = st.lists(
    st.one_of(st.sampled_from("0123456789"), st.sampled_from(["0", "4", "9", " ", ".", "-", "/", "(", ")", ") ", " ("])),
    min_size=6, max_size=12,
).map("".join)  # fmt: skip
_number_near_miss = st.tuples(
    st.sampled_from(["", " ", "+", "(", "+(", "+0", "a", "GB", "DE", "G", "call ", "ssn ", "phone: ", "version "]),
    _digit_run,
    st.sampled_from(["", " ", ".", "a", ":", "\n"]),
).map("".join)


def _split(word: str, separators: list[str], upper: list[bool]) -> str:
    return "".join((c.upper() if up else c) + sep for c, sep, up in zip(word, separators, upper, strict=False))


_credential_word = st.sampled_from(["password", "pass", "api_key", "apiKey", "token", "secret", "auth", "cookie",
                                    "sessionid", "jwt", "otp", "pin", "cvv", "credential", "pwd", *_HINTS])  # fmt: skip
_split_word = st.tuples(
    _credential_word,
    st.lists(st.sampled_from(["", "", "", "-", "_", ".", " ", "1"]), min_size=12, max_size=12),
    st.lists(st.booleans(), min_size=12, max_size=12),
).map(lambda t: _split(*t))
_assignment_near_miss = st.tuples(
    st.sampled_from(["", " ", '"', "x_", "my-", "db.", '\\"', "a" * 60, "bos"]),
    _split_word,
    st.sampled_from(["", "s", "_id", "X", "word", "-1"]),
    st.sampled_from(["", '"', "'", '\\"', "\\'", '\\\\"', " ", "\t", '" ', "x"]),
    st.sampled_from([":", "=", " :", " =", "::", "==", ":/", " - ", "; "]),
    st.sampled_from([" hunter2", '"s3cret"', " Bearer abc123", "", " null", "1", '\\"v\\"']),
).map("".join)
_KEY_PREFIXES = [
    "sk-", "sk-proj-", "s-", "k-", "glpat-", "lpat-", "gpat-", "xoxb-", "xoxz-", "xob-", "pypi-", "ypi-",
    "AKIA", "KIA", "ASIA", "AIza", "AIz", "Iza", "ghp_", "gho_", "ghx_", "gp_", "github_pat_", "ithub_pat_",
    "sk_live_", "rk_test_", "k_test_", "hf_", "f_", "npm_", "pm_", "eyJ", "yJ", "ey J",
    "-----BEGIN PRIVATE KEY-----", "----BEGIN PRIVATE KEY-----", "-----BEGN PRIVATE KEY-----",
    "Bearer ", "bearer\t", "BeArEr ", "earer ", "bearr ", "Basic ", "baſic ", "basıc ", "İ basİc ", "basc ",
]  # fmt: skip
_key_near_miss = st.tuples(
    st.sampled_from(["", " ", "x", "Authorization: ", "key ", "İ "]),
    st.sampled_from(_KEY_PREFIXES),
    st.sampled_from([
        "", "1234567890abcdefghijABCDEFGHIJ1234567890abcdefghij_-", "IOSFODNN7EXAMPLE",
        "IOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "0yA1234567890abcdefghijklmnopqrstuv",
        "hbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "dXNlcjpwYXNz", "x1y2z3w4v5",
        "\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
    ]),
).map("".join)  # fmt: skip
near_miss = st.one_of(_number_near_miss, _assignment_near_miss, _key_near_miss)
texts = st.one_of(
    adversarial, near_miss, st.lists(near_miss, min_size=1, max_size=3).map(_message_json),
    st.lists(st.one_of(near_miss, st.sampled_from(PROSE)), min_size=1, max_size=4).map(" ".join),
)  # fmt: skip
# Each condition of the gate at its edge: the family finds something, and only that condition lets it by.
EDGES = [
    (NUMBERS, "ssn 123456789"),  # a run of exactly nine characters
    (NUMBERS, "+12345678"),  # "+" and eight digits: a run of eight
    (NUMBERS, "10.0.0.1"),  # three dots in eight characters
    (NUMBERS, "GB29NWBK60161331926819"),
    (NUMBERS, "pay GB03 WEST A234 5A98 7A54 32"),  # an IBAN whose digits are in runs of 2 to 5
    (NUMBERS, "SSN: 536-90-4399"),
    *((ASSIGNMENTS, f"{name}=x") for name in
      ("pass", "apikey", "auth", "credential", "secret", "token", "cookie", "sessionid", "pwd", "jwt", "otp", "pin", "cvv")),
    (ASSIGNMENTS, '{\\"token\\": \\"abc\\"}'), (ASSIGNMENTS, "token' = abc"), (ASSIGNMENTS, "token\t= abc"),
    (ASSIGNMENTS, 'x = {"P-a_S.s": "x"}'), (ASSIGNMENTS, "API_KEY:x"),
    (KEYS, "sk-proj-" + "a1B2" * 6), (KEYS, "glpat-" + "a1B2" * 6), (KEYS, "xoxb-1234567890-abc"),
    (KEYS, "pypi-" + "a1B2" * 13), (KEYS, "AKIAIOSFODNN7EXAMPLE"), (KEYS, "ASIAIOSFODNN7EXAMPLE"),
    (KEYS, "AIza0yA1234567890abcdefghijklmnopqrstuv"), (KEYS, "ghp_" + "x1" * 18), (KEYS, "gho_" + "x1" * 18),
    (KEYS, "github_pat_" + "x1" * 11), (KEYS, "sk_live_" + "x1" * 8), (KEYS, "hf_" + "x1" * 15),
    (KEYS, "npm_" + "x1" * 18), (KEYS, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"),
    (KEYS, "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"),
    (KEYS, "Bearer abc.def-123456"), (KEYS, "BEARER abc.def-123456"), (KEYS, "Basic dXNlcjpwYXNz"),
    (KEYS, "İ baſic dXNlcjpwYXNz"), (KEYS, "İ basıc dXNlcjpwYXNz"), (KEYS, "İ basİc dXNlcjpwYXNz"),
    (AT, "jane.doe@example.com"), (AT, "postgres://app:s3cret@db:5432/x"),
    (IPV6, "fe80::1"), (IPV6, "at 2001:db8:85a3:0:0:8a2e:370:7334 now"),
]  # fmt: skip


def _kinds(text: str) -> list[str]:
    """`text` in each string kind CPython stores (1, 2 and 4 bytes a character): a character
    that is none of the gate's classes, appended, changes the storage and nothing else."""
    return [text, text + "\u00e9", text + "\u20ac", text + "\U0001f600"]


def test_the_compiled_gate_is_what_the_redactor_runs() -> None:
    # The test environment must run it (else the tests here check the fallback only): `make` builds it.
    assert redactor_module.COMPILED_GATE, "verdict.redact._gate is not built: python setup.py build_ext --inplace"
    from verdict.redact import _gate

    assert families is _gate.families is redactor_module.families
    with pytest.raises(TypeError, match="expected str"):
        _gate.families(b"password=x")  # type: ignore[arg-type]


@pytest.mark.parametrize(("family", "text"), EDGES)
def test_every_condition_of_the_gate_lets_by_what_its_family_finds(family: int, text: str) -> None:
    assert _found(family, text) != [], text  # the edge is real: the scanner finds something
    for kind in _kinds(text):
        assert families(kind) & family, kind
    assert Redactor().find(text) == _FullRedactor().find(text)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
@example(text="call +12345678 now or pay GB31ABCD12AB34CD56EF78 now")
@example(text="p-a_s.s: x and my_pin=12 and x.cookie :a")
def test_a_family_ruled_out_finds_nothing(text: str) -> None:
    possible = families(text)
    for kind in _kinds(text)[1:]:
        assert families(kind) == possible, kind
    for family in SCANNERS:
        if not possible & family:
            assert _found(family, text) == [], (family, text)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, mode=st.sampled_from(["redact", "hash", "drop"]))
def test_the_gated_redactor_replaces_exactly_what_every_scanner_does(text: str, mode: str) -> None:
    secret = b"k" if mode == "hash" else None
    gated, full = Redactor(mode=mode, secret=secret), _FullRedactor(mode=mode, secret=secret)
    assert gated.find(text) == full.find(text)
    assert gated.text(text) == full.text(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, mode=st.sampled_from(["redact", "hash", "drop"]))
def test_without_the_compiled_gate_the_redactor_replaces_exactly_what_every_scanner_does(text: str, mode: str) -> None:
    secret = b"k" if mode == "hash" else None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(redactor_module, "families", redactor_module._anchors)
        patch.setattr(redactor_module, "COMPILED_GATE", False)
        assert Redactor(mode=mode, secret=secret).text(text) == _FullRedactor(mode=mode, secret=secret).text(text)


def test_the_gate_rules_out_ordinary_prose_and_message_json() -> None:
    # What it is for: a ticket number, prices and prose (a "key" before a colon, "_" and "-"
    # in words) in GenAI message JSON rule out numbers, assignments and keys.
    prose = [s for s in PROSE if "basic" not in s.lower() and "bearer" not in s.lower()]
    text = _message_json(["Ticket 62992312: Please draft a quote for 40 seats on the team plan, billed yearly.",
                          "The key point: plans renew on the 1st; the snake_case name is re-used.", *prose])  # fmt: skip
    assert len(prose) >= 8
    assert families(text) & (NUMBERS | ASSIGNMENTS | KEYS) == 0
    assert Redactor().text(text) == text == _FullRedactor().text(text)


# A Python process in which the compiled module cannot be imported (as in an install without a compiler).
WITHOUT_GATE = textwrap.dedent("""
    import importlib.abc, sys
    class NoGate(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "verdict.redact._gate":
                raise ModuleNotFoundError("not built")
    sys.meta_path.insert(0, NoGate())
""")


def run_without_gate(script: str, stdin: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-c", WITHOUT_GATE + textwrap.dedent(script)]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, check=True, env=env).stdout


def test_without_the_compiled_gate_the_sdk_imports_and_redacts_the_same() -> None:
    # An app installs the SDK from a wheel built without a compiler: the import of `_gate` fails.
    script = """
        import verdict
        from verdict.redact import Redactor, redactor
        assert redactor.families is redactor._anchors and not redactor.COMPILED_GATE
        assert "verdict.redact._gate" not in sys.modules
        for line in sys.stdin.read().split("\\0"):
            print(Redactor().text(line), end="\\0")
    """
    lines = [text for _, text in EDGES] + ["Ticket 62992312: a quote for 40 seats, basically.", "İ basıc dXNlcjpwYXNz"]
    assert run_without_gate(script, "\0".join(lines)).split("\0")[:-1] == [Redactor().text(line) for line in lines]
