"""The Redactor: runs the detectors over text or structured values and replaces what they find.

Findings that overlap are merged into one replacement (named after the strongest label), so a
credential is never half-redacted. Placeholders already in the text (`<EMAIL>`,
`<EMAIL:3f9a0c1d2e4b>`) are protected spans, which makes redaction idempotent in the redact and
hash modes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import reprlib
from collections.abc import Callable, Mapping
from typing import Any

from verdict.redact.assignments import scan_assignments
from verdict.redact.credentials import is_credential_name
from verdict.redact.findings import (
    MARKER_LABELS,
    MAX_DEPTH_MARKER,
    PRIORITY,
    TRUNCATED_MARKER,
    USER_PRIORITY,
    Finding,
)
from verdict.redact.keys import has_auth_word, scan_keys
from verdict.redact.network import scan_emails, scan_ipv6, scan_url_credentials
from verdict.redact.numbers import scan_numbers

MODES = ("redact", "hash", "drop")
# Every built-in detector. `Redactor._scan` skips those whose anchor is absent from the text;
# tests/redact/test_fast_path.py checks that this finds exactly what running them all finds.
SCANS = (scan_numbers, scan_emails, scan_url_credentials, scan_ipv6, scan_assignments, scan_keys)
# Detector families, as bits of `families(s)` (the compiled gate verdict/redact/_gate.c uses the
# same values): a family whose bit is clear finds nothing in `s`.
NUMBERS, ASSIGNMENTS, KEYS, AT, IPV6 = 1, 2, 4, 8, 16


def _anchors(s: str) -> int:
    """`families` without the compiled gate: only the anchors a substring search finds at memchr
    speed rule a family out (e-mails and URL credentials need an `@`, an IPv6 address "::" or
    seven colons); the other families always run."""
    return (NUMBERS | ASSIGNMENTS | KEYS | (AT if "@" in s else 0)
            | (IPV6 if "::" in s or s.count(":") >= 7 else 0))  # fmt: skip


# The compiled gate rules out numbers, assignments and keys too, in one pass over the text at a
# few instructions per character (in Python `re`, a gate costs as much as the scanner it spares).
# It is built optionally (setup.py); apps that install the SDK without it redact exactly the same.
families: Callable[[str], int]
try:
    from verdict.redact import _gate
except ImportError:
    families = _anchors
else:
    families = _gate.families
COMPILED_GATE = families is not _anchors
_LABEL = re.compile(r"[A-Z][A-Z0-9_]{0,31}")
_HASH_HEX = 12
_PROTECTED = 1 << 30  # priority of placeholders already present in the input
_SMALL_INT = 10**6  # integers below this cannot hold a phone, card or SSN
_MAX_PASSES = 4
_CUT_LOOKBACK = 64  # how far back from max_string a string is cut at a space
_REGROWTH = 4  # a cut string redacted in hash mode stays below this many times max_string
_TOKEN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_DIGITS = frozenset("0123456789")
_JOINERS = frozenset("-.+'%/\\")  # join tokens in numbers, keys, e-mail local parts, paths
_KEY_CACHE_SIZE = 4096  # distinct mapping keys a Redactor remembers; past it the cache starts over
_KEY_CACHE_LENGTH = 256  # longer keys (content used as a key) are redacted on every call
# Texts `text()` remembers: system prompts and conversation history come back in every call of a
# conversation. Bounded in entries, in the length of one text and in the characters held in all;
# past a bound the cache starts over.
_TEXT_CACHE_SIZE = 1024
_TEXT_CACHE_LENGTH = 16_384
_TEXT_CACHE_CHARS = 1 << 21


class Redactor:
    """Redacts personal data and credentials from text (`text`) and JSON-like values (`value`).

    mode: "redact" replaces with `<LABEL>`, "hash" with `<LABEL:hmac12>` (HMAC-SHA256 keyed with
    `secret`, stable across calls and processes so joins still work), "drop" removes the value.
    extra_patterns: label -> regex of your own rules, e.g. {"TICKET": r"TCK-\\d{6}"} -> <TICKET>.
    hook: called with every structured value passed to `value()` before it is redacted; its
    return value is what gets redacted (use it to drop or rewrite fields).
    max_depth / max_items / max_string bound the work `value()` does: deeper containers become
    "<MAX_DEPTH>", values past `max_items` (counted over the whole value) and the rest of strings
    longer than `max_string` become "<TRUNCATED>".
    """

    __slots__ = (
        "mode", "max_depth", "max_items", "max_string",
        "_secret", "_hook", "_user", "_placeholder", "_fixed", "_keys", "_texts", "_text_chars",
    )  # fmt: skip

    def __init__(
        self,
        mode: str = "redact",
        secret: bytes | None = None,
        extra_patterns: Mapping[str, str] | None = None,
        hook: Callable[[Any], Any] | None = None,
        max_depth: int = 32,
        max_items: int = 10_000,
        max_string: int = 1_000_000,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"redaction mode must be one of {', '.join(MODES)}, got {mode!r}")
        if secret is not None and not isinstance(secret, bytes | bytearray):
            raise ValueError(f"secret must be bytes, got {type(secret).__name__}")
        if mode == "hash" and not secret:
            raise ValueError("hash mode needs a secret: Redactor(mode='hash', secret=b'...')")
        if hook is not None and not callable(hook):
            raise ValueError(f"hook must be callable, got {type(hook).__name__}")
        for name, limit in (("max_depth", max_depth), ("max_items", max_items),
                            ("max_string", max_string)):  # fmt: skip
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ValueError(f"{name} must be a positive integer, got {limit!r}")
        self.mode = mode
        self.max_depth, self.max_items, self.max_string = max_depth, max_items, max_string
        self._secret = bytes(secret) if secret else b""
        self._hook = hook
        self._user = _compile_user_patterns(extra_patterns or {})
        labels = sorted({*PRIORITY, *MARKER_LABELS, *(label for label, _ in self._user)})
        # Placeholders that do not depend on the value (redact and drop modes), by label.
        self._fixed = (
            {label: "" if mode == "drop" else f"<{label}>" for label in labels}
            if mode != "hash"
            else {}
        )
        self._placeholder = re.compile(
            "<(?:%s)(?::[0-9a-f]{%d})?>" % ("|".join(labels), _HASH_HEX)  # noqa: UP031
        )
        self._keys: dict[str, str] = {}  # mapping key -> the key redacted (`_key`)
        self._texts: dict[str, str] = {}  # text -> the text redacted (`text`)
        self._text_chars = 0  # characters of the texts in `_texts`

    def __repr__(self) -> str:
        users = ", ".join(label for label, _ in self._user)
        return f"Redactor(mode={self.mode!r}, extra_patterns=[{users}])"

    # -- free text -------------------------------------------------------------------------

    def find(self, s: str) -> list[Finding]:
        """What `text` would replace, before overlapping findings are merged (sorted by start)."""
        _require_str(s)
        return sorted(self._scan(s, families(s))) if s else []

    @property
    def has_hook(self) -> bool:
        """True when a structured-content hook is set (callers must then pass whole structures)."""
        return self._hook is not None

    def text(self, s: str) -> str:
        """`s` with every finding replaced according to the mode."""
        _require_str(s)
        # The result depends only on `s` and this redactor's configuration, fixed when it is built:
        # a text seen before (the system prompt, the history a conversation resends every turn) is
        # looked up instead of scanned again (tests/redact/test_fast_path.py checks it is exact).
        redacted = self._texts.get(s)
        if redacted is None:
            # The compiled gate rules out every family for text `maybe_sensitive` clears, and more.
            possible = families(s) if COMPILED_GATE or maybe_sensitive(s) else 0
            redacted = self._redact(s, possible) if possible or self._user else s
            self._remember(s, redacted)
        return redacted

    def _remember(self, s: str, redacted: str) -> None:
        size = len(s)
        if size > _TEXT_CACHE_LENGTH:
            return
        if len(self._texts) >= _TEXT_CACHE_SIZE or self._text_chars + size > _TEXT_CACHE_CHARS:
            self._texts.clear()  # plain dict operations: safe without a lock under concurrent callers
            self._text_chars = 0
        self._texts[s] = redacted
        self._text_chars += size

    def _redact(self, s: str, possible: int) -> str:
        """`s` redacted, `possible` being `families(s)`."""
        # A replacement glued to a token ("...819<IBAN>GB29...") changes what its neighbours look
        # like to the detectors; rescanning until nothing changes keeps redaction idempotent.
        for rescan in range(_MAX_PASSES):
            found = self._scan(s, families(s) if rescan else possible) if s else None
            if not found:
                return s
            redacted, glued = self._replace(s, found)
            if not glued or redacted == s:
                return redacted
            s = redacted
        return s

    def _scan(self, s: str, possible: int) -> list[Finding]:
        """Findings of the built-in detector families in `possible` (`families(s)`: the others
        find nothing in `s`) and of the user's patterns."""
        out: list[Finding] = []
        # Each call costs more than its own first check on short text (the cost is per operation,
        # not per character), so the families that cannot find anything are ruled out first.
        if possible & NUMBERS:
            scan_numbers(s, out)
        if possible & AT:
            scan_emails(s, out)
            scan_url_credentials(s, out)
        if possible & IPV6:
            scan_ipv6(s, out)
        if possible & ASSIGNMENTS:
            scan_assignments(s, out)
        if possible & KEYS:
            scan_keys(s, out)
        for label, pattern in self._user:
            out.extend(
                Finding(m.start(), m.end(), label, USER_PRIORITY)
                for m in pattern.finditer(s)
                if m.end() > m.start()
            )
        return out

    def _replace(self, s: str, found: list[Finding]) -> tuple[str, bool]:
        """`s` with findings replaced, and whether a replacement touches a token next to it."""
        if "<" in s:
            found.extend(
                Finding(m.start(), m.end(), "", _PROTECTED) for m in self._placeholder.finditer(s)
            )
        found.sort()
        pieces: list[str] = []
        pos = i = 0
        glued = False
        count = len(found)
        while i < count:
            first = found[i]
            start, end = first.start, first.end
            i += 1
            if i < count and found[i].start < end:  # merge everything overlapping
                cluster = [first]
                while i < count and found[i].start < end:
                    end = max(end, found[i].end)
                    cluster.append(found[i])
                    i += 1
                replaced = self._replace_cluster(s, start, end, cluster)
            elif first.priority == _PROTECTED:
                continue
            else:
                replaced = self._fixed.get(first.label)
                if replaced is None:
                    replaced = self._placeholder_for(first.label, s[start:end])
            if replaced is not None:
                pieces.append(s[pos:start])
                pieces.append(replaced)
                pos = end
                if not glued:
                    glued = _glued(s, start, end)
        if not pieces:
            return s, False
        pieces.append(s[pos:])
        return "".join(pieces), glued

    def _replace_cluster(self, s: str, start: int, end: int, cluster: list[Finding]) -> str | None:
        """One replacement for overlapping findings; placeholders inside them are kept as is."""
        candidates = [f for f in cluster if f.priority != _PROTECTED]
        if not candidates:
            return None
        label = max(candidates, key=lambda f: f.priority).label
        pieces = []
        for kept in cluster:
            if kept.priority != _PROTECTED:
                continue
            if kept.start > start:
                pieces.append(self._placeholder_for(label, s[start : kept.start]))
            pieces.append(s[kept.start : kept.end])
            start = max(start, kept.end)
        if start < end:
            pieces.append(self._placeholder_for(label, s[start:end]))
        return "".join(pieces)

    def _placeholder_for(self, label: str, value: str) -> str:
        if self.mode == "redact":
            return f"<{label}>"
        if self.mode == "drop":
            return ""
        return f"<{label}:{self._digest(value)}>"

    def _digest(self, value: str) -> str:
        data = value.encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, data, hashlib.sha256).hexdigest()[:_HASH_HEX]

    # -- structured values -----------------------------------------------------------------

    def value(self, obj: Any) -> Any:
        """A redacted copy of a JSON-like value (dict, list, tuple, str, number, None).

        Values under credential-named keys (`password`, `api_key`, `Authorization`, ...) are
        replaced whole, whatever their shape; strings are redacted as text; integers long
        enough to be a phone or card number are checked as text.
        """
        if self._hook is not None:
            obj = self._hook(obj)
        return self._walk(obj, 0, [self.max_items])

    def _walk(self, obj: Any, depth: int, budget: list[int]) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            return TRUNCATED_MARKER
        if isinstance(obj, str):
            return self._bounded_text(obj)
        if obj is None or isinstance(obj, bool | float):
            return obj
        if isinstance(obj, int):
            if -_SMALL_INT < obj < _SMALL_INT:
                return obj
            redacted = self.text(str(obj))
            return obj if redacted == str(obj) else redacted
        if depth >= self.max_depth:
            return MAX_DEPTH_MARKER
        if isinstance(obj, Mapping):
            return self._walk_mapping(obj, depth, budget)
        if isinstance(obj, list | tuple | set | frozenset):
            items = []
            for item in obj:
                if budget[0] <= 0:
                    items.append(TRUNCATED_MARKER)
                    break
                items.append(self._walk(item, depth + 1, budget))
            return tuple(items) if isinstance(obj, tuple) else items
        if isinstance(obj, bytes | bytearray):
            return self._bounded_text(bytes(obj[: self.max_string]).decode("utf-8", "replace"))
        return self._bounded_text(str(obj))

    def _walk_mapping(self, obj: Mapping[Any, Any], depth: int, budget: list[int]) -> dict:
        result: dict[Any, Any] = {}
        for key, item in obj.items():
            if budget[0] <= 0:
                result[TRUNCATED_MARKER] = TRUNCATED_MARKER
                break
            if isinstance(key, str) and is_credential_name(key):
                budget[0] -= 1
                if self.mode != "drop" or item is None or item == "":
                    result[key] = self._credential(item)
                continue
            name = self._key(key) if isinstance(key, str) else key
            result[name] = self._walk(item, depth + 1, budget)
        return result

    def _key(self, key: str) -> str:
        """A mapping key redacted as text, remembered: the same few keys (`gen_ai.input.messages`, `role`,
        `parts`) come back in every value, and the result depends only on the key and this redactor's
        configuration, which is fixed when it is built. Bounded in entries and key length."""
        redacted = self._keys.get(key)
        if redacted is None:
            redacted = self.text(key)
            if len(key) <= _KEY_CACHE_LENGTH:
                if len(self._keys) >= _KEY_CACHE_SIZE:
                    self._keys.clear()  # plain dict operations: safe without a lock under concurrent callers
                self._keys[key] = redacted
        return redacted

    def _credential(self, item: Any) -> Any:
        """Replacement for a value under a credential-named key, whatever its shape."""
        if item is None or item == "":
            return item  # "no password set" is worth keeping and leaks nothing
        if isinstance(item, str) and self._placeholder.fullmatch(item):
            return item
        if self.mode == "hash":
            return f"<SECRET:{self._digest(_canonical(item))}>"
        return "<SECRET>"

    def _bounded_text(self, s: str) -> str:
        limit = self.max_string
        if len(s) <= limit or (s.endswith(TRUNCATED_MARKER) and len(s) <= _REGROWTH * limit):
            return self.text(s)  # short, or cut by an earlier pass (hash placeholders may grow it)
        # Cut at a space when there is one near the limit, so no secret is cut in half (a half
        # e-mail or card number would no longer be recognised).
        cut = s.rfind(" ", max(0, limit - _CUT_LOOKBACK), limit + 1)
        return self.text(s[: cut if cut > 0 else limit]) + TRUNCATED_MARKER


def maybe_sensitive(s: str) -> bool:
    """False only for text in which no built-in detector can find anything (tests/redact check it).

    What every detector needs, by one-character and substring searches (a regex stepping through
    the text costs ten times more): a digit, `@`, `:`, `=`, `_` or `-` (numbers, e-mails, URLs,
    IPv6, assignments, dash keys, PEM), an AWS or Google key prefix, a JWT header or an auth
    scheme. Most chat text has a digit or a colon: this spares the rest every scanner's call.
    """
    return (
        "-" in s or ":" in s or "_" in s or "=" in s or "@" in s
        or "0" in s or "1" in s or "2" in s or "3" in s or "4" in s
        or "5" in s or "6" in s or "7" in s or "8" in s or "9" in s
        or ("A" in s and ("AK" in s or "AS" in s or "AI" in s))
        or "eyJ" in s or has_auth_word(s)
    )  # fmt: skip


def _glued(s: str, start: int, end: int) -> bool:
    """True if the text around s[start:end] continues a token across its edges."""
    return _joins(
        s[start - 1 : start] if start else "", s[start - 2 : start - 1] if start > 1 else ""
    ) or _joins(s[end : end + 1], s[end + 1 : end + 2])


def _joins(neighbour: str, beyond: str) -> bool:
    if neighbour in _TOKEN:
        return True
    if neighbour == " ":
        return beyond in _DIGITS  # digit groups: "+44 20 7946 0958"
    return neighbour in _JOINERS and beyond in _TOKEN


def _canonical(item: Any) -> str:
    """A stable text form of a structured credential value, for hashing."""
    if isinstance(item, str):
        return item
    try:
        return json.dumps(item, sort_keys=True, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):  # mixed key types, cycles, deep nesting
        return reprlib.repr(item)


def _compile_user_patterns(patterns: Mapping[str, str]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    compiled = []
    for label, pattern in patterns.items():
        if not isinstance(label, str) or not _LABEL.fullmatch(label):
            raise ValueError(
                f"extra pattern label must be 1-32 of A-Z, 0-9, _ starting with a letter, got {label!r}"
            )
        if label in MARKER_LABELS:
            raise ValueError(f"extra pattern label {label!r} is reserved")
        try:
            regex = re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise ValueError(f"extra pattern {label}: invalid regex {pattern!r}: {exc}") from None
        if regex.fullmatch(""):
            raise ValueError(f"extra pattern {label}: {pattern!r} matches the empty string")
        compiled.append((label, regex))
    return tuple(compiled)


def _require_str(s: object) -> None:
    if not isinstance(s, str):
        raise TypeError(f"expected str, got {type(s).__name__}")
