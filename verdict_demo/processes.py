"""The demo's child processes: each in its own session, its stderr in a log file, stopped in order.

Own sessions keep a terminal Ctrl-C away from the children: the orchestrator alone receives it and
stops them itself (SIGTERM, then SIGKILL after a grace), so no child prints a traceback or is left
behind. Each child runs under `verdict_demo.child`, which stops it if the demo is killed outright.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast

from verdict_daemon.errors import DaemonError


class ComponentFailed(DaemonError):
    """A child exited early, did not become ready, or stopped making progress."""

    def __init__(self, message: str) -> None:
        super().__init__("component_failed", message)


class Interrupted(BaseException):
    """A stop signal (SIGINT/SIGTERM) noticed at a safe point: children are then stopped in order."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@dataclass
class Child:
    name: str  # as the user knows it: verdict-collector, verdict-daemon, support-bot app
    proc: subprocess.Popen
    log_path: Path
    _lines: queue.Queue[str | None] = field(default_factory=queue.Queue)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join("    " + line for line in text.splitlines()[-lines:])

    def check_alive(self) -> None:
        code = self.proc.poll()
        if code is not None:
            raise ComponentFailed(f"{self.name} exited with code {code}; log {self.log_path}:\n{self.log_tail()}")

    def wait_for_log(self, pattern: re.Pattern[str], timeout: float,
                     also_check: Callable[[], None] = lambda: None) -> re.Match[str]:
        """The first match of `pattern` in the child's log, once it appears."""
        deadline = time.monotonic() + timeout
        while True:
            found = pattern.search(self.log_path.read_text(errors="replace"))
            if found:
                return found
            self.check_alive()
            also_check()
            if time.monotonic() > deadline:
                raise ComponentFailed(f"{self.name} did not become ready within {timeout:g} s; log {self.log_path}")
            time.sleep(0.1)

    # --- a line protocol on stdin/stdout (the app) -------------------------------------------------------
    def start_reader(self) -> None:
        def read() -> None:
            for line in cast(IO[str], self.proc.stdout):  # spawned with stdout=PIPE
                self._lines.put(line.strip())
            self._lines.put(None)

        threading.Thread(target=read, name=f"{self.name} stdout", daemon=True).start()

    def send(self, line: str) -> None:
        try:
            stdin = cast(IO[str], self.proc.stdin)  # spawned with stdin=PIPE
            stdin.write(line + "\n")
            stdin.flush()
        except BrokenPipeError:
            self.proc.wait(10)
            self.check_alive()
            raise ComponentFailed(f"{self.name} stopped reading its input; log {self.log_path}") from None

    def read_line(self, timeout: float, also_check: Callable[[], None] = lambda: None) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.2)
            except queue.Empty:
                also_check()
                continue
            if line is None:
                self.proc.wait(10)
                self.check_alive()
                raise ComponentFailed(f"{self.name} closed its output; log {self.log_path}")
            return line
        raise ComponentFailed(f"{self.name} did not answer within {timeout:g} s; log {self.log_path}")

    # --- stopping ---------------------------------------------------------------------------------------
    def stop(self, grace: float) -> int:
        """SIGTERM, wait up to `grace` seconds, then SIGKILL. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stop_input()  # stdout stays open: its reader thread sees EOF and ends by itself
        return self.proc.returncode

    def stop_input(self) -> None:
        """Close the child's stdin (the app's signal to finish); a child that already exited is fine."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()


def spawn(name: str, module_args: list[str], log_path: Path, *, pipes: bool = False,
          env: dict[str, str] | None = None) -> Child:
    """`python -m <module_args>` in its own session, stderr to `log_path` (stdin/stdout piped if asked),
    stopped by its watchdog if this process dies without stopping it."""
    log = log_path.open("ab")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "verdict_demo.child", str(os.getpid()), *module_args], stderr=log,
            start_new_session=True,
            stdin=subprocess.PIPE if pipes else subprocess.DEVNULL, stdout=subprocess.PIPE if pipes else log,
            text=pipes, bufsize=1 if pipes else -1, env={**os.environ, **(env or {})})
    finally:
        log.close()  # the child holds its own descriptor
    child = Child(name, proc, log_path)
    if pipes:
        child.start_reader()
    return child
