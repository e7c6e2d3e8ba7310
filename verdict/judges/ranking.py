"""Bradley-Terry ratings from pairwise judgments (fitted by verdict.stats.bradley_terry).

Only usable (VALID) judgments enter the fit; INVALID and ERROR ones are counted, never turned into
ties. A TIE is half a win for each side. INCONSISTENT judgments (the preference followed the position)
are excluded by default and counted; `include_inconsistent=True` keeps them.

Two granularities:
- judgment level (default): one comparison per judgment, the position-swapped verdict; an included
  INCONSISTENT judgment counts as a tie.
- round level (`order_term=True`): one comparison per round, with the model shown first as the first
  model, so the fit estimates a first-position advantage (log θ, Agresti's home-advantage term). Position
  bias is what makes a judgment INCONSISTENT, so fit the order term with `include_inconsistent=True`,
  or it is estimated from the consistent judgments only and understates the bias.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from verdict.judges.pairwise import (
    PairwiseEnsembleJudgment,
    PairwiseJudgment,
    PairwiseStatus,
    PairwiseVerdict,
)

if TYPE_CHECKING:
    from verdict.stats.bradley_terry import BradleyTerryFit

Comparison = tuple[Hashable, Hashable, PairwiseJudgment | PairwiseEnsembleJudgment]
_ROUND_OUTCOME = {"A": "A", "B": "B", "C": "TIE"}  # marker -> outcome for the model shown first


@dataclass(frozen=True)
class PairwiseRanking:
    fit: BradleyTerryFit  # ratings, intervals, win probabilities, order effect
    used: int  # comparisons that entered the fit (rounds when order_term=True)
    ties: int  # used comparisons that were ties
    inconsistent: int  # INCONSISTENT judgments (excluded unless include_inconsistent)
    invalid: int  # INVALID judgments, excluded
    errors: int  # ERROR judgments, excluded


def rank_models(comparisons: Iterable[Comparison], *, include_inconsistent: bool = False, order_term: bool = False,
                n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> PairwiseRanking:
    """Ratings for the models in `(model_a, model_b, judgment)` triples, where `judgment` compared
    model_a's response (as response_a) with model_b's (as response_b)."""
    from verdict.stats.bradley_terry import fit_bradley_terry

    first: list[Hashable] = []
    second: list[Hashable] = []
    outcomes: list[str] = []
    counts = {PairwiseStatus.INVALID: 0, PairwiseStatus.ERROR: 0, "inconsistent": 0}
    for model_a, model_b, judgment in comparisons:
        if not judgment.is_usable:
            counts[judgment.status] += 1
            continue
        inconsistent = judgment.verdict is PairwiseVerdict.INCONSISTENT
        counts["inconsistent"] += inconsistent
        if inconsistent and not include_inconsistent:
            continue
        if not order_term:
            first.append(model_a)
            second.append(model_b)
            outcomes.append("TIE" if inconsistent else judgment.verdict.value)  # type: ignore[union-attr]  # a usable judgment has a verdict
            continue
        for component in _voting_components(judgment, include_inconsistent):
            for round_ in component.rounds:
                shown_first, shown_second = (model_a, model_b) if round_.order == "AB" else (model_b, model_a)
                first.append(shown_first)
                second.append(shown_second)
                outcomes.append(_ROUND_OUTCOME[round_.marker])  # type: ignore[index]  # a usable round has a marker
    if not outcomes:
        raise ValueError("no usable pairwise judgments to rank "
                         f"({counts['inconsistent']} inconsistent, {counts[PairwiseStatus.INVALID]} invalid, "
                         f"{counts[PairwiseStatus.ERROR]} errors)")
    fit = fit_bradley_terry(first, second, outcomes, order_term=order_term, n_resamples=n_resamples,
                            confidence=confidence, seed=seed)
    return PairwiseRanking(fit, len(outcomes), outcomes.count("TIE"), counts["inconsistent"],
                           counts[PairwiseStatus.INVALID], counts[PairwiseStatus.ERROR])


def _voting_components(judgment: PairwiseJudgment | PairwiseEnsembleJudgment,
                       include_inconsistent: bool) -> list[PairwiseJudgment]:
    components = judgment.components if isinstance(judgment, PairwiseEnsembleJudgment) else (judgment,)
    return [c for c in components if c.is_usable and (include_inconsistent or not c.position_flip)]
