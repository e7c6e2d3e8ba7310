"""`verdict daemon --config verdict.toml`: run the scheduled monitoring service until SIGTERM.

Exit codes: 0 after a clean shutdown; 2 when it cannot start (invalid_config, already_running,
storage_locked, evaluator_error, state_corrupt, ...) or when it stopped itself on a broken state file
(state_corrupt, the file named), as the one error envelope on stderr (docs/cli.md).
Job failures while running are log lines `job=<name> tenant=<t> error=<code>: <message>`.
`--check`: read the state file in full and print {"healthy": true, ...} (exit 0), or the envelope (exit 2),
whether a daemon runs on it or not.
`verdict-daemon` and `python -m verdict_daemon.cli.daemon` are its deprecated aliases (one release).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import signal
import sys
from pathlib import Path
from typing import NoReturn

from verdict.cli_runner import alias_main, leave
from verdict_daemon.config import load_config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("examples:\n  verdict daemon --config verdict.toml --log-level INFO    (docs/daemon.md)\n"
                     "  verdict daemon --config verdict.toml --check    (health: exit 0 healthy, 2 with the error)")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--config", type=Path, required=True, help="verdict.toml")
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    parser.add_argument("--check", action="store_true",
                        help="check the state file (every block read, nothing created or changed) and exit")


def check(config_path: Path) -> int:
    """`--check`: {"healthy": true, "state_file", "schema_version"} on stdout, or StateFileBroken."""
    from verdict_daemon.service.cycle import store_for

    store = store_for(load_config(config_path))
    version = store.verify()
    print(json.dumps({"healthy": True, "state_file": str(store.path), "schema_version": version}))
    return 0


def serve(args: argparse.Namespace) -> int:
    if args.check:
        return check(args.config)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # "skipped: maximum number of running instances" is coalescing doing its job, not news.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    from verdict_daemon.service.daemon import Daemon

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 <pid>`: dump every thread's stack
    daemon = Daemon(load_config(args.config))
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: daemon.request_stop())
    daemon.run()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`verdict-daemon` in-process: returns its exit code (the deprecated alias of `verdict daemon`)."""
    return alias_main("verdict-daemon", "daemon", add_arguments, serve, argv)


def run(argv: list[str] | None = None) -> NoReturn:
    """The alias's process entry point: `main`, then leave (through os._exit when threads remain: judge
    calls or jobs abandoned after the shutdown grace, or still running when the daemon failed, would keep
    the interpreter joining them at exit). `main` itself returns, so it can be called in-process."""
    leave(main(argv), threads_may_linger=True)


if __name__ == "__main__":
    run()
