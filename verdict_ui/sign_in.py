"""Signed-in browsers and the login attempt limit, both in memory and bounded.

The login form's cookie holds a random sign-in id, never the token: the token stays in this process,
looked up again on every request (a token removed from the token file stops working at once), and the
id dies with its Max-Age or with the server. Wrong tokens cost a back-off per client address that
doubles with each failure past a few, so guessing tokens from one address is slow; one right token
clears the address's record.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

SIGN_IN_SECONDS = 12 * 3600  # the cookie's Max-Age and the id's life here
MAX_SIGN_INS = 10_000  # oldest dropped first: memory stays bounded whatever a client does
FREE_FAILURES = 5  # wrong tokens an address may send before the back-off starts
FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 300.0
MAX_ADDRESSES = 10_000


@dataclass
class SignIns:
    _tokens: OrderedDict[str, tuple[str, float]] = field(default_factory=OrderedDict)  # id -> (token, expiry)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, token: str) -> str:
        sign_in = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[sign_in] = (token, time.monotonic() + SIGN_IN_SECONDS)
            while len(self._tokens) > MAX_SIGN_INS:
                self._tokens.popitem(last=False)
        return sign_in

    def token_for(self, sign_in: str | None) -> str | None:
        if not sign_in:
            return None
        with self._lock:
            entry = self._tokens.get(sign_in)
            if entry is None:
                return None
            if entry[1] <= time.monotonic():
                del self._tokens[sign_in]
                return None
            return entry[0]


@dataclass
class LoginThrottle:
    _failures: OrderedDict[str, tuple[int, float]] = field(default_factory=OrderedDict)  # addr -> (n, not before)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_seconds(self, address: str) -> float:
        """How long `address` must wait before its next attempt is even checked (0: now)."""
        with self._lock:
            entry = self._failures.get(address)
        return 0.0 if entry is None else max(0.0, entry[1] - time.monotonic())

    def failed(self, address: str) -> None:
        with self._lock:
            count = self._failures.pop(address, (0, 0.0))[0] + 1
            over = count - FREE_FAILURES
            delay = 0.0 if over < 0 else min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** min(over, 16))
            self._failures[address] = (count, time.monotonic() + delay)
            while len(self._failures) > MAX_ADDRESSES:
                self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)
