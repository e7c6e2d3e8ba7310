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
# the IBAN branch checks the two country letters with a lookbehind after that digit. A run
# must start at a token boundary (not inside an id, a hex digest or a UUID's last group), must
# not be an ISO date, and must hold a dotted quad or at least seven digits; all of that is
# checked within 20 characters, so rejected positions cost O(1).
_CANDIDATE = re.compile(
    r"""[0-9](?:
      (?<=[A-Z]{2}[0-9])(?P<iban>[0-9](?:\ ?[A-Z0-9]{4}){2,7}+(?:\ ?[A-Z0-9]{1,4})?+)
    | (?<![A-Za-z0-9_][0-9])(?<![A-Za-z0-9_]-[0-9])
      (?![0-9]{3}-[0-9]{2}-[0-9]{2}(?![0-9]))
      (?=[0-9]{0,2}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]|(?:[\ ().\-/]{0,2}[0-9]){6})
      [0-9]*+(?:(?:\)\ ?|\ ?\(|[\ .\-/])?+[0-9]++)*+
    )""",
    re.X,
)
_SEPARATORS = str.maketrans("", "", " ().-/+")
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")

# One shape for the whole run (tried first, one regex call); runs that hold several numbers
# or extra digits fall back to the per-shape searches below.
_WHOLE = re.compile(
    r"""(?P<nanp>(?:\+?1[ .\-]?)?(?:\([2-9][0-9]{2}\)\ ?|[2-9][0-9]{2}[ .\-])[2-9][0-9]{2}[ .\-][0-9]{4})
    | (?P<ssn>[0-9]{3}(?P<sep>[ \-])[0-9]{2}(?P=sep)[0-9]{4})
    | (?P<card>[2-6][0-9]{3}(?:[0-9]{9,15}|(?:\ [0-9]{1,6}){2,4}|(?:-[0-9]{1,6}){2,4}))
    | (?P<intl>\+[1-9](?:[ .\-]?\(?[0-9]\)?){6,16})
    | (?P<ipv4>[0-9]{1,3}(?:\.[0-9]{1,3}){3})""",
    re.X,
)
_SSN = re.compile(r"(?<![0-9])([0-9]{3})([ -])([0-9]{2})\2([0-9]{4})(?![0-9])")
_SSN_BARE = re.compile(r"(?<![0-9])([0-9]{3})([0-9]{2})([0-9]{4})(?![0-9])")
_NANP = re.compile(
    r"(?<![0-9])(?:1[ .\-]?)?(?:\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[ .\-])[2-9][0-9]{2}[ .\-][0-9]{4}(?![0-9])"
)
_NANP_BARE = re.compile(r"(?<![0-9])1?[2-9][0-9]{2}[2-9][0-9]{6}(?![0-9])")
_INTL = re.compile(r"\+[1-9](?:[ .\-]?\(?[0-9]\)?){6,16}")
_CARD = re.compile(r"(?<![0-9])[0-9](?:[ \-]?[0-9]){12,18}(?![0-9])")
_IPV4 = re.compile(r"(?<![0-9.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?![0-9.])")

# Context words that make an unformatted digit string a phone number or an SSN, or (right
# before it) a dotted quad a version rather than an address.
_PHONE_CONTEXT = re.compile(r"phone|tel\b|call|mobile|cell|fax|sms|whatsapp|contact")
_SSN_CONTEXT = re.compile(r"ssn|social security")
_VERSION_WORDS = frozenset({"version", "release", "build", "ver", "v", "rev", "revision"})
_CARD_SEPARATOR = re.compile(r"[ \-]")
_CONTEXT_WINDOW = 32

_WORDISH = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def scan_numbers(s: str, out: list[Finding]) -> None:
    """Append phone, card, SSN, IBAN and IPv4 findings of `s` to `out`."""
    # A candidate starts at a digit, so searching from the next digit finds the same one; in
    # ASCII text (byte offsets are character offsets) that digit is found in a translated copy
    # at memchr speed, where `re` steps through the letters in between one by one.
    next_digit = s.encode().translate(_DIGITS_TO_ZERO).find if s.isascii() else None
    pos = 0
    search = _CANDIDATE.search
    while True:
        if next_digit is not None and (pos := next_digit(b"0", pos)) < 0:
            return
        m = search(s, pos)
        if m is None:
            return
        end = m.end()
        if m.group("iban") is not None:
            # IBAN-shaped but failing mod-97: an account-like code, not a card or phone either.
            _iban(s, m.start() - 2, end, out)
            pos = end
            continue
        _classify_run(s, m.start(), end, out)
        pos = end


def _iban(s: str, start: int, end: int, out: list[Finding]) -> None:
    # `start` is the country code's first letter.
    if start > 0 and s[start - 1] in _WORDISH:
        return
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
    if iban_ok(compact):
        out.append(Finding(start, end, "IBAN", PRIORITY["IBAN"]))


def _classify_run(s: str, start: int, end: int, out: list[Finding]) -> None:
    if end < len(s) and s[end] in _WORDISH:
        return  # part of an identifier or hash: "4155550134abc"
    lead = start
    if lead and s[lead - 1] == "(":
        lead -= 1
    if lead and s[lead - 1] == "+":
        lead -= 1
    text = s[lead:end]
    if len(text) < 9 and "+" not in text and text.count(".") < 3:
        return  # too few digits for any shape but an international phone or a dotted quad
    whole = _WHOLE.fullmatch(text)
    if whole is not None:  # the common case: the run is exactly one formatted number
        finding = _whole_finding(whole, s, lead)
        if finding is not None:
            out.append(finding)
        return
    digits = len(text.translate(_SEPARATORS))
    found = len(out)

    if text[0] == "+" and digits >= 8:
        m = _INTL.match(text)
        if m is not None and 8 <= len(m.group().translate(_SEPARATORS)) <= 15:
            out.append(Finding(lead, lead + m.end(), "PHONE", PRIORITY["PHONE"]))
            return
    if digits >= 13:
        for m in _CARD.finditer(text):
            number = m.group()
            if number[0] in "23456" and not (" " in number and "-" in number):
                groups = _CARD_SEPARATOR.split(number)
                if card_ok("".join(groups), groups):
                    out.append(Finding(lead + m.start(), lead + m.end(), "CARD", PRIORITY["CARD"]))
    if digits >= 9:
        for m in _SSN.finditer(text):
            if ssn_ok(m.group(1), m.group(3), m.group(4)):
                out.append(Finding(lead + m.start(), lead + m.end(), "SSN", PRIORITY["SSN"]))
    if digits >= 10:
        for m in _NANP.finditer(text):
            out.append(Finding(lead + m.start(), lead + m.end(), "PHONE", PRIORITY["PHONE"]))
    if len(out) == found and text.isdigit() and 9 <= digits <= 11:
        _bare_number(s, lead, end, out)
    if text.count(".") >= 3:
        for m in _IPV4.finditer(text):
            before = s[max(0, lead - _CONTEXT_WINDOW) : lead] if m.start() == 0 else ""
            if _is_address(m.group(), before):
                out.append(Finding(lead + m.start(), lead + m.end(), "IP", PRIORITY["IP"]))


def _whole_finding(m: re.Match[str], s: str, lead: int) -> Finding | None:
    kind, text = m.lastgroup, m.group()
    label: str | None
    if kind == "nanp":
        label = "PHONE"
    elif kind == "intl":
        label = "PHONE" if 8 <= len(text.translate(_SEPARATORS)) <= 15 else None
    elif kind == "ssn":
        label = "SSN" if ssn_ok(text[:3], text[4:6], text[7:]) else None
    elif kind == "card":
        groups = _CARD_SEPARATOR.split(text)
        label = "CARD" if card_ok("".join(groups), groups) else None
    else:
        label = "IP" if _is_address(text, s[max(0, lead - _CONTEXT_WINDOW) : lead]) else None
    return None if label is None else Finding(lead, lead + len(text), label, PRIORITY[label])


def _bare_number(s: str, start: int, end: int, out: list[Finding]) -> None:
    """Unformatted 9-11 digit strings are ids far more often than phones or SSNs: need context."""
    text = s[start:end]
    before = s[max(0, start - _CONTEXT_WINDOW) : start].lower()
    if _NANP_BARE.fullmatch(text) and _PHONE_CONTEXT.search(before):
        out.append(Finding(start, end, "PHONE", PRIORITY["PHONE"]))
    elif (
        (m := _SSN_BARE.fullmatch(text))
        and _SSN_CONTEXT.search(before)
        and ssn_ok(m.group(1), m.group(2), m.group(3))
    ):
        out.append(Finding(start, end, "SSN", PRIORITY["SSN"]))


def _is_address(quad: str, before: str) -> bool:
    # "1.2.3.4" (single-digit octets) is far more often a version than an address.
    if len(quad) == 7 or not ipv4_ok(quad):
        return False
    words = before.split()
    return not words or words[-1].strip(":=#(").lower() not in _VERSION_WORDS
