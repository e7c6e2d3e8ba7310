"""`python -m verdict_daemon.cli ARGS`: the `verdict` command."""

from verdict_daemon.cli import run

run()
