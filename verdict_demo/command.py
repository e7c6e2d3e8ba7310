"""`verdict demo`: the demo's entry in the `verdict` command tree (registered through the `verdict.commands`
entry point, so the product never names this package)."""

from verdict_daemon.cli import Command

COMMAND = Command("verdict_demo.cli", "run Verdict end to end on this machine, offline (collector, daemon, an "
                  "instrumented app, a fake LLM)")
