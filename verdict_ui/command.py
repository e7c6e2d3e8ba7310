"""`verdict ui`: the web app's entry in the `verdict` command tree (registered through the `verdict.commands`
entry point, so the product never names this package)."""

from verdict_daemon.cli import Command

COMMAND = Command("verdict_ui.cli", "serve a local web app: overview, traces, signals, and the review queue for "
                  "labelling")
