"""`verdict`: one entry point, one subcommand per tool. This module only dispatches.

Each subcommand lives in its own module exposing `add_arguments(parser)` and `run(args) -> int`;
register it in COMMANDS (module imported only when that subcommand runs).

Usage errors (unknown command or option, missing or malformed value) are closed errors like the
subcommands' own: one JSON line {"error": {"code": "invalid_config", "message"}} on stderr, exit 2,
nothing on stdout, for every subcommand (also those whose run-time errors are a text line by default).
Every subcommand prints its errors with verdict_daemon.errors.print_error; an exception a subcommand lets
escape is reported here as `internal_error` (exit 2; VERDICT_DEBUG=1 re-raises it). `--help` stays plain
text (exit 0); bare `verdict` prints the help (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from verdict.cli_errors import EXIT_USAGE, USAGE_CODE
from verdict_daemon.errors import internal_error, print_error

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "gate": ("verdict_daemon.gate_command", "gate CI on a judge's pass rate over regression cases (exit 0 pass, 1 below, 2 error)"),
    "probes": ("verdict_daemon.probes_command",
               "run a behaviour-probe suite against a target model (exit 0 pass, 1 below threshold, 2 error)"),
    "report": ("verdict_daemon.report_command", "write a self-contained HTML report for one tenant"),
    "review": ("verdict_daemon.review_command", "list, show and label items in a tenant's human review queue"),
    "sql": ("verdict_daemon.sql_command",
            "run SQL over one tenant's spans and judgments (spans, llm_calls, judgments, drift_runs, drift_signals)"),
}


EXIT_INTERNAL = 2  # internal_error (a bug) that a subcommand did not report itself


def usage_error(message: str) -> NoReturn:
    print_error(USAGE_CODE, message)
    raise SystemExit(EXIT_USAGE)


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors as closed JSON errors (a subcommand that installs its own handler keeps it)."""

    def error(self, message: str) -> NoReturn:
        usage_error(f"{self.prog}: {message}")


def build_parser(argv: list[str]) -> tuple[argparse.ArgumentParser, object | None]:
    parser = _Parser(prog="verdict", description="Verdict command-line tools.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    module = None
    for name, (module_name, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(sub_parser)
    return parser, module


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser, module = build_parser(argv)
    args, extras = parser.parse_known_args(argv)
    if extras:  # a subcommand's parser passes unknown options up: name the subcommand, not just `verdict`
        prog = f"verdict {args.command}" if args.command else "verdict"
        usage_error(f"{prog}: unrecognized arguments: {' '.join(extras)}")
    if module is None:  # bare `verdict`: the help, as before (tests/collector/test_sql.py relies on it)
        parser.print_help()
        return EXIT_USAGE
    try:
        return module.run(args)
    except BrokenPipeError:
        # The reader went away (`verdict sql … | head`): stop quietly like any shell tool, and point
        # stdout at /dev/null so the interpreter's final flush cannot raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # a bug in a subcommand: the closed internal_error, never a traceback
        if os.environ.get("VERDICT_DEBUG"):
            raise
        error = internal_error(exc)
        print_error(error.code, error.message)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
