"""Run a demo component so that it stops when the demo dies, however it dies.

    python -m verdict_demo.child PARENT_PID MODULE [ARGS...]   (== python -m MODULE ARGS...)

On Ctrl-C or SIGTERM the demo stops its children itself. Killed outright (kill -9, the OOM killer)
it cannot, and its children, in their own sessions, would run on. So each child runs under this
wrapper: a watchdog thread polls the parent pid and, once the demo is gone (the child is reparented),
sends the component SIGTERM — its normal clean shutdown — and SIGKILL if that takes longer than
`GRACE_SECONDS`. Polling getppid() works on Linux and macOS alike, with no change to the components.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time

POLL_SECONDS = 0.5
GRACE_SECONDS = 60.0


def stop_when_orphaned(parent_pid: int, poll: float = POLL_SECONDS, grace: float = GRACE_SECONDS) -> None:
    """Start the watchdog: SIGTERM to this process once its parent is no longer `parent_pid`, then SIGKILL
    after `grace`. `parent_pid` is passed in, not read here: the demo may already have died."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="demo parent watchdog", daemon=True).start()


def main(argv: list[str]) -> None:
    parent_pid, module, *args = argv
    stop_when_orphaned(int(parent_pid))
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
