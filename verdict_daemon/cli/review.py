"""`verdict review`: the tenant's human review queue, reviewer labels, and what they measure.

  list             items queued for review (paged, newest first)
  show ITEM        the redacted conversation, the judge's verdict and rationale per dimension, labels
  label ITEM       record PASS/FAIL per dimension with a one-line critique (a new, immutable record)
  agreement        judge vs the latest human labels per dimension: TPR, TNR, kappa, AC1 with intervals;
                   next to it, reviewers among themselves (kappa, AC1, alpha), flagging a vague rubric
  export-sentinel  write the labels as a sentinel set (verdict.sentinel JSONL)
  correlate        judge verdicts vs user signals (span events in every lake of the tenant - the data dir,
                   --lake-dir, --lake-url - and/or a JSONL side file)

Output is JSON on stdout. Exit codes: 0 ok; 1 `correlate --fail-on` and the status is a failing one
(the JSON is still printed); 2 bad input, unknown item or storage problem, as the one error envelope
{"error": {"code", "message"}} on stderr (docs/cli.md), never a traceback (VERDICT_DEBUG=1 re-raises
internal errors). Codes: invalid_config, tenant_required, invalid_tenant (exit 3), item_not_found, no_labels,
evaluator_ambiguous, invalid_signals, storage_error, storage_locked, internal_error (docs/review.md).

examples:
  verdict review list --data-dir ./verdict-data --tenant acme --status pending
  verdict review label 3f2a9c1e --tenant acme --label relevance=FAIL --critique "answers another question" \\
      --reviewer alice
  verdict review agreement --tenant acme --evaluator quality
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from verdict import environment
from verdict.cli_runner import add_data_dir, add_tenant, checked_tenant
from verdict.tenancy import TenantId
from verdict_daemon import lakes
from verdict_daemon.errors import DaemonError

EXIT_OK, EXIT_FAILING = 0, 1
# `correlate --fail-on X`: the statuses that exit 1 (a CI step that must not trust an uncalibrated judge).
FAIL_ON = {"miscalibrated": frozenset({"miscalibrated"}),
           "uncalibrated": frozenset({"miscalibrated", "insufficient_data"})}
_ITEM_ID = re.compile(r"^[0-9a-f]{8,64}$")
_FINGERPRINT = re.compile(r"^[0-9a-f]{8,128}$")
_DIMENSION = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


def _int_in(low: int, high: int | None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low or (high is not None and value > high):
            bound = f"[{low}, {high}]" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"{value} is outside {bound}")
        return value
    return parse


def _float_in(low: float, high: float, *, open_low: bool = False):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (low < value <= high if open_low else low <= value <= high):
            raise argparse.ArgumentTypeError(f"{value} is outside {'(' if open_low else '['}{low}, {high}]")
        return value
    return parse


def _matching(pattern: re.Pattern, what: str):
    def parse(text: str) -> str:
        if not pattern.match(text):
            raise argparse.ArgumentTypeError(f"{text!r} is not a valid {what}")
        return text
    return parse


def _label(text: str) -> tuple[str, str]:
    dimension, sep, label = text.partition("=")
    if not sep or not _DIMENSION.match(dimension) or label not in ("PASS", "FAIL"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected DIMENSION=PASS or DIMENSION=FAIL (exactly)")
    return dimension, label


def _evaluator_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--evaluator", help="evaluator name (from the daemon config)")
    group.add_argument("--fingerprint", type=_matching(_FINGERPRINT, "fingerprint (hex)"),
                       help="evaluator fingerprint (needed when a name maps to several)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n\n")[0]
    parser.epilog = __doc__.split("\n\n", 1)[1]
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    common = argparse.ArgumentParser(add_help=False)
    add_data_dir(common, "directory holding state.duckdb and the span lake (default: ./verdict-data)",
                 default="./verdict-data")
    add_tenant(common, "tenant")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    show_list = actions.add_parser("list", parents=[common], help="items queued for review")
    show_list.add_argument("--status", choices=("all", "pending", "labelled"), default="all",
                           help="pending: no label yet (default: all)")
    show_list.add_argument("--reason", choices=("unclear", "ensemble_disagreement", "inconsistent", "audit"),
                           help="only items queued for this reason")
    show_list.add_argument("--limit", type=_int_in(1, 500), default=50, help="page size, 1-500 (default 50)")
    show_list.add_argument("--offset", type=_int_in(0, None), default=0, help="items to skip (default 0)")

    show = actions.add_parser("show", parents=[common], help="one item with its conversation and rationale")
    show.add_argument("item", type=_matching(_ITEM_ID, "item id (hex)"), help="item id from `list`")

    label = actions.add_parser("label", parents=[common], help="record a reviewer's labels on one item")
    label.add_argument("item", type=_matching(_ITEM_ID, "item id (hex)"), help="item id from `list`")
    label.add_argument("--label", dest="labels", type=_label, action="append", required=True,
                       metavar="DIMENSION=PASS|FAIL", help="repeat for several dimensions")
    label.add_argument("--critique", default="",
                       help="one line: why (stored redacted); required when a label is FAIL")
    label.add_argument("--reviewer", default=environment.get("VERDICT_REVIEWER"),
                       help="who labels (letters, digits, . _ @ + -) [env VERDICT_REVIEWER]")

    agreement = actions.add_parser("agreement", parents=[common], help="judge vs human labels per dimension")
    _evaluator_options(agreement)
    agreement.add_argument("--positive", choices=("FAIL", "PASS"), default="FAIL",
                           help="the class TPR is about (default FAIL: the judge's job is catching failures)")
    agreement.add_argument("--confidence", type=_float_in(0, 1, open_low=True), default=0.95,
                           help="interval level in (0, 1) (default 0.95)")
    agreement.add_argument("--min-human-ac1", type=_float_in(-1, 1), default=None,
                           help="reviewers' AC1 under this flags the rubric (default 0.6, docs/review.md)")
    agreement.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0,
                           help="bootstrap seed of the reviewer-agreement intervals (default 0)")

    export = actions.add_parser("export-sentinel", parents=[common], help="write the labels as a sentinel set")
    export.add_argument("--out", type=Path, required=True, help="JSONL file to write (replaced atomically)")
    _evaluator_options(export)  # optional here: only that evaluator's labels (its rubric's dimensions)

    corr = actions.add_parser("correlate", parents=[common], help="judge verdicts vs user signals")
    _evaluator_options(corr)
    corr.add_argument("--signals-file", type=Path, help="JSONL side file {trace_id, signal, timestamp?} "
                      "(added to the span events in the lakes)")
    lakes.add_arguments(corr)  # the signal events are wherever the tenant's spans are, as for the daemon
    corr.add_argument("--dimension", type=_matching(_DIMENSION, "dimension name"),
                      help="correlate this dimension's verdict (default: the overall verdict)")
    corr.add_argument("--min-pairs", type=_int_in(2, None), default=30,
                      help="fewer usable traces -> insufficient_data (default 30)")
    corr.add_argument("--min-ac1", type=_float_in(-1, 1), default=0.4,
                      help="AC1 lower bound needed for `calibrated` (default 0.4)")
    corr.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0, help="bootstrap seed (default 0)")
    corr.add_argument("--resamples", type=_int_in(100, 100_000), default=2000,
                      help="bootstrap resamples (default 2000)")
    corr.add_argument("--fail-on", choices=tuple(FAIL_ON),
                      help="exit 1 when the status is miscalibrated, or (uncalibrated) anything but calibrated "
                      "(default: exit 0 whatever the status)")


def _tenant(args: argparse.Namespace) -> TenantId:
    return checked_tenant(args.tenant)


def _store(args: argparse.Namespace):
    from verdict_daemon.store.state import StateStore

    if not args.data_dir.is_dir():
        raise DaemonError("invalid_config", f"--data-dir: {args.data_dir} is not a directory")
    return StateStore(args.data_dir)


def _dispatch(args: argparse.Namespace) -> dict[str, Any]:
    from verdict_daemon import review

    tenant = _tenant(args)
    store = _store(args)
    if args.action == "list":
        page = review.list_items(store, tenant, status=args.status, reason=args.reason, limit=args.limit,
                                 offset=args.offset)
        return {"tenant_id": tenant, **asdict(page), "summary": review.queue_summary(store, tenant)}
    if args.action == "show":
        detail = review.get_item(store, tenant, args.item)
        return {"tenant_id": tenant, **asdict(detail)}
    if args.action == "label":
        if not args.reviewer:
            raise DaemonError("invalid_config", "give --reviewer (or set VERDICT_REVIEWER)")
        labels = dict(args.labels)
        if len(labels) != len(args.labels):
            raise DaemonError("invalid_config", "--label: a dimension is labelled twice in one command")
        try:
            records = review.record_labels(store, tenant, args.item, labels, critique=args.critique,
                                           reviewer=args.reviewer)
        except ValueError as exc:
            raise DaemonError("invalid_config", str(exc)) from None
        return {"tenant_id": tenant, "item_id": args.item, "recorded": [asdict(r) for r in records]}
    if args.action == "agreement":
        fingerprint, dimensions = review.review_agreement(store, tenant, evaluator=args.evaluator,
                                                          fingerprint=args.fingerprint, positive=args.positive,
                                                          confidence=args.confidence,
                                                          min_human_ac1=args.min_human_ac1, seed=args.seed)
        return {"tenant_id": tenant, "fingerprint": fingerprint, "positive": args.positive,
                "dimensions": [d.to_dict() for d in dimensions],
                "vague_rubric": [d.dimension for d in dimensions if d.humans.status == "below_threshold"]}
    if args.action == "export-sentinel":
        written = review.export_sentinel(store, tenant, args.out, evaluator=args.evaluator,
                                         fingerprint=args.fingerprint)
        return {"tenant_id": tenant, "out": str(args.out), "examples": written}
    return _correlate(args, tenant, store)


def _correlate(args: argparse.Namespace, tenant: TenantId, store) -> dict[str, Any]:
    from verdict.correlate import CorrelationError, load_signal_file
    from verdict_daemon.review.correlation import correlate_tenant

    try:
        extra = load_signal_file(args.signals_file) if args.signals_file is not None else []
    except CorrelationError as exc:
        raise DaemonError("invalid_signals", str(exc)) from None
    try:
        result = correlate_tenant(store, lakes.from_arguments(args.data_dir, args), tenant, extra_signals=extra,
                                  evaluator=args.evaluator,
                                  fingerprint=args.fingerprint, dimension=args.dimension,
                                  minimum_pairs=args.min_pairs, min_ac1=args.min_ac1, n_resamples=args.resamples,
                                  seed=args.seed)
    except CorrelationError as exc:
        raise DaemonError("invalid_config", str(exc)) from None
    return {"tenant_id": tenant, "dimension": args.dimension or "overall", **result.to_dict()}


def run(args: argparse.Namespace) -> int:
    if args.action is None:
        raise DaemonError("invalid_config", "give an action: list, show, label, agreement, export-sentinel or correlate")
    document = _dispatch(args)
    sys.stdout.write(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    if args.action == "correlate" and args.fail_on and document["status"] in FAIL_ON[args.fail_on]:
        return EXIT_FAILING
    return EXIT_OK
