"""`verdict probes`: run a behaviour-probe suite against a target model (verdict.probes), list and show suites.

    verdict probes run --suite default --target-model openai/gpt-4o --judge-model openai/gpt-4o-mini \
        --out run.json [--min-pass-rate 1.0] [--min-category-pass-rate R] [--json]
    verdict probes run ... --data-dir DIR --tenant T    # into DIR/probes/tenant=T/, shown in T's report only
    verdict probes list [--json]
    verdict probes show default [--json]

Exit codes of `run`: 0 the weighted suite pass rate (and every category, with --min-category-pass-rate)
is at or above the threshold; 1 below; 2 execution errors (target, follow-up or judge failures) or bad
input, with one JSON line `{"error": {"code": CODE, "message": ...}}` on stderr and no traceback (VERDICT_DEBUG=1
shows it). The same run, scheduled, is the daemon's `probes` job (verdict_daemon.service.probe_job, [probes] in
verdict.toml).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, cast, get_args

from verdict.cli_runner import checked_tenant
from verdict.models.base import CONFIGURATION_KINDS, ModelErrorKind
from verdict_daemon.errors import DaemonError
from verdict_daemon.probes import PROBES_DIR, format_rate, load_suite_spec, resolve_model_spec

EXIT_PASS, EXIT_BELOW = 0, 1
_MODEL_HELP = ('"openai/<model>", "anthropic/<model>", or "package.module:attribute" naming a verdict Model '
               "(or a function returning one)")
# A provider's outage as the runner words it ("target: server_error: ...", "judge: model: timeout: ..."); a
# refusal of the request (unsupported_parameter, refused, bad_request) is configuration, not an outage.
_OUTAGE_KINDS = [k for k in get_args(ModelErrorKind) if k not in CONFIGURATION_KINDS]
_PROVIDER_FAILURE = re.compile(rf"(?:target|follow_up|judge: model): (?:{'|'.join(_OUTAGE_KINDS)}):")


_EPILOG = """\
exit codes: 0 the gate passed (run) or the suite is valid (list, show); 1 (run) the weighted pass rate,
or a category's with --min-category-pass-rate, is below the threshold; 2 execution errors (a target,
follow-up or judge call failed: the table and --out still show every probe) or bad input. On 2, one
JSON line {"error": {"code": CODE, "message": ...}} on stderr, CODE one of invalid_suite, invalid_config,
tenant_required, storage_error, provider_unavailable, probe_error, internal_error; never a traceback (VERDICT_DEBUG=1
shows it). An invalid --tenant is invalid_tenant, exit 3.

--data-dir DIR --tenant T writes the run to DIR/probes/tenant=T/ (stamped with T), where `verdict report
--tenant T` finds it; no other tenant's report shows it. --out FILE is the caller's own file (no tenant).

examples:
  verdict probes run --target-model openai/gpt-4o --judge-model openai/gpt-4o-mini --out run.json
  verdict probes run --target-model openai/gpt-4o --judge-model openai/gpt-4o-mini \
      --data-dir ./verdict-data --tenant acme
  verdict probes run --suite my-suite.yaml --target-model openai/llama3.1 \\
      --target-base-url http://127.0.0.1:11434/v1 --judge-model anthropic/claude-haiku-4-5 --min-pass-rate 0.9
  verdict probes show default
See docs/probes.md (suite YAML, artifacts, the daemon's [probes] job)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="run a suite against a target model and gate on its pass rate",
                             description="Run a probe suite: ask the target, judge each expectation, gate.",
                             epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--suite", default="default", metavar="NAME|FILE",
                     help='a bundled suite name (default: "default") or a suite YAML file')
    run.add_argument("--target-model", required=True, metavar="MODEL", help=f"the model under test: {_MODEL_HELP}")
    run.add_argument("--judge-model", required=True, metavar="MODEL", help=f"the judge: {_MODEL_HELP}")
    run.add_argument("--min-pass-rate", type=float, default=1.0, metavar="RATE",
                     help="threshold in [0, 1] for the weighted suite pass rate, inclusive (default 1.0: every "
                     "probe must pass)")
    run.add_argument("--min-category-pass-rate", type=float, metavar="RATE",
                     help="also require every category's weighted pass rate to reach this (default: not gated)")
    run.add_argument("--out", type=Path, metavar="FILE",
                     help="write the run artifact here (JSON, redacted; written atomically, also when probes errored)")
    run.add_argument("--json", action="store_true", help="print the artifact instead of the table")
    endpoints = run.add_argument_group("endpoints and calls")
    endpoints.add_argument("--target-base-url", metavar="URL", help="OpenAI/Anthropic-compatible endpoint of the "
                           "target (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL; keys from OPENAI_API_KEY / "
                           "ANTHROPIC_API_KEY)")
    endpoints.add_argument("--judge-base-url", metavar="URL",
                           help="endpoint of the judge (default: the provider's environment variable)")
    endpoints.add_argument("--concurrency", type=int, default=8, metavar="N", help="calls in flight (default 8)")
    store = run.add_argument_group("the data dir's probe store (what `verdict report` shows)")
    store.add_argument("--data-dir", type=Path, metavar="DIR",
                       help="also write the run into this data dir's probe store, DIR/probes/tenant=TENANT/, where "
                       "`verdict report --tenant TENANT` shows it (needs --tenant)")
    store.add_argument("--tenant", metavar="TENANT",
                       help="the tenant the run is for, stamped into the artifact; required with --data-dir (given "
                       "explicitly: VERDICT_TENANT is not read, so a stray variable never claims a CI run)")
    listing = actions.add_parser("list", help="list the bundled suites", description="List the bundled suites.",
                                 epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = actions.add_parser("show", help="validate a suite and show its probes",
                              description="Validate a suite (bundled name or YAML) and show its probes.",
                              epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("suite", metavar="NAME|FILE", help="a bundled suite name or a suite YAML file")
    show.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    return {"run": _run, "list": _list, "show": _show}[args.action](args)


# --- run ------------------------------------------------------------------------------------------------------
def _run(args: argparse.Namespace) -> int:
    from verdict.probes.artifact import write_artifact, write_tenant_artifact
    from verdict.probes.runner import run_suite

    for flag, value in (("--min-pass-rate", args.min_pass_rate), ("--min-category-pass-rate",
                                                                   args.min_category_pass_rate)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise DaemonError("invalid_config", f"{flag} must be in [0, 1], got {value}")
    if args.concurrency < 1:
        raise DaemonError("invalid_config", f"--concurrency must be at least 1, got {args.concurrency}")
    if args.out is not None and (args.out.is_dir() or not os.access(args.out.parent.resolve(), os.W_OK)):
        problem = "is a directory" if args.out.is_dir() else "the directory does not exist or is not writable"
        raise DaemonError("invalid_config", f"--out {args.out}: {problem}")
    tenant = _checked_tenant(args.tenant, args.data_dir)
    suite = load_suite_spec(args.suite)
    target = resolve_model_spec(args.target_model, args.target_base_url, "--target-model")
    judge = resolve_model_spec(args.judge_model, args.judge_base_url, "--judge-model")
    result = run_suite(suite, target, judge, min_pass_rate=args.min_pass_rate,
                       min_category_pass_rate=args.min_category_pass_rate, max_workers=args.concurrency,
                       progress=lambda message: print(f"probes: {message}", file=sys.stderr, flush=True))
    result = replace(result, tenant=tenant)
    print(json.dumps(result.to_dict(), indent=2) if args.json else table(result))
    if args.out is not None:
        try:
            write_artifact(result, args.out)
        except OSError as exc:
            raise DaemonError("invalid_config", f"--out {args.out}: cannot write ({exc.strerror})") from None
    if args.data_dir is not None:
        try:
            # _checked_tenant requires a tenant with --data-dir
            path = write_tenant_artifact(result, args.data_dir / PROBES_DIR, cast(str, tenant))
        except OSError as exc:
            raise DaemonError("storage_error", f"--data-dir {args.data_dir}: cannot write the run ({exc.strerror})") \
                from None
        print(f"probes: wrote {path}", file=sys.stderr)
    return exit_code(result)


def _checked_tenant(tenant: str | None, data_dir: Path | None) -> str | None:
    """The run's tenant (validated), required when the run goes into a data dir; checked before any call."""
    if data_dir is not None:
        if not tenant:
            raise DaemonError("tenant_required", "--data-dir needs --tenant: a run in a data dir belongs to one tenant")
        if not data_dir.is_dir():
            raise DaemonError("invalid_config", f"--data-dir {data_dir}: not a directory")
    return None if tenant is None else checked_tenant(tenant)


def exit_code(result: Any) -> int:
    """A DaemonError (provider_unavailable or probe_error, exit 2) on execution errors, else 0 when the gate
    passes, 1 when not."""
    if result.errors:
        expectations = [e for r in result.results for e in r.expectations]
        down = all(e.error is not None and _PROVIDER_FAILURE.match(e.error) for e in expectations)
        raise DaemonError("provider_unavailable" if down else "probe_error",
                          f"{result.errors} of {len(result.results)} probe(s) could not be executed or judged; "
                          "their expectations are ERROR (see the results)")
    return EXIT_PASS if result.gate.passed else EXIT_BELOW


def table(result: Any) -> str:
    """One row per probe (failing expectations named), one per category, and the gate line."""
    name_width = max(len("probe"), *(len(r.name) for r in result.results))
    category_width = max(len("category"), *(len(c) for c in result.categories))
    lines = [f"{'probe':<{name_width}}  {'category':<{category_width}}  weight  outcome  detail"]
    for r in result.results:
        detail = r.error if r.error else ", ".join(f"{e.dimension}={e.verdict} (expected {e.expected})"
                                                   for e in r.expectations if not e.passed)
        lines.append(f"{r.name:<{name_width}}  {r.category:<{category_width}}  {r.weight:>6g}  "
                     f"{r.outcome.value:<7}  {detail}".rstrip())
    lines += ["", f"{'category':<{category_width}}  probes  passed  errors  pass rate  agreement"]
    for category, s in result.categories.items():
        lines.append(f"{category:<{category_width}}  {s.probes:>6}  {s.passed:>6}  {s.errors:>6}  "
                     f"{format_rate(s.pass_rate):>9}  {format_rate(s.expectation_agreement):>9}")
    s, gate = result.score, result.gate
    threshold = f"pass rate >= {result.min_pass_rate:g}"
    if result.min_category_pass_rate is not None:
        threshold += f", every category >= {result.min_category_pass_rate:g}"
    lines += ["", f"suite {result.suite_name} {result.suite_version} on {result.target_model} (judge "
              f"{result.judge_model}): {s.passed}/{s.probes} probes passed, {s.errors} error(s); weighted pass "
              f"rate {format_rate(s.pass_rate)}, expectation agreement {format_rate(s.expectation_agreement)}; gate: "
              f"{threshold} -> {'PASS' if gate.passed else 'FAIL'}"]
    return "\n".join(lines)


# --- list / show ----------------------------------------------------------------------------------------------
def _list(args: argparse.Namespace) -> int:
    from verdict.probes.suite import bundled_suites

    suites = [load_suite_spec(name) for name in bundled_suites()]
    rows = [{"name": s.name, "version": s.version, "probes": len(s.probes), "categories": list(s.categories),
             "fingerprint": s.fingerprint} for s in suites]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(f"{row['name']} {row['version']}: {row['probes']} probes ({', '.join(row['categories'])})")
    return EXIT_PASS


def _show(args: argparse.Namespace) -> int:
    suite = load_suite_spec(args.suite)
    if args.json:
        print(json.dumps({"name": suite.name, "version": suite.version, "fingerprint": suite.fingerprint,
                          "rubric": suite.rubric.canonical(), "target_params": dict(suite.target_params),
                          "probes": [p.canonical() for p in suite.probes]}, indent=2))
        return EXIT_PASS
    width = max(len(p.name) for p in suite.probes)
    print(f"suite {suite.name} {suite.version} (rubric {suite.rubric.name} {suite.rubric.version}, "
          f"fingerprint {suite.fingerprint[:12]})")
    for p in suite.probes:
        expect = ", ".join(f"{e.dimension}={e.label}" for e in p.expectations)
        print(f"{p.name:<{width}}  {p.category}  weight {p.weight:g}  turns {p.turns}  expect {expect}")
    return EXIT_PASS
