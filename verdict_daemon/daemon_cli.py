"""`verdict-daemon --config verdict.toml`: run the scheduled monitoring service until SIGTERM.

Exit codes: 0 after a clean shutdown; 2 when it cannot start (invalid_config, already_running,
storage_locked, evaluator_error, ...), reported as one line `verdict-daemon: error [<code>]: <message>`.
Job failures while running are log lines `job=<name> tenant=<t> error=<code>: <message>`.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import NoReturn

from verdict_daemon.config import load_config
from verdict_daemon.errors import DaemonError, internal_error, print_error


class _Parser(argparse.ArgumentParser):
    """A usage error is an `invalid_config` start failure like any other, not argparse's usage text."""

    def error(self, message: str) -> NoReturn:
        raise DaemonError("invalid_config", message)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="verdict-daemon", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="verdict.toml")
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    try:
        args = parser.parse_args(argv)
    except DaemonError as exc:
        return _fail(exc)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # "skipped: maximum number of running instances" is coalescing doing its job, not news.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    from verdict_daemon.daemon import Daemon

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 <pid>`: dump every thread's stack
    try:
        daemon = Daemon(load_config(args.config))
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: daemon.request_stop())
        daemon.run()
        code = 0
    except DaemonError as exc:
        code = _fail(exc)
    except Exception as exc:  # the closed vocabulary holds even for bugs: no traceback reaches the user
        if os.environ.get("VERDICT_DEBUG"):
            raise
        code = _fail(internal_error(exc))
    return code


def run(argv: list[str] | None = None) -> NoReturn:
    """The process entry point (`verdict-daemon`, `python -m verdict_daemon.daemon_cli`): `main`, then leave.

    Judge calls or jobs abandoned after the shutdown grace (or still running when the daemon failed) would
    keep the interpreter joining every concurrent.futures worker at exit (daemon threads too), so the
    process leaves through os._exit when threads remain; their work is uncommitted and redone on the next
    start, as after kill -9. `main` itself returns, so it can be called in-process."""
    code = main(argv)
    if threading.active_count() > 1:
        logging.shutdown()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _fail(exc: DaemonError) -> int:
    print_error(exc.code, exc.message, text_prog="verdict-daemon")
    return 2


if __name__ == "__main__":
    run()
