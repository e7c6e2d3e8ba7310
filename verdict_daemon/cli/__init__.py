"""`verdict`: the one command tree. This module only dispatches (docs/cli.md).

Each subcommand lives in its own module exposing `add_arguments(parser)` and a run function
`(args) -> int` (named in COMMANDS); the module is imported only when that subcommand runs. Every
subcommand runs inside verdict.cli_runner.run_command: one error envelope on stderr, one closed code set
with its exit codes (verdict.cli_errors), VERDICT_DEBUG and a closed stdout handled there. `--help` stays
plain text (exit 0); bare `verdict` prints the help (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from typing import Any, NoReturn

from verdict.cli_errors import EXIT_ERROR, ArgumentParser
from verdict.cli_runner import leave, run_command


@dataclass(frozen=True, slots=True)
class Command:
    module: str
    help: str
    run: str = "run"  # the module's run function
    threads_may_linger: bool = False  # verdict.cli_runner.leave: the process leaves through os._exit


COMMANDS: dict[str, Command] = {
    "collector": Command("collector.cli", "receive OTLP traces (HTTP, gRPC) into the durable span lake; "
                         "drain on SIGTERM"),
    "daemon": Command("verdict_daemon.cli.daemon", "run the scheduled monitoring service (sample, judge, cluster, "
                      "drift, alerts) until SIGTERM", run="serve", threads_may_linger=True),
    "pipeline": Command("verdict_daemon.cli.pipeline", "run one monitoring cycle (sample -> judge -> assign -> "
                        "drift) for cron and CI (exit 1 with --fail-on-signal and a signal)",
                        threads_may_linger=True),  # judge calls abandoned after a SIGTERM's grace
    "cluster": Command("verdict_daemon.cli.cluster", "manage a tenant's versioned intent-cluster registry "
                       "(normalize, fit, assign, validate, activate, rollback, rename, inspect)"),
    "sql": Command("verdict_daemon.cli.sql",
                   "run SQL over one tenant's spans and judgments (spans, llm_calls, judgments, drift_runs, "
                   "drift_signals)"),
    "report": Command("verdict_daemon.cli.report", "write a self-contained HTML report for one tenant"),
    "review": Command("verdict_daemon.cli.review", "list, show and label items in a tenant's human review queue"),
    "probes": Command("verdict_daemon.cli.probes",
                      "run a behaviour-probe suite against a target model (exit 0 pass, 1 below threshold, 2 error)"),
    "gate": Command("verdict_daemon.cli.gate",
                    "gate CI on a judge's pass rate over regression cases (exit 0 pass, 1 below, 2 error)"),
}
# Commands of packages above this layer (the demo: `verdict demo`) register a Command under this entry-point
# group (pyproject.toml), so the product never names them.
ENTRY_POINT_GROUP = "verdict.commands"

_EPILOG = """\
exit codes: 0 ok; 1 a result below its bar (gate, probes run, pipeline --fail-on-signal, review correlate
--fail-on); 2 an error, as one line {"error": {"code", "message"}} on stderr (3 invalid_tenant; verdict sql:
4 no_data_dir, 5 query_error, 6 access_denied); 141 stdout was closed. Codes and environment: docs/cli.md.

examples:
  verdict collector --data-dir ./verdict-data
  verdict daemon --config verdict.toml
  verdict sql "SELECT intent_key, count(*) FROM llm_calls GROUP BY 1" --tenant acme
  verdict report --data-dir ./verdict-data --tenant acme --out report.html
"""


def commands() -> dict[str, Command]:
    """The tree: the product's commands, then those other installed packages register."""
    from importlib.metadata import entry_points

    return {**COMMANDS, **{entry.name: entry.load() for entry in entry_points(group=ENTRY_POINT_GROUP)}}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("verdict-monitor")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser(chosen: str | None, tree: dict[str, Command]) -> tuple[argparse.ArgumentParser, Any]:
    """The tree; only the chosen subcommand's module is imported and given its options."""
    parser = ArgumentParser(prog="verdict", description="Verdict command-line tools: one subcommand per tool.",
                            epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"verdict {_version()}")
    sub = parser.add_subparsers(dest="verdict_command", metavar="COMMAND")  # a command may have its own "command"
    module = None
    for name, command in tree.items():
        sub_parser = sub.add_parser(name, help=command.help, description=command.help)
        if name == chosen:
            module = importlib.import_module(command.module)
            module.add_arguments(sub_parser)
    return parser, module


def _dispatch(argv: list[str]) -> int:
    tree = commands()
    chosen = argv[0] if argv and argv[0] in tree else None
    parser, module = build_parser(chosen, tree)
    args = parser.parse_args(argv)
    if module is None:  # bare `verdict`: the help, as before (tests/collector/test_sql.py relies on it)
        parser.print_help()
        return EXIT_ERROR
    return int(getattr(module, tree[args.verdict_command].run)(args))


def main(argv: list[str] | None = None) -> int:
    """`verdict ARGV` in-process: its exit code (never raises, except SystemExit for --help)."""
    return run_command(lambda: _dispatch(sys.argv[1:] if argv is None else list(argv)))


def run(argv: list[str] | None = None) -> NoReturn:
    """The process entry point (`verdict`, `python -m verdict_daemon.cli`): main, then leave."""
    argv = sys.argv[1:] if argv is None else argv
    command = commands().get(argv[0]) if argv else None
    leave(main(argv), threads_may_linger=command is not None and command.threads_may_linger)

