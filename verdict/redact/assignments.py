"""Credential assignments in free text: `password=...`, `api_key: ...`, `"token": "..."`,
`Authorization: ...` headers, `--client-secret=...`, JSON-in-JSON `\\"secret\\": \\"...\\"`.

Anchored on the credential words (`credential_name_hints`: `pass`, `token`, `key`, ...): only
the `:` and `=` within a name's reach after one are examined. There the name before the
separator is read from a short reversed window and checked with `is_credential_name`; only then
is the value parsed (quoted, escaped-quoted, a bare token, or the multi-word value of an
`Authorization` or `Cookie` header). Text without a credential word (most text, and JSON whose
keys are `role`, `content`, ...) costs a few substring searches.
"""

from __future__ import annotations

import re

from verdict.redact.credentials import credential_name_hints, is_credential_name
from verdict.redact.findings import PRIORITY, Finding

_NAME_WINDOW = 72
_PROBE_GAP = 72  # reading one name costs about as much as finding hints in ~70 characters
_QUOTE_SPACING = 25  # a quote per 25 characters or less: JSON with a key per ~100 (4 quotes)
# Reversed text before the separator: spaces, an optional closing quote (or \" of escaped JSON),
# then the name.
_NAME_REVERSED = re.compile(r"""[ \t]*+(?:"\\|'\\|["'])?([A-Za-z0-9_.\-]{1,64})""")
_VALUE = re.compile(
    r"""[ \t]*+(?:
        "((?:[^"\\\r\n]|\\.)*+)"
      | '((?:[^'\\\r\n]|\\.)*+)'
      | \\"((?:[^"\\\r\n]|\\[^"\r\n])*+)\\"
      | ([^\s"'<>,;&)}\]\\]++)
      | ["']([^\s"'<>\\]++)
    )""",
    re.X,
)
# (The last branch is a quote that never closes: a value cut by truncation still gets redacted.)
# Header values that contain spaces: "Bearer abc" (scheme + credential), "a=1; b=2" (cookie pairs).
_AUTHORIZATION_VALUE = re.compile(r"""[ \t]*+((?:[A-Za-z]++[ \t]++)?[^\s"'<>,;\\]++)""")
_COOKIE_VALUE = re.compile(r"""[ \t]*+([^\s;"'<>\\]++(?:;[ \t]?[^\s;"'<>\\]++)*+)""")
_HEADER_VALUES = {
    "authorization": _AUTHORIZATION_VALUE,
    "proxyauthorization": _AUTHORIZATION_VALUE,
    "cookie": _COOKIE_VALUE,
    "setcookie": _COOKIE_VALUE,
}
_DIGIT_FOLLOWERS = {":": frozenset("0123456789abcdefABCDEF"), "=": frozenset("0123456789")}
_NOT_A_VALUE = frozenset({"null", "none", "nil", "undefined", "true", "false"})


def scan_assignments(s: str, out: list[Finding]) -> None:
    """Append the values assigned to credential-named keys in `s`."""
    last = max(s.rfind(":"), s.rfind("="))
    if last < 0:
        return  # no separator, no assignment
    # A separator can only follow a credential name within _NAME_WINDOW of a hint's end, so
    # only those stretches are searched (merged, so each separator is examined once). Finding
    # the hints costs ~17 ns per character, examining a JSON key's `:` (what reaches the name
    # check; `12:34` and `::` are rejected at once) ~1.8 µs: hints pay off for key-dense text
    # such as short GenAI message JSON, told by its quotes (one-character searches are cheap).
    dense = '"' in s and s.count('"') * _QUOTE_SPACING > len(s)
    hints = credential_name_hints(s[: _hints_reach(s, last)]) if dense else None
    if hints is None:
        _examine(s, 0, len(s), out, [0, 0])
        return
    resume = [0, 0]
    low = high = -1
    for end in hints:
        start = end - 1  # a name ends at or after the hint's last letter
        if start > high:
            if high > 0:
                _examine(s, low, high, out, resume)
            low = start
        high = start + _NAME_WINDOW + 1
    if high > 0:
        _examine(s, low, high, out, resume)


def _hints_reach(s: str, last: int) -> int:
    """Where the hints worth finding end, given the last separator `last`.

    A hint opens a stretch after it, so one after the last separator that can be an assignment
    opens an empty one: that is most of a user message's JSON (everything after the first `:`
    of its content). When the last separator comes after a long stretch without one (an
    assistant message's `"finish_reason":` after its content) and no credential name precedes
    it, the separator before it bounds the hints instead.
    """
    before = max(s.rfind(":", 0, last), s.rfind("=", 0, last))
    if last - before > _PROBE_GAP and not is_credential_name(_name_before(s, last) or ""):
        return max(before, 0)
    return last


def _examine(s: str, low: int, high: int, out: list[Finding], resume: list[int]) -> None:
    """Examine the `:` and `=` in s[low:high] not inside a value found before (`resume`)."""
    # Two literal searches beat one `[:=]` character-class scan several times over.
    for k, separator in enumerate(":="):
        find = s.find
        i = find(separator, max(low, resume[k]), high)
        while i >= 0:
            # Resume after a found value: separators inside it ("password=a:b=c") are not
            # assignments, and skipping them keeps "password=password=..." linear.
            resume[k] = max(i + 1, _assignment_at(s, i, out))
            i = find(separator, resume[k], high)


def _assignment_at(s: str, i: int, out: list[Finding]) -> int:
    """Append the value assigned at separator s[i], if any; return where it ends (else 0)."""
    following = s[i + 1 : i + 2]
    if following in ("=", ":", "/"):  # `==`, `::`, `://`
        return 0
    previous = s[i - 1 : i]
    if i == 0 or (previous.isdigit() and following in _DIGIT_FOLLOWERS[s[i]]):
        return 0  # times, ratios, IPv6 groups: 12:34, 1=1, 2001:db8
    key = _name_before(s, i)
    if key is None or not is_credential_name(key):
        return 0
    value = _VALUE.match(s, i + 1)
    if value is None:
        return 0
    group = value.lastindex or 0
    header = (
        _HEADER_VALUES.get(key.lower().replace("-", "").replace("_", "")) if group == 4 else None
    )
    if header is not None:
        value, group = header.match(s, i + 1), 1
        if value is None:
            return 0
    start, end = value.span(group)
    if end == start or s[start:end].lower() in _NOT_A_VALUE:
        return 0
    out.append(Finding(start, end, "SECRET", PRIORITY["SECRET"]))
    return end


def _name_before(s: str, i: int) -> str | None:
    """The field name right before the separator s[i] (0 < i), read from a reversed window."""
    stop = i - _NAME_WINDOW - 1
    name = _NAME_REVERSED.match(s[i - 1 : stop if stop >= 0 else None : -1])
    return None if name is None else name.group(1)[::-1]
