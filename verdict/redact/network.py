"""E-mail addresses, URLs with embedded credentials and IPv6 addresses.

Each is anchored on a literal (`@`, `://`, `:hex:`) found with `str.find` speed; the part left
of the anchor is matched on a short reversed window, so no pattern ever starts a match at
every character of the text.
"""

from __future__ import annotations

import re

from verdict.redact.checks import ipv6_ok
from verdict.redact.findings import PRIORITY, Finding

_LOCAL_MAX = 64
_LOCAL_REVERSED = re.compile(r"[A-Za-z0-9._%+'\-]{1,64}")
_DOMAIN = re.compile(r"[A-Za-z0-9.\-]{1,253}")
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?")
_ALNUM = re.compile(r"[A-Za-z0-9]")

# `scheme://user:password@host`: only the userinfo is replaced, scheme and host stay readable.
_URL_USERINFO = re.compile(r"://([^\s/?#@<>\"'\\]++)@")
_URL_WINDOW = 256
_USERINFO_GAP = re.compile(r"[^\s/@<>\"'\\]*")

_IPV6_HINT = re.compile(r":[0-9A-Fa-f]{0,4}:")
_IPV6_LEFT_REVERSED = re.compile(r"[0-9A-Fa-f:]{0,39}")
_IPV6_RIGHT = re.compile(r"[0-9A-Fa-f:.]{0,45}")
_ADDRESS_NEIGHBOUR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:.")


def scan_emails(s: str, out: list[Finding]) -> None:
    """Append e-mail findings (RFC-shaped local part, dotted domain with an alphabetic TLD)."""
    find = s.find
    at = find("@")
    while at >= 0:
        resume = at + 1
        local = _LOCAL_REVERSED.match(s[max(0, at - _LOCAL_MAX) : at][::-1])
        domain = _DOMAIN.match(s, at + 1) if local is not None else None
        if local is not None and domain is not None:
            start = at - local.end()
            while s[start] == ".":
                start += 1
            end = _domain_end(s, at + 1, domain.end())
            if (
                end
                and start < at
                and _ALNUM.search(s, start, at)
                and not _in_url(s, at)
                and not _scp_path(s, end)
            ):
                out.append(Finding(start, end, "EMAIL", PRIORITY["EMAIL"]))
                resume = end
        at = find("@", resume)


def _domain_end(s: str, start: int, end: int) -> int:
    """End of a valid domain in s[start:end] (trailing sentence dots dropped), or 0."""
    while end > start and s[end - 1] in ".-":
        end -= 1
    labels = s[start:end].split(".")
    if len(labels) < 2 or not all(_LABEL.fullmatch(label) for label in labels):
        return 0
    tld = labels[-1]
    return end if len(tld) >= 2 and tld.isalpha() else 0


def _scp_path(s: str, end: int) -> bool:
    """`git@github.com:org/repo.git` is an SSH remote (user@host:path), not an e-mail."""
    return s[end : end + 1] == ":" and s[end + 1 : end + 2] not in ("", " ", "\t", "\n", "\r")


def _in_url(s: str, at: int) -> bool:
    """True for the `@` ending the userinfo of `scheme://user:pass@host` (not an e-mail)."""
    scheme_end = s.rfind("://", max(0, at - _URL_WINDOW), at)
    return scheme_end >= 0 and _USERINFO_GAP.fullmatch(s, scheme_end + 3, at) is not None


def scan_url_credentials(s: str, out: list[Finding]) -> None:
    """Append the `user:password` part of URLs such as `postgres://app:s3cret@db:5432/x`."""
    if "://" not in s:  # a substring search costs a third of an empty `finditer`
        return
    for m in _URL_USERINFO.finditer(s):
        user, sep, password = m.group(1).partition(":")
        if sep and password:
            out.append(
                Finding(m.start(1), m.end(1), "URL_CREDENTIALS", PRIORITY["URL_CREDENTIALS"])
            )


def scan_ipv6(s: str, out: list[Finding]) -> None:
    """Append IPv6 addresses (validated by `ipaddress`), found from their `:hex:` groups."""
    if "::" not in s and s.count(":") < 7:  # an address has "::" or seven colons
        return
    pos = 0
    while (m := _IPV6_HINT.search(s, pos)) is not None:
        hint = m.start()
        left = hint - _IPV6_LEFT_REVERSED.match(s[max(0, hint - 39) : hint][::-1]).end()  # type: ignore[union-attr]  # matches ""
        right = _IPV6_RIGHT.match(s, hint).end()  # type: ignore[union-attr]  # matches ""
        while right > hint and s[right - 1] in ".:" and s[right - 2 : right] != "::":
            right -= 1
        pos = max(right, m.end() - 1)
        candidate = s[left:right]
        if "::" not in candidate and candidate.count(":") < 6:
            continue
        if (left and s[left - 1] in _ADDRESS_NEIGHBOUR) or (
            right < len(s) and s[right] in _ADDRESS_NEIGHBOUR and s[right] != "."
        ):
            continue
        if ipv6_ok(candidate):
            out.append(Finding(left, right, "IP", PRIORITY["IP"]))
