"""CorruptionInjector and build_battery: every kind, determinism, fake-but-valid PII."""

import json
import re

import pytest

from verdict.inject import (
    TARGET_DIMENSIONS,
    CorruptionInjector,
    CorruptionKind,
    build_battery,
    luhn_check_digit,
)

ANSWER = (
    "To reset your password, open Settings and choose Security. Click 'Reset password' and follow the "
    "e-mail link within 30 minutes. If the link expires, request a new one from the same page."
)
JSON_ANSWER = '{"status": "ok", "steps": ["open settings", "choose security"], "minutes": 30}'
QUERY = "How do I reset my password?"


def luhn_valid(number: str) -> bool:
    """Independent Luhn check (ISO/IEC 7812-1 Annex B)."""
    digits = [int(c) for c in number][::-1]
    total = sum(
        d if i % 2 == 0 else (d * 2 - 9 if d * 2 > 9 else d * 2) for i, d in enumerate(digits)
    )
    return total % 10 == 0


@pytest.mark.parametrize("kind", list(CorruptionKind))
def test_every_kind_changes_the_text_deterministically(kind):
    injector = CorruptionInjector(seed=3)
    source = JSON_ANSWER if kind is CorruptionKind.FORMAT_BREAK else ANSWER
    first = injector.corrupt(source, kind, 0.8, query=QUERY)
    again = CorruptionInjector(seed=3).corrupt(source, kind, 0.8, query=QUERY)
    assert first == again
    assert first.corrupted != source and first.original == source and first.kind is kind
    assert first.detail


def test_seed_changes_random_choices():
    outs = {
        CorruptionInjector(seed=s).corrupt(ANSWER, "hallucination", 0.3).corrupted
        for s in range(10)
    }
    assert len(outs) > 1


def test_pii_leak_is_fake_but_valid_format():
    for seed in range(30):
        text = CorruptionInjector(seed).corrupt(ANSWER, CorruptionKind.PII_LEAK, 1.0).corrupted
        found = re.search(r"\b(\d{16})\b", text)
        assert found is not None, text
        card = found.group(1)
        assert luhn_valid(card) and card.startswith("400000")  # test-card range
        ssn = re.search(r"\b(\d{3})-(\d{2})-(\d{4})\b", text)
        assert ssn is not None, text
        assert ssn.group(1).startswith("9") and ssn.group(2) != "00" and ssn.group(3) != "0000"
        assert re.search(r"[\w.]+@example\.com", text)
    assert luhn_check_digit("7992739871") == "3"  # the classic Luhn worked example 79927398713


def test_format_break_yields_invalid_json_where_json_was_expected():
    for strength in (0.2, 1.0):
        broken = CorruptionInjector(1).corrupt(JSON_ANSWER, "format_break", strength).corrupted
        with pytest.raises(json.JSONDecodeError):
            json.loads(broken)
    plain = CorruptionInjector(1).corrupt(ANSWER, "format_break", 1.0).corrupted
    assert plain.startswith('{"answer"')
    with pytest.raises(json.JSONDecodeError):
        json.loads(plain)


def test_strength_scales_the_change():
    inj = CorruptionInjector(0)
    weak, strong = (inj.corrupt(ANSWER, "truncation", s).corrupted for s in (0.1, 1.0))
    assert len(strong) < len(weak) < len(ANSWER) and ANSWER.startswith(strong)
    short_pad, long_pad = (
        inj.corrupt(ANSWER, "verbosity_padding", s).corrupted for s in (0.2, 1.0)
    )
    assert len(ANSWER) < len(short_pad) < len(long_pad) and long_pad.startswith(ANSWER)
    full = inj.corrupt(ANSWER, "refusal", 1.0)
    assert full.corrupted == full.detail  # nothing of the answer left
    claims = inj.corrupt(ANSWER, "hallucination", 1.0).detail.count("|") + 1
    assert claims == 3


def test_build_battery_crosses_pairs_kinds_and_strengths():
    pairs = [(QUERY, ANSWER), ("Give me the status as JSON", JSON_ANSWER)]
    cases = build_battery(pairs, ["refusal", CorruptionKind.PII_LEAK], [0.5, 1.0], seed=2)
    assert len(cases) == 8
    assert len({c.case_id for c in cases}) == 8
    assert cases[0].case_id == "0:refusal:0.5" and cases[0].query == QUERY
    assert all(c.target_dimensions == TARGET_DIMENSIONS[c.kind] for c in cases)
    assert build_battery(pairs, ["refusal", "pii_leak"], [0.5, 1.0], seed=2) == cases
    assert len(build_battery(pairs)) == 2 * len(CorruptionKind)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "sarcasm"}, "unknown corruption kind"),
        ({"strength": 0.0}, "strength"),
        ({"text": "  "}, "empty"),
    ],
)
def test_bad_arguments(kwargs, message):
    args = {"text": ANSWER, "kind": "refusal", "strength": 1.0} | kwargs
    with pytest.raises(ValueError, match=message):
        CorruptionInjector().corrupt(args["text"], args["kind"], args["strength"])
