"""`verdict gate`: run a judge over a fixed suite of regression cases and fail CI below a pass rate.

    verdict gate --cases regression_cases.jsonl --judge-model openai/gpt-4o-mini --min-pass-rate 0.9 \
        [--use-lower-bound] [--rubric rubric.yaml] [--out result.json] [--json]

Cases have the sentinel shape (verdict.sentinel); the gate itself is `verdict.gate.evaluate_gate`. Exit codes:
0 pass rate (or its 95 % Wilson lower bound, with --use-lower-bound) at or above the threshold; 1 below; 2 on
judge errors or bad input, with one JSON line {"error": {"code", "message"}} on stderr (code from ERROR_CODES,
a subset of the `verdict` CLI's closed set verdict.cli_errors.ERROR_CODES) and no traceback. Artifacts hold
redacted content only.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from verdict.cli_errors import CliError, ErrorCode
from verdict.gate import GateResult, evaluate_gate
from verdict.models.base import CONFIGURATION_KINDS
from verdict.sentinel import Outcome, SentinelError

# The codes of the one closed set (verdict.cli_errors, docs/cli.md) that `verdict gate` reports.
ERROR_CODES: tuple[ErrorCode, ...] = ("invalid_cases", "invalid_config", "provider_unavailable", "judge_error")


class GateError(CliError):
    """A failure with a code from ERROR_CODES and a message safe to print."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown gate error code {code!r}")
        super().__init__(code, message)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 pass; 1 below the threshold; 2 judge errors or bad input, as one JSON line "
                     '{"error": {"code": CODE, "message": ...}} on stderr, CODE one of ' + ", ".join(ERROR_CODES)
                     + "; never a traceback. See docs/trust.md.\n\nexample:\n  verdict gate --cases "
                     "regression_cases.jsonl --judge-model openai/gpt-4o-mini --min-pass-rate 0.9 --use-lower-bound")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--cases", required=True, type=Path, help="JSONL regression cases (sentinel shape)")
    parser.add_argument("--judge-model", required=True,
                        help='"openai/<model>", "anthropic/<model>" or "module:attribute" naming a verdict Model')
    parser.add_argument("--min-pass-rate", required=True, type=float, help="threshold in [0, 1]")
    parser.add_argument("--use-lower-bound", action="store_true",
                        help="gate on the 95%% Wilson lower bound of the pass rate instead of the rate")
    parser.add_argument("--rubric", type=Path, help="rubric YAML file (default: the verdict-default rubric)")
    parser.add_argument("--out", type=Path, help="write the JSON result here")
    parser.add_argument("--json", action="store_true", help="print the JSON result instead of the table")


def run(args: argparse.Namespace) -> int:
    result = _gate(args)
    document = json.dumps(result.to_dict(), indent=2)
    print(document if args.json else result.table())
    if args.out is not None:
        try:
            args.out.write_text(document + "\n", encoding="utf-8")
        except OSError as exc:
            raise GateError("invalid_config", f"--out {args.out}: cannot write ({exc.strerror})") from None
    if result.errors:  # after the table: the cases that were judged stay visible
        raise GateError(_error_code(result), f"{result.errors} case(s) could not be judged; see the results")
    return 0 if result.passed else 1


def _gate(args: argparse.Namespace) -> GateResult:
    from verdict.sentinel import load_examples

    if not 0.0 <= args.min_pass_rate <= 1.0:
        raise GateError("invalid_config", f"--min-pass-rate must be in [0, 1], got {args.min_pass_rate}")
    rubric = _rubric(args.rubric)
    judge = _judge(args.judge_model, rubric)
    try:
        cases = load_examples(args.cases, rubric, require_labels=False)
    except SentinelError as exc:
        raise GateError("invalid_cases", str(exc)) from None

    def progress(done: int, total: int) -> None:
        print(f"gate: {done}/{total} cases judged", file=sys.stderr, flush=True)

    return evaluate_gate(cases, judge, min_pass_rate=args.min_pass_rate, use_lower_bound=args.use_lower_bound,
                         progress=progress)


def _rubric(path: Path | None):
    from verdict.judges.rubric import DEFAULT_RUBRIC, RubricError, load_rubric

    if path is None:
        return DEFAULT_RUBRIC
    try:
        return load_rubric(path)
    except RubricError as exc:
        raise GateError("invalid_config", f"--rubric: {exc}") from None


def _judge(spec: str, rubric: Any):
    from verdict.graph.errors import ConfigurationError
    from verdict.judges.judge import Judge

    try:
        return Judge(_model(spec), rubric)
    except ConfigurationError as exc:
        code: ErrorCode = "provider_unavailable" if "no API key" in str(exc) else "invalid_config"
        raise GateError(code, f"--judge-model {spec!r}: {exc}") from None


def _model(spec: str) -> Any:
    """A provider model string as is, or the Model a "module:attribute" reference names."""
    from verdict.models.base import Model

    if "/" in spec or ":" not in spec:
        return spec
    module_name, _, attribute = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise GateError("invalid_config", f"--judge-model {spec!r}: cannot load it ({type(exc).__name__})") \
            from None
    if not isinstance(target, Model):
        raise GateError("invalid_config",
                        f"--judge-model {spec!r} names a {type(target).__name__}, not a verdict Model")
    return target


def _error_code(result: GateResult) -> ErrorCode:
    """provider_unavailable when nothing was usable and every failure was a provider outage; a refusal of
    the request (unsupported_parameter, refused, bad_request) is the judge's configuration: judge_error."""
    failures = [r.error or "" for r in result.results if r.outcome is Outcome.ERROR]
    if result.usable == 0 and all(_is_outage(f) for f in failures):
        return "provider_unavailable"
    return "judge_error"


def _is_outage(failure: str) -> bool:
    """Whether a case's error text ("model: <kind>: ...") is a provider failure other than a refusal."""
    source, _, rest = failure.partition(": ")
    return source == "model" and rest.partition(":")[0] not in CONFIGURATION_KINDS
