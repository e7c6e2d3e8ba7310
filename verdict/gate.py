"""`verdict gate`: run a judge over a fixed suite of regression cases and fail CI below a pass rate.

    verdict gate --cases regression_cases.jsonl --judge-model openai/gpt-4o-mini --min-pass-rate 0.9 \
        [--use-lower-bound] [--rubric rubric.yaml] [--out result.json] [--json]

Cases have the sentinel shape (verdict.sentinel). Exit codes: 0 pass rate (or its 95 % Wilson lower
bound, with --use-lower-bound) at or above the threshold; 1 below; 2 on judge errors or bad input, with
one JSON line {"error": {"code", "message"}} on stderr (code from ERROR_CODES, a subset of the `verdict`
CLI's closed set verdict.cli_errors.ERROR_CODES) and no traceback. Artifacts hold redacted content only.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verdict.models.base import CONFIGURATION_KINDS
from verdict.sentinel import (
    ExampleResult,
    Outcome,
    SentinelError,
    SentinelSet,
    finite_bounds,
    grade_examples,
    pass_rate,
    result_dict,
)

ERROR_CODES: dict[str, str] = {
    "invalid_cases": "the cases file is missing, malformed, repeats an id or labels an unknown dimension",
    "invalid_config": "an option is invalid: judge model, rubric file, threshold",
    "provider_unavailable": "the judge model could not be reached (no credentials, or every call failed at the provider)",
    "judge_error": "the judge produced no usable judgment for at least one case",
}


class GateError(Exception):
    """A failure with a code from ERROR_CODES and a message safe to print."""

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown gate error code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class GateResult:
    passed: bool  # the gated figure is at or above the threshold and no case errored
    cases_fingerprint: str
    evaluator_fingerprint: str
    cases: int
    usable: int
    errors: int
    passes: int
    pass_rate: float | None
    pass_rate_low: float | None
    pass_rate_high: float | None
    gated_on: str  # "pass_rate" or "wilson_lower_bound"
    min_pass_rate: float
    results: tuple[ExampleResult, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "cases_fingerprint": self.cases_fingerprint,
                "evaluator_fingerprint": self.evaluator_fingerprint, "cases": self.cases, "usable": self.usable,
                "errors": self.errors, "passes": self.passes, "pass_rate": self.pass_rate,
                "pass_rate_low": self.pass_rate_low, "pass_rate_high": self.pass_rate_high,
                "gated_on": self.gated_on, "min_pass_rate": self.min_pass_rate,
                "results": [result_dict(r) for r in self.results]}

    def table(self) -> str:
        """A plain-text table of every case and the summary line (redacted content only)."""
        width = max([len("case"), *(len(r.id) for r in self.results)])
        lines = [f"{'case':<{width}}  outcome  detail"]
        for r in self.results:
            detail = r.error if r.outcome is Outcome.ERROR else ", ".join(
                f"{d}={dict(r.verdicts).get(d, 'not graded')}" for d in r.mismatches)
            lines.append(f"{r.id:<{width}}  {r.outcome.value:<7}  {detail or ''}".rstrip())
        rate = "n/a" if self.pass_rate is None else f"{self.pass_rate:.3f}"
        low = "n/a" if self.pass_rate_low is None else f"{self.pass_rate_low:.3f}"
        high = "n/a" if self.pass_rate_high is None else f"{self.pass_rate_high:.3f}"
        lines.append(f"{self.passes}/{self.usable} passed, {self.errors} error(s); pass rate {rate} "
                     f"(95% Wilson {low}-{high}); gate: {self.gated_on} >= {self.min_pass_rate} -> "
                     f"{'PASS' if self.passed else 'FAIL'}")
        return "\n".join(lines)


def evaluate_gate(cases: SentinelSet, judge: Any, *, min_pass_rate: float, use_lower_bound: bool = False,
                  progress: Callable[[int, int], None] | None = None, max_workers: int = 16) -> GateResult:
    """Grade every case; `progress(done, total)` is called after each batch of cases."""
    if not isinstance(min_pass_rate, int | float) or not 0.0 <= min_pass_rate <= 1.0:
        raise ValueError(f"min_pass_rate must be in [0, 1], got {min_pass_rate!r}")
    results = grade_examples(judge, cases.examples, max_workers=max_workers, progress=progress)
    rate = pass_rate(results)
    gated_on = "wilson_lower_bound" if use_lower_bound else "pass_rate"
    value = rate.low if use_lower_bound else rate.value
    errors = len(results) - rate.trials
    passed = errors == 0 and rate.trials > 0 and value >= min_pass_rate
    return GateResult(passed, cases.fingerprint, judge.fingerprint, len(results), rate.trials, errors,
                      rate.successes, *finite_bounds(rate), gated_on, float(min_pass_rate), tuple(results))


# --- command line --------------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 pass; 1 below the threshold; 2 judge errors or bad input, as one JSON line "
                     '{"error": {"code": CODE, "message": ...}} on stderr, CODE one of ' + ", ".join(ERROR_CODES)
                     + "; never a traceback. See docs/trust.md.")
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
    # The `verdict` CLI's one error printer; imported here so that `import verdict.gate` (verdict.testing,
    # apps) never loads verdict_daemon.
    from verdict_daemon.errors import print_error

    try:
        result = _gate(args)
    except GateError as exc:
        print_error(exc.code, exc.message)
        return 2
    document = json.dumps(result.to_dict(), indent=2)
    print(document if args.json else result.table())
    if args.out is not None:
        try:
            args.out.write_text(document + "\n", encoding="utf-8")
        except OSError as exc:
            print_error("invalid_config", f"--out {args.out}: cannot write ({exc.strerror})")
            return 2
    if result.errors:
        print_error(_error_code(result), f"{result.errors} case(s) could not be judged; see the results")
        return 2
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
        code = "provider_unavailable" if "no API key" in str(exc) else "invalid_config"
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


def _error_code(result: GateResult) -> str:
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


def main(argv: list[str] | None = None) -> int:
    """`python -m verdict.gate` is `verdict gate`, usage errors included (the dispatcher's JSON error)."""
    from verdict_daemon.cli import main as verdict

    return verdict(["gate", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
