"""One process per directory: an exclusive, non-blocking `flock` on a file that names its holder.

The kernel releases the lock when the holder dies (even by kill -9), so a stale file never blocks.
Used by the collector (one writer per span lake) and the daemon (one scheduler per data dir).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class HeldElsewhere(Exception):
    def __init__(self, path: Path, holder_pid: str) -> None:
        super().__init__(f"{path} is held by pid {holder_pid}")
        self.path = path
        self.holder_pid = holder_pid


class PidFileLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise HeldElsewhere naming the holder's pid."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise HeldElsewhere(self.path, holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
