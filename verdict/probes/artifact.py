"""Probe-run artifacts: the JSON a run writes, and loading it (and older ones) back.

Every artifact stamps two versions, and runs are compared only when both match (and the suite's name,
version and, when both runs have one, fingerprint):

- `metric_schema_version` — how the gated figures are defined (verdict.probes.results). 2: a probe's
  weight counts once, in the suite and category pass rates. 1 (legacy layout, suites 1.x, key
  `schema_version`): the pass rate weighted every expectation by its probe's weight.
- `judge_method_version` — how expectations were judged. 2: one single-dimension rubric Judge per
  expectation, each with its own evaluator fingerprint. 1: every dimension of a probe in one rubric
  Judge call, one fingerprint per run.

Loading recomputes every figure from the per-probe records, never trusting stored summaries: a weight
that is not a positive finite number (bool, string, NaN, inf, 0, negative) counts zero, and a `passed`
that is not literally `true` fails closed. Each such repair is listed in `ProbeRun.warnings`.

Tenancy: a run written into a data dir's probe store is stamped with its tenant (`tenant`) and lives under
`<store>/tenant=<tenant>/` (`write_tenant_artifact`); a file written with `--out` is the caller's own and
carries no tenant. The HTML report shows only its tenant's runs (verdict_daemon/report/panels.py).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast, overload

from verdict.probes.results import (
    ExpectationResult,
    Outcome,
    ProbeResult,
    Score,
    category_scores,
    probe_outcome,
    score,
)
from verdict.tenancy import InvalidTenantError, validate_tenant_id
from verdict.text_files import read_text

METRIC_SCHEMA_VERSION = 2
JUDGE_METHOD_VERSION = 2
ARTIFACT_KIND = "verdict.probe_run"


class ArtifactError(ValueError):
    """A file is not a readable probe-run artifact; the message names the file and the field."""


class IncomparableRuns(ValueError):
    """Two runs measure different things (metric schema, judge method or suite) and are never compared."""


@dataclass(frozen=True, slots=True)
class Gate:
    passed: bool  # no execution error, suite pass rate >= min, every category >= its min (when set)
    failing_categories: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ProbeRun:
    metric_schema_version: int
    judge_method_version: int
    run_id: str
    started_at: str  # ISO 8601, UTC
    finished_at: str | None
    suite_name: str
    suite_version: str
    suite_fingerprint: str | None  # None in legacy artifacts
    target_model: str
    judge_model: str
    min_pass_rate: float
    min_category_pass_rate: float | None
    results: tuple[ProbeResult, ...]
    warnings: tuple[str, ...] = ()  # repairs made while loading (sanitised weights, non-boolean passed)
    source: str | None = None  # the file it was loaded from
    tenant: str | None = None  # whose data-dir run this is (validated); None for a caller's own `--out` file

    @property
    def score(self) -> Score:
        return score(self.results, self.metric_schema_version)

    @property
    def categories(self) -> dict[str, Score]:
        return category_scores(self.results, self.metric_schema_version)

    @property
    def errors(self) -> int:
        return sum(r.outcome is Outcome.ERROR for r in self.results)

    @property
    def gate(self) -> Gate:
        failing = tuple(name for name, s in self.categories.items() if self.min_category_pass_rate is not None
                        and (s.pass_rate is None or s.pass_rate < self.min_category_pass_rate))
        rate = self.score.pass_rate
        passed = self.errors == 0 and rate is not None and rate >= self.min_pass_rate and not failing
        return Gate(passed, failing)

    @property
    def series(self) -> tuple[int, int, str, str]:
        """Runs are comparable only within one series."""
        return (self.metric_schema_version, self.judge_method_version, self.suite_name, self.suite_version)

    def to_dict(self) -> dict[str, Any]:
        """The artifact (current layout); content fields are already redacted."""
        gate = self.gate
        return {
            "kind": ARTIFACT_KIND,
            "metric_schema_version": self.metric_schema_version,
            "judge_method_version": self.judge_method_version,
            "run_id": self.run_id, "started_at": self.started_at, "finished_at": self.finished_at,
            "tenant": self.tenant,
            "suite": {"name": self.suite_name, "version": self.suite_version, "fingerprint": self.suite_fingerprint},
            "target_model": self.target_model, "judge_model": self.judge_model,
            "gate": {"passed": gate.passed, "min_pass_rate": self.min_pass_rate,
                     "min_category_pass_rate": self.min_category_pass_rate,
                     "failing_categories": list(gate.failing_categories)},
            "summary": _score_dict(self.score),
            "categories": {name: _score_dict(s) for name, s in self.categories.items()},
            "probes": [_probe_dict(r) for r in self.results],
        }


def _score_dict(s: Score) -> dict[str, Any]:
    return {"probes": s.probes, "passed": s.passed, "failed": s.failed, "errors": s.errors, "weight": s.weight,
            "pass_rate": s.pass_rate, "expectation_agreement": s.expectation_agreement}


def _probe_dict(r: ProbeResult) -> dict[str, Any]:
    return {"name": r.name, "category": r.category, "weight": r.weight, "outcome": r.outcome.value,
            "passed": r.passed, "error": r.error,
            "transcript": [{"role": role, "content": text} for role, text in r.transcript],
            "expectations": [{"dimension": e.dimension, "expected": e.expected, "outcome": e.outcome.value,
                              "passed": e.passed, "verdict": e.verdict,
                              "evaluator_fingerprint": e.evaluator_fingerprint, "rationale": e.rationale,
                              "error": e.error} for e in r.expectations]}


def write_artifact(run: ProbeRun, path: str | Path) -> Path:
    """Write atomically (temporary file + rename): a reader never sees half an artifact."""
    path = Path(path)
    text = json.dumps(run.to_dict(), indent=2, allow_nan=False) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def tenant_dir(store: str | Path, tenant: str) -> Path:
    """The tenant's directory in a probe store (`<data_dir>/probes`): `<store>/tenant=<tenant>`, the id
    validated first (InvalidTenantError), so it is always one safe path component."""
    return Path(store) / f"tenant={validate_tenant_id(tenant)}"


def write_tenant_artifact(run: ProbeRun, store: str | Path, tenant: str) -> Path:
    """Stamp `run` with `tenant` and write it as `<store>/tenant=<tenant>/<suite>-<version>-<UTC time>.json`."""
    directory = tenant_dir(store, tenant)
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return write_artifact(replace(run, tenant=tenant), directory / f"{run.suite_name}-{run.suite_version}-{stamp}.json")


# --- loading ------------------------------------------------------------------------------------------------
def load_artifact(path: str | Path) -> ProbeRun:
    """A run from its artifact, any known version; figures are recomputed from the sanitised records."""
    path = Path(path)
    text = read_text(path, "artifact", ArtifactError)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    return parse_artifact(data, str(path))


def parse_artifact(data: Any, source: str = "artifact") -> ProbeRun:
    reader = _Reader(source)
    if not isinstance(data, Mapping):
        raise ArtifactError(f"{source}: expected a JSON object")
    if "metric_schema_version" in data:
        version = reader.integer(data, "metric_schema_version")
        if version > METRIC_SCHEMA_VERSION:
            raise ArtifactError(f"{source}: metric_schema_version {version} is newer than this Verdict reads "
                                f"(up to {METRIC_SCHEMA_VERSION}); upgrade Verdict")
        if version < 2:
            raise ArtifactError(f"{source}: metric_schema_version {version} artifacts use the legacy layout "
                                "('schema_version'), not this one")
        return reader.current(data, version)
    if data.get("schema_version") == 1:
        return reader.legacy(data)
    raise ArtifactError(f"{source}: not a probe-run artifact (no metric_schema_version)")


class _Reader:
    """Field access that names the file and the field in every error, and records repairs."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.warnings: list[str] = []

    def fail(self, where: str, problem: str) -> ArtifactError:
        return ArtifactError(f"{self.source}: {where}: {problem}")

    def get(self, data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str = "",
            optional: bool = False) -> Any:
        field = f"{where}.{key}" if where else key
        if key not in data:
            if optional:
                return None
            raise self.fail(field, "missing")
        value = data[key]
        if (value is None and optional) or (isinstance(value, kind) and not isinstance(value, bool)):
            return value
        raise self.fail(field, f"expected {getattr(kind, '__name__', 'a number')}, got {type(value).__name__}")

    def integer(self, data: Mapping[str, Any], key: str) -> int:
        return cast(int, self.get(data, key, int))  # get checked the type

    @overload
    def rate(self, data: Mapping[str, Any], key: str, where: str = "", optional: Literal[False] = False) -> float: ...

    @overload
    def rate(self, data: Mapping[str, Any], key: str, where: str = "", *, optional: bool) -> float | None: ...

    def rate(self, data: Mapping[str, Any], key: str, where: str = "", optional: bool = False) -> float | None:
        value = self.get(data, key, (int, float), where, optional)
        if value is not None and not (math.isfinite(value) and 0 <= value <= 1):
            raise self.fail(f"{where}.{key}" if where else key, f"must be in [0, 1], got {value!r}")
        return None if value is None else float(value)

    def weight(self, value: Any, where: str) -> float:
        if not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value > 0:
            return float(value)
        self.warnings.append(f"{where}: weight {value!r} is not a positive finite number; counted as 0")
        return 0.0

    def passed(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            self.warnings.append(f"{where}: passed {value!r} is not a boolean; counted as not passed")
        return value is True

    def records(self, data: Mapping[str, Any], key: str, where: str = "") -> list[Mapping[str, Any]]:
        items = self.get(data, key, list, where)
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise self.fail(f"{where}.{key}[{index}]" if where else f"{key}[{index}]", "expected an object")
        return cast(list[Mapping[str, Any]], items)  # a list (get) of mappings (checked above)

    # -- metric schema 2 ------------------------------------------------------------------------------------
    def current(self, data: Mapping[str, Any], version: int) -> ProbeRun:
        method = self.integer(data, "judge_method_version")
        if not 1 <= method <= JUDGE_METHOD_VERSION:
            raise self.fail("judge_method_version", f"unknown version {method} (this Verdict reads 1 to "
                            f"{JUDGE_METHOD_VERSION})")
        suite = self.get(data, "suite", Mapping)
        gate = self.get(data, "gate", Mapping)
        results = tuple(self._probe(item, f"probes[{i}]") for i, item in enumerate(self.records(data, "probes")))
        return ProbeRun(version, method, self.get(data, "run_id", str), self.get(data, "started_at", str),
                        self.get(data, "finished_at", str, optional=True), self.get(suite, "name", str, "suite"),
                        self.get(suite, "version", str, "suite"),
                        self.get(suite, "fingerprint", str, "suite", optional=True),
                        self.get(data, "target_model", str), self.get(data, "judge_model", str),
                        self.rate(gate, "min_pass_rate", "gate"),
                        self.rate(gate, "min_category_pass_rate", "gate", optional=True), results,
                        tuple(self.warnings), self.source, self.tenant(data))

    def tenant(self, data: Mapping[str, Any]) -> str | None:
        tenant = self.get(data, "tenant", str, optional=True)
        try:
            return None if tenant is None else validate_tenant_id(tenant)
        except InvalidTenantError as exc:
            raise self.fail("tenant", str(exc)) from None

    def _probe(self, item: Mapping[str, Any], where: str) -> ProbeResult:
        expectations = tuple(self._expectation(e, f"{where}.expectations[{i}]")
                             for i, e in enumerate(self.records(item, "expectations", where)))
        outcome = _outcome(self.get(item, "outcome", str, where), self.passed(item.get("passed"), where), expectations)
        transcript = tuple((self.get(turn, "role", str, f"{where}.transcript[{i}]"),
                            self.get(turn, "content", str, f"{where}.transcript[{i}]"))
                           for i, turn in enumerate(self.records(item, "transcript", where)))
        return ProbeResult(self.get(item, "name", str, where), self.get(item, "category", str, where),
                           self.weight(item.get("weight"), where), outcome, expectations, transcript,
                           self.get(item, "error", str, where, optional=True))

    def _expectation(self, item: Mapping[str, Any], where: str) -> ExpectationResult:
        passed = self.passed(item.get("passed"), where)
        stored = self.get(item, "outcome", str, where)
        outcome = Outcome.ERROR if stored == Outcome.ERROR else (
            Outcome.PASS if passed and stored == Outcome.PASS else Outcome.FAIL)
        return ExpectationResult(self.get(item, "dimension", str, where), self.get(item, "expected", str, where),
                                 outcome, self.get(item, "verdict", str, where, optional=True),
                                 self.get(item, "evaluator_fingerprint", str, where, optional=True),
                                 self.get(item, "rationale", str, where, optional=True),
                                 self.get(item, "error", str, where, optional=True))

    # -- metric schema 1 / judge method 1: the legacy layout -------------------------------------------------
    def legacy(self, data: Mapping[str, Any]) -> ProbeRun:
        fingerprint = self.get(data, "evaluator_fingerprint", str)
        results = []
        for index, item in enumerate(self.records(data, "results")):
            where = f"results[{index}]"
            expected = self.get(item, "expected", Mapping, where)
            verdicts = self.get(item, "verdicts", Mapping, where)
            # Schema 1 gates on expectations: a record whose `passed` is not a boolean credits none of them.
            trusted = isinstance(item.get("passed"), bool)
            expectations = tuple(ExpectationResult(
                str(dimension), str(label),
                Outcome.PASS if trusted and verdicts.get(dimension) == label else Outcome.FAIL,
                _text_or_none(verdicts.get(dimension)), fingerprint) for dimension, label in expected.items())
            passed = self.passed(item.get("passed"), where) and probe_outcome(expectations) is Outcome.PASS
            outcome = Outcome.PASS if passed else Outcome.FAIL
            results.append(ProbeResult(self.get(item, "probe", str, where), self.get(item, "category", str, where),
                                       self.weight(item.get("weight"), where), outcome, expectations))
        return ProbeRun(1, 1, self.get(data, "run_id", str), self.get(data, "created_at", str), None,
                        self.get(data, "suite", str), self.get(data, "suite_version", str), None,
                        self.get(data, "target_model", str), self.get(data, "judge_model", str),
                        self.rate(data, "min_pass_rate"), None, tuple(results), tuple(self.warnings), self.source)


def _outcome(stored: str, passed: bool, expectations: tuple[ExpectationResult, ...]) -> Outcome:
    """Fail closed: PASS needs `passed: true`, a stored "pass" and no failed or errored expectation."""
    if stored == Outcome.ERROR or probe_outcome(expectations) is Outcome.ERROR:
        return Outcome.ERROR
    return Outcome.PASS if passed and stored == Outcome.PASS and probe_outcome(expectations) is Outcome.PASS \
        else Outcome.FAIL


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# --- history and comparison -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProbeHistory:
    runs: tuple[ProbeRun, ...]  # oldest first
    skipped: tuple[tuple[str, str], ...]  # (file, reason) of files that are not readable artifacts

    def series(self) -> dict[tuple[int, int, str, str], tuple[ProbeRun, ...]]:
        """(metric schema, judge method, suite, suite version) -> its runs, oldest first."""
        groups: dict[tuple[int, int, str, str], list[ProbeRun]] = {}
        for run in self.runs:
            groups.setdefault(run.series, []).append(run)
        return {key: tuple(runs) for key, runs in groups.items()}

    def previous(self, run: ProbeRun) -> ProbeRun | None:
        """The latest earlier run `run` may be compared with (same series and, when both have one, the same
        suite fingerprint)."""
        earlier = [r for r in self.runs if r.started_at < run.started_at and incomparable_reason(r, run) is None]
        return earlier[-1] if earlier else None


def load_history(paths: str | Path | Iterable[str | Path]) -> ProbeHistory:
    """Every `*.json` artifact of a directory (or the given files), sorted by start time; unreadable
    files are skipped and listed, so one bad file does not hide the rest."""
    if isinstance(paths, str | Path):
        directory = Path(paths)
        files = sorted(directory.glob("*.json")) if directory.is_dir() else [directory]
    else:
        files = [Path(p) for p in paths]
    runs, skipped = [], []
    for file in files:
        try:
            runs.append(load_artifact(file))
        except ArtifactError as exc:
            skipped.append((str(file), str(exc)))
    return ProbeHistory(tuple(sorted(runs, key=lambda r: r.started_at)), tuple(skipped))


@dataclass(frozen=True, slots=True)
class Comparison:
    before: ProbeRun
    after: ProbeRun
    pass_rate_delta: float | None  # after - before; None when either has no weight
    category_deltas: dict[str, float | None]  # categories present in both runs
    newly_failing: tuple[str, ...]  # probes that passed before and do not now
    newly_passing: tuple[str, ...]


def incomparable_reason(before: ProbeRun, after: ProbeRun) -> str | None:
    for label, a, b in (("metric schema version", before.metric_schema_version, after.metric_schema_version),
                        ("judge method version", before.judge_method_version, after.judge_method_version),
                        ("suite", before.suite_name, after.suite_name),
                        ("suite version", before.suite_version, after.suite_version)):
        if a != b:
            return f"{label} differs ({a} vs {b})"
    if None not in (before.suite_fingerprint, after.suite_fingerprint) and \
            before.suite_fingerprint != after.suite_fingerprint:
        return ("suite fingerprint differs (its probes, weights, rubric or target parameters changed without a "
                "version bump)")
    return None


def compare(before: ProbeRun, after: ProbeRun) -> Comparison:
    """How `after` moved relative to `before`; raises IncomparableRuns across a version boundary."""
    reason = incomparable_reason(before, after)
    if reason is not None:
        raise IncomparableRuns(f"runs {before.run_id} and {after.run_id} are not comparable: {reason}")
    old, new = before.categories, after.categories
    was = {r.name: r.passed for r in before.results}
    now = {r.name: r.passed for r in after.results}
    return Comparison(before, after, _delta(before.score.pass_rate, after.score.pass_rate),
                      {c: _delta(old[c].pass_rate, new[c].pass_rate) for c in new if c in old},
                      tuple(n for n in now if was.get(n) and not now[n]),
                      tuple(n for n in now if n in was and not was[n] and now[n]))


def _delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before
