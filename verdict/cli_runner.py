"""How every `verdict` command runs: one wrapper (`run_command`), the shared flags, the deprecated aliases.

A command is a pair `add_arguments(parser)` / `run(args) -> int`: `run` returns 0 or 1 (docs/cli.md, exit
codes) and raises verdict.cli_errors.CliError for a failure. `run_command` is the only place that turns a
failure into the envelope on stderr and its exit code, reads VERDICT_DEBUG and handles a closed stdout.
Stdlib only (the collector and the daemon both build on it).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from verdict import environment
from verdict.cli_errors import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES,
    ArgumentParser,
    CliError,
    internal_error,
    missing_extra,
    print_error,
)
from verdict.tenancy import InvalidTenantError, TenantId, validate_tenant_id

AddArguments = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]


def run_command(body: Callable[[], int]) -> int:
    """`body()` (parse the command line, run the command) with the one failure policy: a CliError -> the
    envelope and EXIT_CODES[code]; any other exception -> internal_error, exit 2 (VERDICT_DEBUG re-raises
    it); a reader that closed stdout -> exit 141, quietly. `--help` (SystemExit 0) passes through."""
    try:
        code = body()
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
        return code
    except CliError as exc:
        print_error(exc.code, exc.message, exc.details)
        return EXIT_CODES[exc.code]
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if environment.debug():
            raise
        error = (missing_extra(exc) if isinstance(exc, ModuleNotFoundError) else None) or internal_error(exc)
        print_error(error.code, error.message)
        return EXIT_CODES[error.code]


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot raise again."""
    with contextlib.suppress(OSError, ValueError):  # ValueError: stdout replaced in-process (no file)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def leave(code: int, *, threads_may_linger: bool) -> NoReturn:
    """End the process with `code`. A command whose abandoned work may leave threads running (the daemon:
    judge calls past the shutdown grace) leaves through os._exit, since the interpreter would join every
    concurrent.futures worker at exit; their work is uncommitted and redone on the next start."""
    if threads_may_linger and threading.active_count() > 1:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def alias_main(prog: str, command: str, add_arguments: AddArguments, run: Run, argv: list[str] | None) -> int:
    """A deprecated console script (`verdict-pipeline` ...): `verdict COMMAND`'s options and behaviour
    under the old name, its --help saying so. Kept for one release."""

    def body() -> int:
        parser = ArgumentParser(prog=prog)
        add_arguments(parser)
        parser.description = f"Deprecated alias of `verdict {command}`. " + (parser.description or "")
        return run(parser.parse_args(sys.argv[1:] if argv is None else argv))

    return run_command(body)


# --- the shared flags: one spelling and one environment variable each ---------------------------------------
class _DeprecatedFlag(argparse.Action):
    """An old flag spelling that still works for one release, with one warning on stderr."""

    def __init__(self, *args: Any, new: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        environment.warn_deprecated(option_string or self.option_strings[0], self.new)
        setattr(namespace, self.dest, values)


def add_tenant(parser: argparse.ArgumentParser, help_text: str, *, default: str | None = None,
               required: bool = False, old_flag: str | None = None) -> None:
    """`--tenant` [env VERDICT_TENANT] (`required`: unless the variable is set; `old_flag`: a deprecated
    spelling that still works)."""
    value = environment.get("VERDICT_TENANT") or default
    parser.add_argument("--tenant", default=value, required=required and value is None, metavar="TENANT",
                        help=f"{help_text} [env VERDICT_TENANT]")
    if old_flag is not None:
        parser.add_argument(old_flag, dest="tenant", action=_DeprecatedFlag, new="--tenant",
                            help="deprecated spelling of --tenant")


def checked_tenant(tenant: str | None) -> TenantId:
    """A command's tenant, validated the same way in every command: `tenant_required` when none is given,
    `invalid_tenant` (exit 3) when the id is not one (docs/cli.md)."""
    if not tenant:
        raise CliError("tenant_required", "give --tenant (or set VERDICT_TENANT)")
    try:
        return validate_tenant_id(tenant)
    except InvalidTenantError as exc:
        raise CliError("invalid_tenant", f"--tenant: {exc}") from None


def add_data_dir(parser: argparse.ArgumentParser, help_text: str, *, default: str | None = None,
                 required: bool = False) -> None:
    """`--data-dir DIR` [env VERDICT_DATA_DIR] (`required`: unless the variable is set)."""
    value = environment.get("VERDICT_DATA_DIR") or default
    parser.add_argument("--data-dir", type=Path, default=None if value is None else Path(value),
                        required=required and value is None, metavar="DIR", help=f"{help_text} [env VERDICT_DATA_DIR]")


def add_json(parser: argparse.ArgumentParser, help_text: str = "print the result as JSON on stdout") -> None:
    parser.add_argument("--json", action="store_true", help=help_text)
