"""Which field names hold credentials.

A name is normalized (lower case, `-`, `_`, `.` and spaces removed, so `API-Key`, `api_key` and
`apiKey` are one name) and matched against three lists. Used for keys of structured data and for
`key=value` / `key: value` assignments in free text.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Anywhere in the name: `db_password`, `password_hash`, `x-api-key`, `aws_secret_access_key`.
_CONTAINS = (
    "password", "passwd", "passphrase", "apikey", "privatekey", "accesskey", "secretkey",
    "authorization", "credential", "clientsecret", "signingkey", "encryptionkey", "masterkey",
)  # fmt: skip
# At the end of the name: `client_secret`, `access_token`, `set-cookie`, `basic_auth`.
_SUFFIXES = ("secret", "token", "cookie", "sessionid", "sessid", "auth", "pwd")
# Whole name only ("pass" or "session" inside other words is not a credential).
_EXACT = frozenset({"pass", "session", "jwt", "otp", "pin", "cvv", "cvc"})
# Tokenizer vocabulary fields of LLM configs end in "token" but hold no secret.
_NOT_CREDENTIAL = frozenset(
    {"bostoken", "eostoken", "padtoken", "unktoken", "septoken", "clstoken", "masktoken"}
)
_SEPARATORS = str.maketrans("", "", "-_. ")

# Every credential name, normalized, contains one of these (tests/redact checks it); none of
# them overlaps itself, so `str.count` counts every occurrence.
_HINTS = ("pass", "key", "auth", "cred", "secret", "token", "cookie", "sessi", "pwd", "jwt", "otp",
          "pin", "cv")  # fmt: skip
# Hints that are only a whole suffix or exact name: no hint when the name goes on after them.
_NAME_END_HINTS = frozenset({"token", "cookie", "pwd", "jwt", "otp", "pin"})
_NAME_GOES_ON = re.compile(r"[-_.]*+[a-z0-9]")


def _has_hint(s: str) -> bool:
    """Any of `_HINTS` in `s`. Spelled out: chained `in` tests cost ~60% of a loop over the
    tuple, and most text has none (tests/redact checks that it agrees with `_HINTS`)."""
    return (
        "pass" in s or "key" in s or "auth" in s or "cred" in s or "secret" in s or "token" in s
        or "cookie" in s or "sessi" in s or "pwd" in s or "jwt" in s or "otp" in s or "pin" in s
        or "cv" in s
    )  # fmt: skip


@lru_cache(maxsize=4096)
def is_credential_name(name: str) -> bool:
    """True if a field called `name` holds a credential (case- and separator-insensitive)."""
    norm = name.lower().translate(_SEPARATORS)
    if not norm or norm in _NOT_CREDENTIAL:
        return False
    return norm in _EXACT or norm.endswith(_SUFFIXES) or any(word in norm for word in _CONTAINS)


def credential_name_hints(s: str) -> list[int] | None:
    """Where credential names can end: the end offsets in `s` of the credential words in it.

    A credential name contains one of `_HINTS` once lower-cased and stripped of `-`, `_` and
    `.`, so text without them holds no credential name (the common case, found with a few
    substring searches). None when the offsets cannot be given exactly: a hint spelled with
    separators inside it ("p-a-s-s") or text whose length changes when lower-cased; callers
    then examine the whole text.
    """
    low = s.lower()
    stripped = low.replace("-", "").replace("_", "").replace(".", "")
    if not _has_hint(stripped):
        return []
    present = [hint for hint in _HINTS if hint in stripped]
    if len(low) != len(s):
        return None
    ends = []
    for hint in present:
        if low.count(hint) != stripped.count(hint):
            return None  # an occurrence only exists once separators are removed
        i = low.find(hint)
        while i >= 0:
            end = i + len(hint)
            if hint not in _NAME_END_HINTS or not _NAME_GOES_ON.match(low, end):
                ends.append(end)
            i = low.find(hint, end)
    ends.sort()
    return ends
