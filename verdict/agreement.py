"""Does the judge agree with humans? Judge verdicts against human labels, with intervals and a gate.

The positive class is FAIL by default: a judge exists to catch failures, so TPR is the share of
human-FAIL items the judge fails and TNR the share of human-PASS items it passes. UNCLEAR and
ERROR verdicts are not agreement or disagreement: they are excluded from every rate and reported
as coverage — pair coverage (items whose final verdict is usable) and, for ensembles, component
coverage (usable component verdicts among all component records) separately.

Intervals: Wilson for TPR, TNR, raw agreement and coverage; Fleiss-Cohen-Everitt for kappa;
Gwet's linearised variance for AC1 (see verdict.stats.interrater).

Before a judge is trusted, the rubric itself must be clear enough that people agree on it:
`evaluate_rater_agreement` measures agreement among human raters on the same items (Cohen's kappa
for exactly two raters, Fleiss' kappa when every item has the same number of raters, Gwet's AC1 and
Krippendorff's alpha with missing labels; see verdict.stats.multirater) and flags a rubric whose AC1
is under `RUBRIC_MIN_AC1`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from verdict.stats.interrater import Coefficient, cohens_kappa, contingency_table, gwet_ac1
from verdict.stats.multirater import (
    fleiss_kappa,
    gwet_ac1_raters,
    krippendorff_alpha,
    rating_counts,
)
from verdict.stats.proportions import Proportion, wilson_interval

LABELS = ("PASS", "FAIL")
_USABLE = frozenset(LABELS)
_VERDICTS = frozenset({"PASS", "FAIL", "UNCLEAR", "ERROR"})


@dataclass(frozen=True)
class LabelledItem:
    item_id: str
    label: str  # the human's PASS or FAIL
    verdict: str  # the judge's PASS, FAIL, UNCLEAR or ERROR
    critique: str = ""  # the human's reason for the label
    rationale: str = ""  # the judge's rationale
    components: tuple[
        str, ...
    ] = ()  # verdicts of an ensemble's component judges, failed ones included


@dataclass(frozen=True)
class Disagreement:
    item_id: str
    label: str
    verdict: str
    critique: str
    rationale: str


@dataclass(frozen=True)
class AgreementReport:
    positive: str
    n_items: int
    pair_coverage: Proportion  # items with a usable judge verdict / all items
    component_coverage: (
        Proportion | None
    )  # usable component verdicts / component records; None without ensembles
    tpr: Proportion
    tnr: Proportion
    raw_agreement: Proportion
    kappa: Coefficient | None  # None when undefined (both raters used one category only)
    ac1: Coefficient | None  # None without usable pairs
    disagreements: tuple[Disagreement, ...]


@dataclass(frozen=True)
class GateResult:
    passed: bool
    failures: tuple[str, ...]  # one human-readable reason per failed condition


_DEFAULT_MIN_LOWER = MappingProxyType({"tpr": 0.7, "tnr": 0.7, "raw_agreement": 0.8, "ac1": 0.6})


@dataclass(frozen=True)
class EvidenceGate:
    """Passes only with complete coverage and every listed lower confidence bound at its threshold.

    `min_lower` maps report fields (tpr, tnr, raw_agreement, kappa, ac1) to the smallest acceptable
    lower bound.
    """

    min_lower: Mapping[str, float] = field(default_factory=lambda: _DEFAULT_MIN_LOWER)
    require_complete_coverage: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.min_lower) - {"tpr", "tnr", "raw_agreement", "kappa", "ac1"}
        if unknown:
            raise ValueError(
                f"unknown gate metric(s) {sorted(unknown)}; use tpr, tnr, raw_agreement, kappa, ac1"
            )

    def check(self, report: AgreementReport) -> GateResult:
        failures = []
        if self.require_complete_coverage:
            for name, cov in (
                ("pair", report.pair_coverage),
                ("component", report.component_coverage),
            ):
                if cov is not None and cov.successes < cov.trials:
                    failures.append(
                        f"{name} coverage incomplete: {cov.trials - cov.successes} of {cov.trials} verdicts unusable"
                    )
        for metric, threshold in sorted(self.min_lower.items()):
            estimate = getattr(report, metric)
            low = None if estimate is None else estimate.low
            if low is None or low != low:
                failures.append(f"{metric} is undefined on this data (threshold {threshold:.3f})")
            elif low < threshold:
                failures.append(f"{metric} lower bound {low:.3f} is under {threshold:.3f}")
        return GateResult(passed=not failures, failures=tuple(failures))


def evaluate_agreement(
    items: Iterable[LabelledItem], *, positive: str = "FAIL", confidence: float = 0.95
) -> AgreementReport:
    """Agreement of judge verdicts with human labels over `items`."""
    rows = list(items)
    if not rows:
        raise ValueError("no labelled items")
    if positive not in LABELS:
        raise ValueError(f"positive must be PASS or FAIL, got {positive!r}")
    _validate(rows)
    usable = [r for r in rows if r.verdict in _USABLE]
    components = [v for r in rows for v in r.components]
    n_pos = sum(r.label == positive for r in usable)
    tp = sum(r.label == positive and r.verdict == positive for r in usable)
    tn = sum(r.label != positive and r.verdict != positive for r in usable)
    kappa = ac1 = None
    if usable:
        table = contingency_table([r.label for r in usable], [r.verdict for r in usable], LABELS)
        ac1 = gwet_ac1(table, confidence=confidence)
        try:
            kappa = cohens_kappa(table, confidence=confidence)
        except ValueError:
            kappa = None
    return AgreementReport(
        positive=positive,
        n_items=len(rows),
        pair_coverage=wilson_interval(len(usable), len(rows), confidence=confidence),
        component_coverage=(
            wilson_interval(
                sum(v in _USABLE for v in components), len(components), confidence=confidence
            )
            if components
            else None
        ),
        tpr=wilson_interval(tp, n_pos, confidence=confidence),
        tnr=wilson_interval(tn, len(usable) - n_pos, confidence=confidence),
        raw_agreement=wilson_interval(tp + tn, len(usable), confidence=confidence),
        kappa=kappa,
        ac1=ac1,
        disagreements=tuple(
            Disagreement(r.item_id, r.label, r.verdict, r.critique, r.rationale)
            for r in usable
            if r.label != r.verdict
        ),
    )


@dataclass(frozen=True)
class DevTestSplit:
    dev: tuple[str, ...]
    test: tuple[str, ...]


def split_dev_test(
    item_ids: Sequence[str], *, test_fraction: float = 0.5, salt: str = "verdict"
) -> DevTestSplit:
    """Deterministic split by a salted SHA-256 of each id.

    An item's side depends only on its id and the salt, so the split is the same in every run and
    on every machine, and adding items never moves existing ones.
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    if len(set(item_ids)) != len(item_ids):
        raise ValueError("item ids must be unique")
    dev: list[str] = []
    test: list[str] = []
    for item in item_ids:
        h = int.from_bytes(hashlib.sha256(f"{salt}\0{item}".encode()).digest()[:8], "big") / 2**64
        (test if h < test_fraction else dev).append(item)
    return DevTestSplit(tuple(dev), tuple(test))


# A rubric on which people agree less than this (Gwet's AC1 point estimate) is too vague to trust a
# judge with: the same threshold as the judge's EvidenceGate default on the AC1 lower bound, and
# Landis & Koch's "moderate" boundary (0.6) read as "substantial or better".
RUBRIC_MIN_AC1 = 0.6
RUBRIC_MIN_ITEMS = 20  # fewer items rated by two or more people: too little data to flag or clear a rubric


@dataclass(frozen=True)
class RaterAgreement:
    """Agreement among human raters on one dimension. A coefficient is None when its design does
    not apply (Cohen: exactly two raters; Fleiss: the same number of raters on every item) or it is
    undefined on the data (every label in one category)."""

    n_items: int  # items with at least one label
    n_pairable: int  # items labelled by two or more raters: the ones that measure agreement
    raters: tuple[str, ...]
    percent_agreement: float | None  # share of agreeing rater pairs, averaged over pairable items
    cohen_kappa: Coefficient | None
    fleiss_kappa: Coefficient | None
    gwet_ac1: Coefficient | None
    krippendorff_alpha: Coefficient | None  # nominal
    status: str  # "ok", "below_threshold" (AC1 < min_ac1) or "insufficient_data"
    min_ac1: float


def evaluate_rater_agreement(
    labels: Mapping[str, Mapping[str, str]],
    *,
    min_ac1: float = RUBRIC_MIN_AC1,
    min_items: int = RUBRIC_MIN_ITEMS,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> RaterAgreement:
    """Agreement among raters: `labels[item][rater]` is that rater's PASS or FAIL on the item.

    Intervals: FCE for Cohen's kappa; a percentile bootstrap over items (seeded) for the others.
    """
    raters = tuple(sorted({r for by_rater in labels.values() for r in by_rater}))
    for item, by_rater in labels.items():
        bad = {r: v for r, v in by_rater.items() if v not in _USABLE}
        if bad:
            raise ValueError(f"item {item!r}: labels must be PASS or FAIL, got {bad}")
    rows = [[by_rater.get(r) for r in raters] for by_rater in labels.values() if by_rater]
    counts = rating_counts(rows, LABELS) if rows else np.zeros((0, 2), dtype=np.int64)
    per_item = counts.sum(axis=1)
    pairable = counts[per_item >= 2]
    options = {"confidence": confidence, "n_resamples": n_resamples, "seed": seed}

    def attempt(compute: Callable[..., Coefficient], *args: Any, **kwargs: Any) -> Coefficient | None:
        try:
            return compute(*args, **kwargs)
        except ValueError:  # not applicable or undefined on these data
            return None

    cohen = None
    if len(raters) == 2:
        both = [(by_rater[raters[0]], by_rater[raters[1]]) for by_rater in labels.values() if len(by_rater) == 2]
        if both:
            table = contingency_table([a for a, _ in both], [b for _, b in both], LABELS)
            cohen = attempt(cohens_kappa, table, confidence=confidence)
    ac1 = attempt(gwet_ac1_raters, counts, **options) if len(pairable) >= 2 else None
    status = ("insufficient_data" if len(pairable) < min_items or ac1 is None
              else "below_threshold" if ac1.value < min_ac1 else "ok")
    per_pair = pairable.sum(axis=1) * (pairable.sum(axis=1) - 1)
    pa = np.sum(pairable * (pairable - 1), axis=1) / per_pair
    return RaterAgreement(
        n_items=len(counts),
        n_pairable=len(pairable),
        raters=raters,
        percent_agreement=float(pa.mean()) if len(pairable) else None,
        cohen_kappa=cohen,
        fleiss_kappa=attempt(fleiss_kappa, pairable, **options) if len(pairable) >= 2 else None,
        gwet_ac1=ac1,
        krippendorff_alpha=attempt(krippendorff_alpha, counts, **options),
        status=status,
        min_ac1=min_ac1,
    )


def _validate(rows: list[LabelledItem]) -> None:
    seen: set[str] = set()
    for r in rows:
        if r.item_id in seen:
            raise ValueError(f"item id {r.item_id!r} appears more than once")
        seen.add(r.item_id)
        if r.label not in _USABLE:
            raise ValueError(
                f"item {r.item_id!r}: human label must be PASS or FAIL, got {r.label!r}"
            )
        bad = [v for v in (r.verdict, *r.components) if v not in _VERDICTS]
        if bad:
            raise ValueError(
                f"item {r.item_id!r}: verdicts must be PASS, FAIL, UNCLEAR or ERROR, got {bad}"
            )
