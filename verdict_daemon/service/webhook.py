"""One webhook POST: to the configured URL only, within a whole-request deadline.

- No redirect is followed (http.client follows none): a 3xx is a failed attempt with its status, so the
  payload and its `Authorization` header go to the configured URL and nowhere else.
- `deadline_seconds` bounds the whole request (connect, TLS, send, status line and headers). A socket
  timeout bounds each read, not the request: a receiver answering one byte a second never trips it. So a
  timer shuts the connection's socket down when the deadline passes, which wakes the blocked read.
  (Name resolution is the resolver's own business and not covered.)
- It goes straight to the URL's host: HTTP(S)_PROXY variables are not used.
- The response body is never read: the status decides, and a body may echo secrets.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Attempt:
    error: str | None  # None: a 2xx; otherwise a short reason, never the response body
    timed_out: bool = False  # the deadline passed (the receiver stalls)


class _Deadline:
    """Shuts down the socket attached to it once `seconds` have passed (a duplicate of its descriptor is
    kept, since a TLS wrap detaches the original socket object)."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self.expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def attach(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            if self.expired:
                sock.close()
                raise TimeoutError("deadline passed while connecting")
            self._socket = sock.dup()
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._socket is not None:
                with contextlib.suppress(OSError):  # already closed by the peer
                    self._socket.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            if self._socket is not None:
                self._socket.close()
                self._socket = None


def post(url: str, body: bytes, headers: dict[str, str], deadline_seconds: float) -> Attempt:
    """POST `body`; the error is `HTTP <status>` (a 3xx too), `deadline <s> s exceeded`, or the transport
    error's type name."""
    parts = urlsplit(url)
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_type(parts.hostname or "", parts.port, timeout=deadline_seconds)
    deadline = _Deadline(deadline_seconds)
    create = connection._create_connection  # type: ignore[attr-defined]  # http.client's hook: an instance attribute
    connection._create_connection = lambda *a, **k: deadline.attach(create(*a, **k))  # type: ignore[attr-defined]
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("POST", target, body=body, headers=headers)
        status = connection.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        if deadline.expired:
            return Attempt(f"deadline {deadline_seconds:g} s exceeded", timed_out=True)
        return Attempt(type(exc).__name__)
    finally:
        deadline.close()
        connection.close()
    if 200 <= status < 300:
        return Attempt(None)
    return Attempt(f"HTTP {status}" + (" (redirects are not followed)" if 300 <= status < 400 else ""))
