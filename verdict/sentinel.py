"""Sentinel health: measure the judge against a fixed, human-labelled set before trusting its numbers.

A sentinel file is JSONL, one example per line::

    {"id": "s1", "query": "…", "response": "…", "context": "…", "labels": {"relevance": "PASS"}}

`context` is optional (a string or a list of strings); labels are exactly "PASS" or "FAIL" per rubric
dimension. `history` (the conversation so far) and `trajectory` (an agent run's tool steps) are optional strings:
the background the labelled answer was shown with (a judge built with `history=True` / `trajectory=True` reads
them; one without refuses such an example). The same shape serves the CI gate's regression cases (verdict.gate), where labels may be
omitted. An example *passes* only when every declared label matches the judge's verdict (UNCLEAR never
matches); an unlabelled case passes when every graded dimension is PASS.

Health is gated on examples, the independent unit, never on (example, dimension) pairs: `healthy` needs
at least `minimum_examples` usable examples, no execution error, and the 95 % Wilson lower bound of the
example pass rate at or above `threshold`. Per-dimension agreement and Cohen's kappa are diagnostics.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from verdict.judges.judge import GradingItem
from verdict.judges.rubric import DEFAULT_RUBRIC, Rubric
from verdict.redact import redact_text
from verdict.text_files import json_object_line, read_text

LABELS = ("PASS", "FAIL")
_KEYS = {"id", "query", "response", "context", "labels", "history", "trajectory"}
# Kappa's categories: the judge may also say UNCLEAR, which never agrees with a human PASS/FAIL.
_KAPPA_CATEGORIES = ("PASS", "FAIL", "UNCLEAR")
_BATCH = 50  # examples per engine run: large enough to use the workers, small enough for steady progress


class SentinelError(ValueError):
    """A sentinel or case file is invalid; the message names the file and the line."""


@dataclass(frozen=True, slots=True)
class SentinelExample:
    id: str
    response: str
    query: str | None = None
    context: str | tuple[str, ...] | None = None
    labels: tuple[tuple[str, str], ...] = ()  # (dimension, PASS|FAIL), sorted by dimension
    history: str | None = None  # the conversation so far the answer was labelled with
    trajectory: str | None = None  # the tool trajectory the answer was labelled with

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    def item(self) -> GradingItem:
        return GradingItem(self.response, self.query, self.context, self.history, self.trajectory)

    def canonical(self) -> dict[str, Any]:
        context = list(self.context) if isinstance(self.context, tuple) else self.context
        # history and trajectory only when given: a set without them keeps the fingerprint it had before them
        return {"id": self.id, "query": self.query, "response": self.response, "context": context,
                "labels": dict(self.labels),
                **{k: v for k, v in (("history", self.history), ("trajectory", self.trajectory)) if v is not None}}


@dataclass(frozen=True, slots=True)
class SentinelSet:
    source: str
    examples: tuple[SentinelExample, ...]
    fingerprint: str

    def __iter__(self):
        return iter(self.examples)


def examples_fingerprint(examples: Iterable[SentinelExample]) -> str:
    """SHA-256 over canonical JSON of the examples sorted by id: line order and formatting do not count."""
    content = sorted((e.canonical() for e in examples), key=lambda e: e["id"])
    blob = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def load_sentinel_set(path: str | Path, rubric: Rubric = DEFAULT_RUBRIC) -> SentinelSet:
    """A human-labelled sentinel set; every example must declare at least one label."""
    return load_examples(path, rubric, require_labels=True)


def load_examples(path: str | Path, rubric: Rubric = DEFAULT_RUBRIC, *, require_labels: bool) -> SentinelSet:
    """Parse a JSONL file of examples; any problem raises SentinelError naming the file and the line."""
    path = Path(path)
    text = read_text(path, "file", SentinelError)
    examples: list[SentinelExample] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        example = _example(line, where, rubric, require_labels)
        if example.id in seen:
            raise SentinelError(f"{where}: duplicate id {example.id!r} (first on line {seen[example.id]})")
        seen[example.id] = number
        examples.append(example)
    if not examples:
        raise SentinelError(f"{path}: no examples")
    return SentinelSet(str(path), tuple(examples), examples_fingerprint(examples))


def _example(line: str, where: str, rubric: Rubric, require_labels: bool) -> SentinelExample:
    data = json_object_line(line, where, _KEYS, SentinelError)
    example_id = data.get("id")
    if not isinstance(example_id, str) or not example_id.strip():
        raise SentinelError(f"{where}: 'id' must be a non-empty string")
    response = data.get("response")
    if not isinstance(response, str):
        raise SentinelError(f"{where}: 'response' must be a string")
    for key in ("query", "history", "trajectory"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise SentinelError(f"{where}: {key!r} must be a string or null")
    context = data.get("context")
    if isinstance(context, list) and all(isinstance(doc, str) for doc in context):
        context = tuple(context)
    elif context is not None and not isinstance(context, str):
        raise SentinelError(f"{where}: 'context' must be a string, a list of strings or null")
    labels = _labels(data.get("labels", {}), where, rubric)
    if require_labels and not labels:
        raise SentinelError(f"{where}: example {example_id!r} declares no labels")
    return SentinelExample(example_id, response, data.get("query"), context, labels, data.get("history"),
                           data.get("trajectory"))


def _labels(raw: Any, where: str, rubric: Rubric) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise SentinelError(f"{where}: 'labels' must be an object of dimension -> PASS|FAIL")
    for dimension, label in raw.items():
        if dimension not in rubric.dimension_names:
            raise SentinelError(f"{where}: dimension {dimension!r} is not in rubric {rubric.name!r} "
                                f"(has: {', '.join(rubric.dimension_names)})")
        if label not in LABELS:
            raise SentinelError(f"{where}: label {label!r} for {dimension!r} must be exactly PASS or FAIL")
    return tuple(sorted(raw.items()))


# --- grading -----------------------------------------------------------------------------------------------
class Evaluator(Protocol):
    """A Judge or JudgeEnsemble: a fingerprint and a batch grader returning judgments with `.verdicts`."""

    @property
    def fingerprint(self) -> str: ...

    def grade_many(self, items: Iterable[GradingItem], *, max_workers: int = 16) -> list[Any]: ...


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"  # the judge produced no usable judgment for this example


@dataclass(frozen=True, slots=True)
class ExampleResult:
    id: str
    outcome: Outcome
    verdicts: tuple[tuple[str, str], ...]  # (dimension, PASS|FAIL|UNCLEAR) as graded
    mismatches: tuple[str, ...]  # declared dimensions whose verdict differs (or were not graded)
    error: str | None = None  # redacted reason, for ERROR


def grade_examples(evaluator: Evaluator, examples: Sequence[SentinelExample], *, max_workers: int = 16,
                   progress: Callable[[int, int], None] | None = None) -> list[ExampleResult]:
    """Grade the examples in batches (one engine run each) and decide pass/fail/error per example;
    `progress(done, total)` is called after each batch."""
    results: list[ExampleResult] = []
    for start in range(0, len(examples), _BATCH):
        batch = examples[start:start + _BATCH]
        judgments = evaluator.grade_many([e.item() for e in batch], max_workers=max_workers)
        results.extend(example_result(e, j) for e, j in zip(batch, judgments, strict=True))
        if progress is not None:
            progress(len(results), len(examples))
    return results


def example_result(example: SentinelExample, judgment: Any) -> ExampleResult:
    if not judgment.is_usable:
        reason = judgment.error or f"judgment {judgment.status}"
        return ExampleResult(redact_text(example.id), Outcome.ERROR, (), (), redact_text(str(reason)))
    verdicts = {d: str(v) for d, v in judgment.verdicts.items()}
    graded = tuple(sorted(verdicts.items()))
    if example.labels:
        mismatches = tuple(d for d, label in example.labels if verdicts.get(d) != label)
    else:  # an unlabelled regression case must pass every graded dimension
        mismatches = tuple(d for d, v in graded if v != "PASS")
    return ExampleResult(redact_text(example.id), Outcome.FAIL if mismatches else Outcome.PASS, graded, mismatches)


# --- health --------------------------------------------------------------------------------------------------
class HealthStatus(StrEnum):
    HEALTHY = "healthy"
    DEGRADED = "degraded"
    INSUFFICIENT_DATA = "insufficient_data"


@dataclass(frozen=True, slots=True)
class DimensionAgreement:
    """Diagnostic only: how often the judge matched the human label on one dimension."""

    dimension: str
    labelled: int  # usable examples labelling this dimension
    agreed: int
    agreement: float | None
    agreement_low: float | None
    agreement_high: float | None
    kappa: float | None  # Cohen's kappa over PASS/FAIL/UNCLEAR; None when undefined (one category only)
    kappa_low: float | None
    kappa_high: float | None


@dataclass(frozen=True, slots=True)
class JudgeHealth:
    status: HealthStatus
    reason: str
    evaluator_fingerprint: str
    sentinel_fingerprint: str
    examples: int
    usable: int
    errors: int
    passed: int
    pass_rate: float | None
    pass_rate_low: float | None  # 95 % Wilson bounds of passed / usable
    pass_rate_high: float | None
    threshold: float
    minimum_examples: int
    dimensions: tuple[DimensionAgreement, ...]
    results: tuple[ExampleResult, ...]

    @property
    def is_healthy(self) -> bool:
        return self.status is HealthStatus.HEALTHY

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (redacted error reasons only); what the daemon persists."""
        data = asdict(self)
        data["status"] = self.status.value
        data["dimensions"] = [asdict(d) for d in self.dimensions]
        data["results"] = [result_dict(r) for r in self.results]
        return data


def result_dict(result: ExampleResult) -> dict[str, Any]:
    return {"id": result.id, "outcome": result.outcome.value, "verdicts": dict(result.verdicts),
            "mismatches": list(result.mismatches), "error": result.error}


def evaluate_judge_health(evaluator: Evaluator, examples: SentinelSet | Sequence[SentinelExample], *,
                          minimum_examples: int = 30, threshold: float = 0.8,
                          max_workers: int = 16) -> JudgeHealth:
    """Grade the sentinel set and decide whether the evaluator can be trusted."""
    if isinstance(minimum_examples, bool) or not isinstance(minimum_examples, int) or minimum_examples < 1:
        raise ValueError(f"minimum_examples must be a positive integer, got {minimum_examples!r}")
    if not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
    chosen = tuple(examples.examples if isinstance(examples, SentinelSet) else examples)
    if not chosen:
        raise ValueError("the sentinel set has no examples")
    set_fingerprint = examples.fingerprint if isinstance(examples, SentinelSet) else examples_fingerprint(chosen)
    results = grade_examples(evaluator, chosen, max_workers=max_workers)
    rate = pass_rate(results)
    usable, errors = rate.trials, len(results) - rate.trials
    failed = f"{errors} of {len(results)} examples failed: {failure_summary(results)}" if errors else ""
    if usable < minimum_examples:
        status = HealthStatus.INSUFFICIENT_DATA
        reason = f"{usable} usable example(s), fewer than the minimum of {minimum_examples}"
        # Errors first: a broken judge is not the same finding as a set too small.
        reason = f"{failed}; {reason}" if errors else reason
    elif errors:
        status, reason = HealthStatus.DEGRADED, failed
    elif rate.low >= threshold:
        status = HealthStatus.HEALTHY
        reason = f"pass-rate lower bound {rate.low:.3f} >= threshold {threshold}"
    else:
        status = HealthStatus.DEGRADED
        reason = f"pass-rate lower bound {rate.low:.3f} < threshold {threshold}"
    return JudgeHealth(status, reason, evaluator.fingerprint, set_fingerprint, len(results), usable, errors,
                       rate.successes, *finite_bounds(rate), float(threshold), minimum_examples,
                       dimension_agreement(chosen, results), tuple(results))


_ERROR_CLASS = re.compile(r"\b(?:model: (\w+)|(extraction|template|upstream|unit):)")


def error_class(reason: str) -> str:
    """The class of a judgment error text ('judge: model: server_error: HTTP 500 …' → 'server_error',
    'judge: extraction: …' → 'extraction')."""
    match = _ERROR_CLASS.search(reason)
    return (match.group(1) or match.group(2)) if match else "error"


def failure_summary(results: Sequence[ExampleResult]) -> str:
    """The most common error class among the failed examples, with one of its reasons (bounded)."""
    reasons = [r.error or "" for r in results if r.outcome is Outcome.ERROR]
    classes = Counter(error_class(reason) for reason in reasons)
    top, count = classes.most_common(1)[0]
    sample = next(reason for reason in reasons if error_class(reason) == top)
    sample = sample if len(sample) <= 200 else sample[:197] + "..."
    others = f" (and {len(reasons) - count} other)" if count < len(reasons) else ""
    return f"{top}{others}: {sample}"


def pass_rate(results: Sequence[ExampleResult]):
    """Wilson 95 % interval of passed / usable examples (errors are outside the denominator)."""
    from verdict.stats import wilson_interval

    usable = [r for r in results if r.outcome is not Outcome.ERROR]
    return wilson_interval(sum(r.outcome is Outcome.PASS for r in usable), len(usable))


def finite_bounds(rate: Any) -> tuple[float | None, float | None, float | None]:
    """(value, low, high) of a Proportion, None instead of NaN (no usable example) so records stay JSON."""
    return tuple(v if math.isfinite(v) else None for v in (rate.value, rate.low, rate.high))  # type: ignore[return-value]  # three values in, three out


def dimension_agreement(examples: Sequence[SentinelExample],
                        results: Sequence[ExampleResult]) -> tuple[DimensionAgreement, ...]:
    from verdict.stats import cohens_kappa, contingency_table, wilson_interval

    pairs: dict[str, tuple[list[str], list[str]]] = {}
    for example, result in zip(examples, results, strict=True):
        if result.outcome is Outcome.ERROR:
            continue
        verdicts = dict(result.verdicts)
        for dimension, label in example.labels:
            if dimension in verdicts:  # a declared dimension the judge skipped has nothing to agree on
                human, judge = pairs.setdefault(dimension, ([], []))
                human.append(label)
                judge.append(verdicts[dimension])
    report = []
    for dimension in sorted(pairs):
        human, judge = pairs[dimension]
        agreed = sum(h == j for h, j in zip(human, judge, strict=True))
        rate = wilson_interval(agreed, len(human))
        try:
            kappa = cohens_kappa(contingency_table(human, judge, _KAPPA_CATEGORIES))
            k: tuple[float | None, float | None, float | None] = (kappa.value, kappa.low, kappa.high)
        except ValueError:  # both raters used a single category: kappa is undefined
            k = (None, None, None)
        report.append(DimensionAgreement(dimension, len(human), agreed, rate.value, rate.low, rate.high, *k))
    return tuple(report)


def as_examples(cases: SentinelSet | Iterable[SentinelExample | Mapping[str, Any]] | str | Path,
                rubric: Rubric = DEFAULT_RUBRIC) -> SentinelSet:
    """Cases from a JSONL path, a SentinelSet, or SentinelExamples / mappings of the JSONL shape."""
    if isinstance(cases, SentinelSet):
        return cases
    if isinstance(cases, str | Path):
        return load_examples(cases, rubric, require_labels=False)
    examples = []
    for index, case in enumerate(cases):
        if isinstance(case, SentinelExample):
            examples.append(case)
        elif isinstance(case, Mapping):
            examples.append(_example(json.dumps(dict(case)), f"case {index}", rubric, False))
        else:
            raise SentinelError(f"case {index}: expected a mapping or SentinelExample, got {type(case).__name__}")
    ids = [e.id for e in examples]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise SentinelError(f"duplicate case id(s) {repeated}")
    if not examples:
        raise SentinelError("no cases")
    return SentinelSet("<cases>", tuple(examples), examples_fingerprint(examples))
