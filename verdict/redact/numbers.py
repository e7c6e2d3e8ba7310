"""Digit-shaped personal data: phone numbers, payment cards, US SSNs, IBANs and IPv4 addresses.

One pass of one regex finds "digit runs" (digits joined by single separators, at least seven
characters long) and IBAN-shaped tokens; everything else happens on those few candidates:
shape regexes on the short run, then checksums (Luhn, mod-97) and range rules. Every
quantifier that could backtrack is possessive, so the scan is linear in the input length.
"""

from __future__ import annotations

import re

from verdict.redact.checks import card_ok, iban_length, iban_ok, ipv4_ok, ssn_ok
from verdict.redact.findings import PRIORITY, Finding

# The first digit is the search anchor so `re` can skip ahead with its first-character set;
# the IBAN branch checks the two country letters with a lookbehind after that digit.
_CANDIDATE = re.compile(
    r"""[0-9](?:
      (?<=[A-Z]{2}[0-9])(?P<iban>[0-9](?:\ ?[A-Z0-9]{4}){2,7}+(?:\ ?[A-Z0-9]{1,4})?+)
    | (?=[0-9\ ().\-/]{6})[0-9]*+(?:(?:[\ .\-/]|\)\ ?|\ ?\()?+[0-9]++)*+
    )""",
    re.X,
)
_RUN = re.compile(r"[0-9]++(?:(?:[ .\-/]|\) ?| ?\()?+[0-9]++)*+")

_SSN = re.compile(r"(?<![0-9])([0-9]{3})([ -])([0-9]{2})\2([0-9]{4})(?![0-9])")
_SSN_BARE = re.compile(r"(?<![0-9])([0-9]{3})([0-9]{2})([0-9]{4})(?![0-9])")
_NANP = re.compile(
    r"(?<![0-9])(?:1[ .\-]?)?(?:\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[ .\-])[2-9][0-9]{2}[ .\-][0-9]{4}(?![0-9])"
)
_NANP_BARE = re.compile(r"(?<![0-9])1?[2-9][0-9]{2}[2-9][0-9]{6}(?![0-9])")
_INTL = re.compile(r"\+[1-9](?:[ .\-]?\(?[0-9]\)?){6,16}")
_CARD = re.compile(r"(?<![0-9])[0-9](?:[ \-]?[0-9]){12,18}(?![0-9])")
_IPV4 = re.compile(r"(?<![0-9.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?![0-9.])")

# Context words that make an unformatted digit string a phone number / SSN, or a dotted quad
# of single digits an address rather than a version.
_PHONE_CONTEXT = re.compile(r"phone|tel\b|call|mobile|cell|fax|sms|whatsapp|contact")
_SSN_CONTEXT = re.compile(r"ssn|social security")
_IP_CONTEXT = re.compile(r"\b(?:ip|ipv4|address|addr|host|server|dns|gateway|client|peer)\b")
_VERSION_CONTEXT = re.compile(r"version|release|build|\bver\b|\bv\s*$")
_CONTEXT_WINDOW = 32

_WORDISH = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def scan_numbers(s: str, out: list[Finding]) -> None:
    """Append phone, card, SSN, IBAN and IPv4 findings of `s` to `out`."""
    pos = 0
    search = _CANDIDATE.search
    while (m := search(s, pos)) is not None:
        end = m.end()
        if m.group("iban") is not None:
            if _iban(s, m.start() - 2, end, out):
                pos = end
                continue
            run = _RUN.match(s, m.start())
            end = run.end()
            if end - m.start() < 7:
                pos = end
                continue
        _classify_run(s, m.start(), end, out)
        pos = end


def _iban(s: str, start: int, end: int, out: list[Finding]) -> bool:
    # `start` is the country code's first letter.
    if start > 0 and s[start - 1] in _WORDISH:
        return False
    compact = s[start:end].replace(" ", "")
    expected = iban_length(compact)
    if expected is not None and len(compact) > expected:
        # Cut text after the IBAN that the 4-character grouping swallowed ("... 00 FOR ...").
        kept = 0
        stop = start
        while kept < expected:
            if s[stop] != " ":
                kept += 1
            stop += 1
        compact, end = compact[:expected], stop
    if not iban_ok(compact):
        return False
    out.append(Finding(start, end, "IBAN", PRIORITY["IBAN"]))
    return True


def _classify_run(s: str, start: int, end: int, out: list[Finding]) -> None:
    if end < len(s) and s[end] in _WORDISH:
        return  # part of an identifier or hash: "5163316f89", "4155550134abc"
    lead = start
    if lead and s[lead - 1] == "(":
        lead -= 1
    if lead and s[lead - 1] == "+":
        lead -= 1
    if lead and s[lead - 1] in _WORDISH:
        return  # "v1.2.3.4", "ORD4111111111111111", hex digests
    text = s[lead:end]
    before = s[max(0, lead - _CONTEXT_WINDOW) : lead].lower()
    found = len(out)

    if text[0] == "+":
        m = _INTL.match(text)
        if m is not None and 8 <= sum(ch.isdigit() for ch in m.group()) <= 15:
            out.append(Finding(lead, lead + m.end(), "PHONE", PRIORITY["PHONE"]))
            return
    for m in _CARD.finditer(text):
        number = m.group()
        groups = re.split(r"[ \-]", number)
        if len(set(number) & {" ", "-"}) <= 1 and card_ok("".join(groups), groups):
            out.append(Finding(lead + m.start(), lead + m.end(), "CARD", PRIORITY["CARD"]))
    for m in _SSN.finditer(text):
        if ssn_ok(m.group(1), m.group(3), m.group(4)):
            out.append(Finding(lead + m.start(), lead + m.end(), "SSN", PRIORITY["SSN"]))
    for m in _NANP.finditer(text):
        out.append(Finding(lead + m.start(), lead + m.end(), "PHONE", PRIORITY["PHONE"]))
    if len(out) == found and text.isdigit():
        if _NANP_BARE.fullmatch(text) and _PHONE_CONTEXT.search(before):
            out.append(Finding(lead, end, "PHONE", PRIORITY["PHONE"]))
        elif (m := _SSN_BARE.fullmatch(text)) and _SSN_CONTEXT.search(before):
            if ssn_ok(m.group(1), m.group(2), m.group(3)):
                out.append(Finding(lead, end, "SSN", PRIORITY["SSN"]))
    if "." in text:
        for m in _IPV4.finditer(text):
            if _is_address(m.group(), before if m.start() == 0 else ""):
                out.append(Finding(lead + m.start(), lead + m.end(), "IP", PRIORITY["IP"]))


def _is_address(quad: str, before: str) -> bool:
    if not ipv4_ok(quad) or _VERSION_CONTEXT.search(before):
        return False
    # "1.2.3.4" is far more often a version than an address, unless the text says otherwise.
    single_digits = len(quad) == 7
    return not single_digits or _IP_CONTEXT.search(before) is not None
