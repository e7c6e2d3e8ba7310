"""Credentials recognisable by their own shape: provider/cloud API keys, JWTs, PEM private keys
and HTTP `Bearer`/`Basic` values.

Every pattern starts with a literal (`sk-`, `AIza`, `eyJ`, `-----BEGIN `, ...), so `re` finds
candidates with its fast substring search instead of trying every position; boundary and
plausibility checks run in Python on the few matches.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from typing import NamedTuple

from verdict.redact.findings import PRIORITY, Finding

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_DIGITS = re.compile(r"[0-9]")


class _KeyShape(NamedTuple):
    needle: str  # literal the key must contain; `in` is far cheaper than a regex search
    pattern: re.Pattern[str]
    prefix_before: str  # characters allowed right before the match (Stripe's s/r/p of "sk_live_")
    needs_digit: bool  # guards prefixes that also start ordinary words ("risk-free-...")


def _shape(needle: str, pattern: str, prefix_before: str = "", needs_digit: bool = False):
    return _KeyShape(needle, re.compile(pattern), prefix_before, needs_digit)


# Grouped by the `-` or `_` every key of the group contains: one search for that character
# with the group's prefixes behind it replaces a substring search per key (each costs as much
# as the whole group search: `re` finds a one-character literal prefix at memchr speed).
_DASH_KEYS = (
    _shape("sk-", r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}+", needs_digit=True),
    _shape("glpat-", r"glpat-[A-Za-z0-9_\-]{20,}+"),
    _shape("xox", r"xox[abposr]-[A-Za-z0-9\-]{10,}+", needs_digit=True),
    _shape("pypi-", r"pypi-[A-Za-z0-9_\-]{50,}+"),
)
_DASH_PREFIXES = re.compile(r"-(?:(?<=sk-)|(?<=glpat-)|(?<=xox[abposr]-)|(?<=pypi-))")
_A_KEYS = (
    _shape("AKIA", r"AKIA[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _shape("ASIA", r"ASIA[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _shape("AIza", r"AIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])"),
)
_A_PREFIXES = re.compile(r"A(?:KIA|SIA|Iza)")  # one search for the three needles below
_UNDERSCORE_KEYS = (
    _shape("gh", r"gh[pousr]_[A-Za-z0-9]{36,255}+"),
    _shape("github_pat_", r"github_pat_[A-Za-z0-9_]{22,255}+"),
    _shape("k_", r"k_(?:live|test)_[A-Za-z0-9]{16,}+", prefix_before="srp"),
    _shape("hf_", r"hf_[A-Za-z0-9]{30,}+", needs_digit=True),
    _shape("npm_", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
)
_UNDERSCORE_PREFIXES = re.compile(r"_(?:(?<=gh[pousr]_)|(?<=github_)|(?<=k_)|(?<=hf_)|(?<=npm_))")
# An AWS secret access key has no prefix: 40 base64 characters shortly after an access key id.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_SECRET_WINDOW = 200

# The lookbehind right after the literal rejects an "eyJ" inside a longer token in O(1): without
# it, "eyJeyJeyJ..." would rescan the rest of the token from every occurrence (quadratic).
_JWT = re.compile(
    r"eyJ(?<![A-Za-z0-9_\-]eyJ)([A-Za-z0-9_\-]{8,}+)\.[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]*+"
)

_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_PEM_MAX = 65536  # no private key is longer; a BEGIN without END within this is truncated
# Body of a truncated block: base64 lines (also with JSON-escaped newlines).
_PEM_BODY = re.compile(r"(?:(?:\s|\\[nr])++[A-Za-z0-9+/=]{16,}+)*+")

# Matched against the lower-cased text, so the patterns keep a literal prefix for fast search.
_BEARER_PATTERN = r"bearer[ \t]++([a-z0-9._~+/\-]{8,}+=*+)"
_BASIC_PATTERN = r"basic[ \t]++([a-z0-9+/]{8,}+=*+)"
_BEARER, _BASIC = re.compile(_BEARER_PATTERN), re.compile(_BASIC_PATTERN)
# For the rare text whose length changes when lower-cased ("İ"): case-insensitive on the original.
_BEARER_ANYCASE = re.compile(_BEARER_PATTERN, re.IGNORECASE)
_BASIC_ANYCASE = re.compile(_BASIC_PATTERN, re.IGNORECASE)
# An auth scheme in any case (RFC 9110: "BeArEr" is Bearer), for the rare text `lower()` lengthens.
AUTH_WORD_ANYCASE = re.compile(r"b(?:earer|asic)[ \t]", re.IGNORECASE)


def scan_keys(s: str, out: list[Finding]) -> None:
    """Append API-key, JWT, PEM and auth-header findings of `s` to `out`."""
    if "-" in s:
        if _DASH_PREFIXES.search(s) is not None:
            _scan_shapes(s, _DASH_KEYS, out)
        if "-----BEGIN " in s:
            _scan_pem(s, out)
    # The memchr tests: AKIA, ASIA and AIza need a K, an S or a z after their A.
    if "A" in s and ("K" in s or "S" in s or "z" in s) and _A_PREFIXES.search(s) is not None:
        _scan_shapes(s, _A_KEYS, out)
    if "_" in s and _UNDERSCORE_PREFIXES.search(s) is not None:
        _scan_shapes(s, _UNDERSCORE_KEYS, out)
    if "J" in s and "eyJ" in s:
        _scan_jwt(s, out)
    _scan_auth(s, out)


def _scan_shapes(s: str, shapes: tuple[_KeyShape, ...], out: list[Finding]) -> None:
    for needle, pattern, prefix_before, needs_digit in shapes:
        if needle not in s:
            continue
        for m in pattern.finditer(s):
            start = m.start()
            if prefix_before:
                if start == 0 or s[start - 1] not in prefix_before:
                    continue
                start -= 1
            if start and s[start - 1] in _TOKEN_CHARS:
                continue
            if needs_digit and _DIGITS.search(m.group()) is None:
                continue
            out.append(Finding(start, m.end(), "API_KEY", PRIORITY["API_KEY"]))
            if needle in ("AKIA", "ASIA"):
                _aws_secret(s, m.end(), out)


def _aws_secret(s: str, after: int, out: list[Finding]) -> None:
    m = _AWS_SECRET.search(s, after, after + _AWS_SECRET_WINDOW)
    if m is not None and _DIGITS.search(m.group()) and not m.group().isdigit():
        out.append(Finding(m.start(), m.end(), "API_KEY", PRIORITY["API_KEY"]))


def _scan_jwt(s: str, out: list[Finding]) -> None:
    for m in _JWT.finditer(s):
        start = m.start()
        header = "eyJ" + m.group(1)
        try:
            decoded = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
        except (binascii.Error, ValueError):
            continue
        if b'"alg"' in decoded or b'"typ"' in decoded:
            out.append(Finding(start, m.end(), "JWT", PRIORITY["JWT"]))


def _scan_pem(s: str, out: list[Finding]) -> None:
    ends = [m.end() for m in _PEM_END.finditer(s)]  # once, then bisect: linear for many BEGINs
    covered = 0
    for m in _PEM_BEGIN.finditer(s):
        if m.start() < covered:
            continue
        i = bisect.bisect_left(ends, m.end())
        if i < len(ends) and ends[i] - m.start() <= _PEM_MAX:
            stop = ends[i]
        else:
            stop = _PEM_BODY.match(s, m.end()).end()  # type: ignore[union-attr]  # matches "": never None
        out.append(Finding(m.start(), stop, "PRIVATE_KEY", PRIORITY["PRIVATE_KEY"]))
        covered = stop


def has_auth_word(s: str) -> bool:
    """Whether `s` can hold a `Bearer` or `Basic` credential in any case (exact: `_auth` finds
    nothing in text for which this is False; tests/redact/test_fast_path.py)."""
    # A "b" is in nearly every English text, so it only rules out the rest; then one lower-cased
    # copy and two substring searches (about 1 ns a character), where the case-insensitive search
    # this replaces stepped through the text at regex speed. Only text whose length changes when
    # lower-cased ("İ") is searched case-insensitively, as `_auth` then does itself.
    if "b" not in s and "B" not in s:
        return False
    low = s.lower()
    if len(low) != len(s):
        return AUTH_WORD_ANYCASE.search(s) is not None
    return "bearer" in low or "basic" in low


def _scan_auth(s: str, out: list[Finding]) -> None:
    if has_auth_word(s):
        _auth(s, out)


def _auth(s: str, out: list[Finding]) -> None:
    low = s.lower()
    if len(low) == len(s):
        text, bearer, basic = low, _BEARER, _BASIC
    else:
        text, bearer, basic = s, _BEARER_ANYCASE, _BASIC_ANYCASE
    for m in bearer.finditer(text):
        value = m.group(1)
        if _is_word_start(text, m.start()) and (
            len(value) >= 20 or _DIGITS.search(value) or any(c in "._~+/-=" for c in value)
        ):
            out.append(Finding(m.start(1), m.end(1), "AUTH", PRIORITY["AUTH"]))
    for m in basic.finditer(text):
        if _is_word_start(text, m.start()) and _is_basic_credential(s[m.start(1) : m.end(1)]):
            out.append(Finding(m.start(1), m.end(1), "AUTH", PRIORITY["AUTH"]))


def _is_word_start(text: str, i: int) -> bool:
    return i == 0 or not text[i - 1].isalnum()


def _is_basic_credential(value: str) -> bool:
    """`Basic` credentials are base64 of `user:password` ("basic information" is not)."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded
