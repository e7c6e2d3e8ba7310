"""Checksums and range rules that turn digit-shaped candidates into findings.

Regexes only propose candidates; these cheap validators run on the (rare) candidates so that
ordinary numbers, ids and dates are not redacted.
"""

from __future__ import annotations

import ipaddress
import re

# IBAN length per country (ISO 13616 registry); an unknown country falls back to 15..34.
_IBAN_LENGTH = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


_DOUBLED_DIGIT_SUM = str.maketrans("0123456789", "0246813579")  # d -> digit sum of 2d


def luhn_ok(digits: str) -> bool:
    """Luhn checksum of an all-digit string (digit sums via bytes: no per-digit Python)."""
    kept, doubled = digits[-1::-2], digits[-2::-2].translate(_DOUBLED_DIGIT_SUM)
    total = sum(kept.encode()) + sum(doubled.encode()) - 48 * len(digits)
    return total % 10 == 0


def card_ok(digits: str, groups: list[str]) -> bool:
    """A payment card number: 13-19 digits, a real issuer range, card-like grouping, Luhn."""
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456":
        return False
    if len(groups) > 1:
        sizes = [len(g) for g in groups]
        four_blocks = all(n == 4 for n in sizes[:-1]) and 1 <= sizes[-1] <= 4
        if not (four_blocks or sizes in ([4, 6, 5], [4, 6, 4])):
            return False
    return luhn_ok(digits)


def iban_length(compact: str) -> int | None:
    """Expected length of an IBAN starting with this country code (None: unknown country)."""
    return _IBAN_LENGTH.get(compact[:2])


def iban_ok(compact: str) -> bool:
    """ISO 7064 mod-97 check of an IBAN without spaces."""
    if not 15 <= len(compact) <= 34:
        return False
    expected = _IBAN_LENGTH.get(compact[:2])
    if expected is not None and expected != len(compact):
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


def ssn_ok(area: str, group: str, serial: str) -> bool:
    """US SSN ranges: area 000, 666 and 900-999, group 00 and serial 0000 are never issued."""
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}")


def ipv4_ok(candidate: str) -> bool:
    """Four decimal octets 0-255 without leading zeros (which would be dates or ids)."""
    return _IPV4.fullmatch(candidate) is not None


def ipv6_ok(candidate: str) -> bool:
    """A valid IPv6 address with enough hex digits to not be code such as `a[1::2]` or `x::y`."""
    if sum(ch in "0123456789abcdefABCDEF" for ch in candidate) < 5:
        return False
    if not any(ch.isdigit() for ch in candidate):
        return False
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return True
