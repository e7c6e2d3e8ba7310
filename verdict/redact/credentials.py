"""Which field names hold credentials.

A name is normalized (lower case, `-`, `_`, `.` and spaces removed, so `API-Key`, `api_key` and
`apiKey` are one name) and matched against three lists. Used for keys of structured data and for
`key=value` / `key: value` assignments in free text.
"""

from __future__ import annotations

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


@lru_cache(maxsize=4096)
def is_credential_name(name: str) -> bool:
    """True if a field called `name` holds a credential (case- and separator-insensitive)."""
    norm = name.lower().translate(_SEPARATORS)
    if not norm or norm in _NOT_CREDENTIAL:
        return False
    return norm in _EXACT or norm.endswith(_SUFFIXES) or any(word in norm for word in _CONTAINS)
