"""Do users agree with the judge? Judge verdicts joined with user signals, per trace.

A user signal is an action on a response: thumbs up/down, copy, accept, regenerate, retry, abandon.
Each maps to a polarity (POSITIVE, NEGATIVE) or is neutral and skipped (NEUTRAL). The trace is the
unit: a trace's signals collapse to one polarity, and a trace with both polarities is contradictory
(excluded and counted). Judge PASS is read as agreeing with a positive user, FAIL with a negative
one; UNCLEAR and ERROR judgments are excluded and counted.

Signals come from span events (name SIGNAL_EVENT, attribute SIGNAL_KIND_ATTRIBUTE; see
`record_user_signal`) or from a JSONL side file (`load_signal_file`). Reading the span lake and the
daemon's judgments is verdict_daemon.review.correlation's job; this module is the statistics.

Statistics: raw agreement with its Wilson interval; Cohen's kappa and Gwet's AC1 with seeded
percentile-bootstrap intervals over traces (verdict.stats); leniency = judge PASS but user negative
among judge PASS; strictness = judge FAIL but user positive among judge FAIL. The status is
`insufficient_data` below `minimum_pairs` usable traces, whatever the numbers; otherwise
`calibrated` when AC1's lower bound reaches `min_ac1`, else `miscalibrated`. AC1 rather than kappa
gates because users are mostly satisfied: with such skewed prevalence kappa collapses towards 0 even
at high agreement (the kappa paradox), while AC1 does not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from verdict.text_files import json_object_line, read_text

SIGNAL_EVENT = "verdict.user_signal"
SIGNAL_KIND_ATTRIBUTE = "verdict.signal.kind"
POSITIVE = frozenset({"thumbs_up", "copy", "accept"})
NEGATIVE = frozenset({"thumbs_down", "regenerate", "retry", "abandon"})
# Recorded but not evidence either way: an edit may mean "almost right" or "wrong".
NEUTRAL = frozenset({"view", "share", "edit"})
KINDS = POSITIVE | NEGATIVE | NEUTRAL
_SIDE_FILE_KEYS = {"trace_id", "signal", "timestamp"}
_JUDGE_VERDICTS = frozenset({"PASS", "FAIL", "UNCLEAR", "ERROR"})
_TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")


class CorrelationError(ValueError):
    """Input that cannot be correlated; the message says why."""


class EvaluatorChoiceRequired(CorrelationError):
    """Judgments by several evaluator fingerprints: which one to correlate must be chosen."""

    def __init__(self, fingerprints: Iterable[str]) -> None:
        self.fingerprints = tuple(sorted(fingerprints))
        super().__init__(f"judgments by {len(self.fingerprints)} evaluator fingerprints "
                         f"({', '.join(self.fingerprints)}): choose one")


@dataclass(frozen=True)
class UserSignal:
    trace_id: str
    kind: str
    timestamp: str | None = None  # only used to recognise exact duplicate rows


@dataclass(frozen=True)
class JudgeVerdict:
    trace_id: str
    fingerprint: str
    verdict: str  # PASS, FAIL, UNCLEAR or ERROR


@dataclass(frozen=True)
class Interval:
    value: float | None  # None when undefined on this data
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Correlation:
    status: str  # insufficient_data | calibrated | miscalibrated
    reason: str
    fingerprint: str | None
    usable: int  # traces with a usable judge verdict and one user polarity
    minimum_pairs: int
    min_ac1: float
    table: dict[str, int]  # pass_positive, pass_negative, fail_positive, fail_negative
    raw_agreement: Interval  # Wilson
    kappa: Interval  # bootstrap
    ac1: Interval  # bootstrap
    leniency: Interval  # pass_negative / judge PASS, Wilson
    strictness: Interval  # fail_positive / judge FAIL, Wilson
    counts: dict[str, int]  # rows and traces left out, by why
    seed: int
    n_resamples: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def polarity(kind: str) -> str | None:
    """'positive', 'negative', or None for a neutral kind; CorrelationError for an unknown one."""
    if kind in POSITIVE:
        return "positive"
    if kind in NEGATIVE:
        return "negative"
    if kind in NEUTRAL:
        return None
    raise CorrelationError(f"unknown signal {kind!r}; expected one of {', '.join(sorted(KINDS))}")


def overall_verdict(values: Iterable[str | None]) -> str:
    """One verdict for a judged trace: FAIL if any dimension failed, else PASS if every dimension
    passed, else UNCLEAR (an UNCLEAR, ERROR or INCONSISTENT dimension, or none at all); score-only
    dimensions (value None) do not count."""
    present = {v for v in values if v is not None}
    if "FAIL" in present:
        return "FAIL"
    return "PASS" if present == {"PASS"} else "UNCLEAR"


def load_signal_file(path: str | Path) -> list[UserSignal]:
    """JSONL lines {"trace_id": str, "signal": kind, "timestamp": optional str}; blank lines skipped.
    Any problem raises CorrelationError naming the file and the line."""
    path = Path(path)
    text = read_text(path, "file", CorrelationError)
    signals = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            signals.append(_signal_row(line, f"{path}:{number}"))
    if not signals:
        raise CorrelationError(f"{path}: no signals")
    return signals


def _signal_row(line: str, where: str) -> UserSignal:
    row = json_object_line(line, where, _SIDE_FILE_KEYS, CorrelationError)
    trace_id, kind, timestamp = row.get("trace_id"), row.get("signal"), row.get("timestamp")
    if not isinstance(trace_id, str) or not trace_id.strip():
        raise CorrelationError(f"{where}: 'trace_id' must be a non-empty string")
    if not isinstance(kind, str):
        raise CorrelationError(f"{where}: 'signal' must be a string")
    if timestamp is not None and not isinstance(timestamp, str):
        raise CorrelationError(f"{where}: 'timestamp' must be a string or absent")
    try:
        polarity(kind)
    except CorrelationError as exc:
        raise CorrelationError(f"{where}: {exc}") from None
    return UserSignal(trace_id, kind, timestamp)


def _per_trace(rows: Iterable[tuple[str, tuple, str | None]]) -> tuple[dict[str, str], int, int]:
    """Collapse (trace, exact row key, value) rows to one value per trace.

    Returns ({trace: value}, exact duplicate rows, contradictory traces); rows with value None are
    skipped; a trace with two different values is contradictory and left out."""
    seen: set[tuple] = set()
    values: dict[str, set[str]] = {}
    duplicates = 0
    for trace, key, value in rows:
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        if value is not None:
            values.setdefault(trace, set()).add(value)
    single = {t: next(iter(v)) for t, v in values.items() if len(v) == 1}
    return single, duplicates, len(values) - len(single)


def correlate(verdicts: Iterable[JudgeVerdict], signals: Iterable[UserSignal], *, fingerprint: str | None = None,
              minimum_pairs: int = 30, min_ac1: float = 0.4, n_resamples: int = 2000, seed: int = 0,
              confidence: float = 0.95) -> Correlation:
    """Agreement of judge verdicts with user signals, one pair per trace; see the module docstring."""
    if minimum_pairs < 2:
        raise CorrelationError(f"minimum_pairs must be at least 2, got {minimum_pairs}")
    if not -1 <= min_ac1 <= 1:
        raise CorrelationError(f"min_ac1 must lie in [-1, 1], got {min_ac1}")
    verdict_rows = list(verdicts)
    bad = sorted({v.verdict for v in verdict_rows} - _JUDGE_VERDICTS)
    if bad:
        raise CorrelationError(f"judge verdicts must be PASS, FAIL, UNCLEAR or ERROR, got {bad}")
    present = {v.fingerprint for v in verdict_rows}
    if fingerprint is None and len(present) > 1:
        raise EvaluatorChoiceRequired(present)
    if fingerprint is not None and verdict_rows and fingerprint not in present:
        raise CorrelationError(f"no judgments by fingerprint {fingerprint} (present: {', '.join(sorted(present))})")
    chosen = fingerprint if fingerprint is not None else next(iter(present), None)
    verdict_rows = [v for v in verdict_rows if v.fingerprint == chosen]

    signal_rows = list(signals)
    unknown = sum(s.kind not in KINDS for s in signal_rows)
    neutral = sum(s.kind in NEUTRAL for s in signal_rows)
    users, signal_duplicates, contradictory = _per_trace(
        (s.trace_id, (s.trace_id, s.kind, s.timestamp), polarity(s.kind) if s.kind in KINDS else None)
        for s in signal_rows)
    judged, verdict_duplicates, judge_contradictory = _per_trace(
        (v.trace_id, (v.trace_id, v.verdict), v.verdict) for v in verdict_rows)

    table = dict.fromkeys(("pass_positive", "pass_negative", "fail_positive", "fail_negative"), 0)
    unclear = unjudged = 0
    pairs = []
    for trace, user in users.items():
        verdict = judged.get(trace)
        if verdict is None:
            unjudged += 1
        elif verdict not in ("PASS", "FAIL"):
            unclear += 1
        else:
            table[f"{verdict.lower()}_{user}"] += 1
            pairs.append((verdict == "PASS", user == "positive"))
    counts = {"signal_rows": len(signal_rows), "neutral_rows": neutral, "unknown_rows": unknown,
              "duplicate_rows": signal_duplicates, "contradictory_traces": contradictory,
              "judge_duplicate_rows": verdict_duplicates, "judge_contradictory_traces": judge_contradictory,
              "unclear_excluded": unclear, "unjudged_traces": unjudged}
    return _measure(pairs, table, counts, chosen, minimum_pairs, min_ac1, n_resamples, seed, confidence)


def _measure(pairs: list[tuple[bool, bool]], table: dict[str, int], counts: dict[str, int], fingerprint: str | None,
             minimum_pairs: int, min_ac1: float, n_resamples: int, seed: int, confidence: float) -> Correlation:
    from verdict.stats import wilson_interval

    n = len(pairs)
    judge_pass = table["pass_positive"] + table["pass_negative"]
    judge_fail = n - judge_pass
    agreement = _wilson(wilson_interval(table["pass_positive"] + table["fail_negative"], n, confidence=confidence))
    kappa, ac1 = _bootstrapped(pairs, n_resamples, seed, confidence)
    if n < minimum_pairs:
        status, reason = "insufficient_data", f"{n} usable traces < minimum {minimum_pairs}: not calibrated"
    elif ac1.low is not None and ac1.low >= min_ac1:
        status, reason = "calibrated", f"AC1 lower bound {ac1.low:.3f} >= {min_ac1}"
    else:
        low = "undefined" if ac1.low is None else f"{ac1.low:.3f}"
        status, reason = "miscalibrated", f"AC1 lower bound {low} < {min_ac1}"
    return Correlation(
        status=status, reason=reason, fingerprint=fingerprint, usable=n, minimum_pairs=minimum_pairs,
        min_ac1=min_ac1, table=table, raw_agreement=agreement, kappa=kappa, ac1=ac1,
        leniency=_wilson(wilson_interval(table["pass_negative"], judge_pass, confidence=confidence)),
        strictness=_wilson(wilson_interval(table["fail_positive"], judge_fail, confidence=confidence)),
        counts=counts, seed=seed, n_resamples=n_resamples, confidence=confidence)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _wilson(p) -> Interval:
    return Interval(_finite(p.value), _finite(p.low), _finite(p.high))


def _bootstrapped(pairs: list[tuple[bool, bool]], n_resamples: int, seed: int,
                  confidence: float) -> tuple[Interval, Interval]:
    """Kappa and AC1 on the pairs, each with a percentile-bootstrap interval over the same resamples
    (same seed): point values from verdict.stats, undefined (None) where they are."""
    import numpy as np

    from verdict.stats import cohens_kappa, contingency_table, gwet_ac1, percentile_bootstrap

    none = Interval(None, None, None)
    if not pairs:
        return none, none
    data = np.array(pairs, dtype=np.int8)
    table = contingency_table(data[:, 0].tolist(), data[:, 1].tolist(), (1, 0))
    try:
        kappa_value: float | None = cohens_kappa(table).value
    except ValueError:  # both raters used one category: kappa undefined
        kappa_value = None
    ac1_value = gwet_ac1(table).value
    if len(pairs) < 2:
        return Interval(kappa_value, None, None), Interval(ac1_value, None, None)
    intervals = []
    for statistic in (_kappa_batch, _ac1_batch):
        boot = percentile_bootstrap(data, statistic, n_resamples=n_resamples, confidence=confidence, seed=seed,
                                    batch=True)
        intervals.append((_finite(boot.low), _finite(boot.high)))
    (k_low, k_high), (a_low, a_high) = intervals
    return Interval(kappa_value, k_low, k_high), Interval(ac1_value, a_low, a_high)


def _rates(resamples):
    """(observed agreement, judge PASS share, user positive share) per resample of (judge, user) pairs."""
    judge, user = resamples[..., 0].astype(float), resamples[..., 1].astype(float)
    return (judge == user).mean(axis=-1), judge.mean(axis=-1), user.mean(axis=-1)


def _kappa_batch(resamples):
    import numpy as np

    po, pj, pu = _rates(resamples)
    pe = pj * pu + (1 - pj) * (1 - pu)
    with np.errstate(divide="ignore", invalid="ignore"):  # pe == 1: undefined, NaN
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def _ac1_batch(resamples):
    po, pj, pu = _rates(resamples)
    pi = (pj + pu) / 2
    pe = 2 * pi * (1 - pi)  # sum over the two categories of pi_k (1 - pi_k), divided by q - 1 = 1
    return (po - pe) / (1 - pe)


def record_user_signal(kind: str, *, trace_id: str | None = None, tracer_provider: Any = None) -> None:
    """Record a user signal as a span event the collector stores with the trace.

    Without `trace_id` the event goes on the current span (call it while the request's span is
    active). With `trace_id` (hex, as the app stored it with the response) a short span named
    SIGNAL_EVENT is started in that trace, carrying the event: signals usually arrive after the
    response's own span has ended. `tracer_provider` defaults to the global one (verdict.init)."""
    polarity(kind)  # unknown kinds fail here, not in the report
    from opentelemetry import trace

    attributes = {SIGNAL_KIND_ATTRIBUTE: kind}
    if trace_id is None:
        span = trace.get_current_span()
        if not span.is_recording():
            raise CorrelationError("no recording span is active: pass trace_id=")
        span.add_event(SIGNAL_EVENT, attributes)
        return
    # A regex, not int(x, 16) alone: that also takes "0x", "_" and surrounding whitespace.
    if not isinstance(trace_id, str) or not _TRACE_ID.fullmatch(trace_id) or int(trace_id, 16) == 0:
        raise CorrelationError(f"trace_id must be 32 hex digits, got {trace_id!r}")
    trace_int = int(trace_id, 16)
    import random

    parent = trace.NonRecordingSpan(trace.SpanContext(trace_int, random.getrandbits(64) | 1, is_remote=True,
                                                      trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))
    tracer = trace.get_tracer("verdict.user_signal", tracer_provider=tracer_provider)
    with tracer.start_as_current_span(SIGNAL_EVENT, context=trace.set_span_in_context(parent)) as span:
        span.add_event(SIGNAL_EVENT, attributes)
