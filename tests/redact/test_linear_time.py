"""Linear time on adversarial input, checked without wall-clock assertions.

Each input is ~300 000 characters of a pathological repetition (digit runs, separators, '@',
'-', 'a' * n, key prefixes without a body, unterminated PEM headers, quotes...). A linear scan
takes well under a second; anything quadratic needs at least n^2/2 = 4.5e10 steps, i.e. minutes,
so `pytest-timeout` (60 s per test) fails it. Nothing here compares durations.
The hypothesis test does the same with random mixtures of the atoms.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verdict.redact import Redactor

SIZE = 300_000
ATOMS = [
    "1", "1-", "1.", "1 ", "1 (", "1) ", "+1", "4111 ", "12:", "1.2.3.", "DE89", "DE89 1234 ",
    "@", "a@", "a.", "@a.", "a@a.", "-", "a", "A", "_", "a-", "sk-", "sk-a", "AKIA", "AIza",
    "ghp_", "xoxb-", "k_live_", "eyJ", "eyJa.", "eyJhbGciOiJIUzI1NiJ9.", "://", "://a:", "://a:b",
    ":", "::", "a:", "1::", "f:", "=", "a=", "password=", "password:", 'password="', "\\\"",
    '"', "'", "token: Bearer ", "Bearer ", "Basic ", "Cookie: a=b;", "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----\nAAAAAAAAAAAAAAAAAAAA", "<", "<EMAIL", "<EMAIL>", " ", "\n",
]  # fmt: skip
REDACTORS = (Redactor(), Redactor(mode="hash", secret=b"k"), Redactor(mode="drop"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("atom", ATOMS)
def test_repeated_atom_runs_in_linear_time(atom: str) -> None:
    text = atom * (SIZE // len(atom))
    out = Redactor().text(text)
    assert isinstance(out, str)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("pair", [("a" * 5000, "@"), ("1" * 5000, "-"), ("a" * 5000, "=")])
def test_long_runs_between_anchors_run_in_linear_time(pair: tuple[str, str]) -> None:
    run, anchor = pair
    text = (run + anchor) * (SIZE // (len(run) + 1))
    for redactor in REDACTORS:
        assert isinstance(redactor.text(text), str)


@pytest.mark.timeout(120)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mixture=st.lists(
        st.tuples(st.sampled_from(ATOMS), st.integers(min_value=1, max_value=5000)),
        min_size=1,
        max_size=8,
    )
)
def test_adversarial_mixtures_run_in_linear_time(mixture: list[tuple[str, int]]) -> None:
    text = "".join(atom * count for atom, count in mixture)
    for redactor in REDACTORS:
        assert isinstance(redactor.text(text), str)
