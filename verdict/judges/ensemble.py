"""JudgeEnsemble: several rubric Judges grade the same item and vote per dimension.

Every configured judge leaves one component record, failed ones included, so a reader sees who failed
and why. Only usable components vote, and only on the dimensions they graded. The most frequent
verdict wins; a tie between the leading verdicts gives `on_tie` (UNCLEAR by default). The aggregate is
usable iff at least one component is usable: a total failure is ERROR, never a verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verdict.judges.judge import Graded, GradingItem, Judge, Judgment, JudgmentStatus, Verdict
from verdict.judges.voting import Ensemble, plurality
from verdict.models.base import Usage


@dataclass(frozen=True, slots=True)
class DimensionVote:
    dimension: str
    verdict: Verdict
    votes: dict[Verdict, int]  # from usable components that graded this dimension
    voters: int


@dataclass(frozen=True, slots=True)
class EnsembleJudgment(Graded):
    status: JudgmentStatus  # VALID iff a component is VALID; SKIPPED iff every component is; else ERROR
    dimensions: tuple[DimensionVote, ...]
    components: tuple[Judgment, ...]  # one per configured judge, in configuration order
    fingerprint: str
    error: str | None = None

    @property
    def usage(self) -> Usage:
        return sum((c.usage for c in self.components), Usage())

    @property
    def reply(self) -> str | None:
        """The first component's unusable reply (an ERROR judgment's evidence), if any."""
        return next((c.reply for c in self.components if c.reply is not None), None)

    @property
    def coverage(self) -> float:
        """Share of components that are usable."""
        return sum(c.is_usable for c in self.components) / len(self.components)


class JudgeEnsemble(Ensemble[Verdict]):
    kind = "judge-ensemble"

    def __init__(self, judges: Sequence[Judge], *, on_tie: Verdict = Verdict.UNCLEAR) -> None:
        super().__init__(judges, Verdict(on_tie))

    def grade(self, answer: str, *, query: str | None = None, context: str | Sequence[str] | None = None,
              history: str | None = None, trajectory: str | None = None) -> EnsembleJudgment:
        return self.grade_many([GradingItem(answer, query, context, history, trajectory)], max_workers=1)[0]

    def grade_many(self, items: Iterable[GradingItem | Mapping[str, Any]], *, max_workers: int = 16) -> list[EnsembleJudgment]:
        batch = [GradingItem.of(item) for item in items]
        # Each judge is its own engine run over the whole batch.
        return [self.vote(components)
                for components in self.run_members(lambda j: j.grade_many(batch, max_workers=max_workers))]

    def vote(self, components: tuple[Judgment, ...]) -> EnsembleJudgment:
        usable = [c for c in components if c.is_usable]
        if not usable:
            reasons = "; ".join(f"judge {i} ({c.model}) {c.status.value}: {c.error}" for i, c in enumerate(components))
            # Nothing to grade is not a failure; any component that failed makes the whole an ERROR.
            skipped = all(c.status is JudgmentStatus.SKIPPED for c in components)
            status = JudgmentStatus.SKIPPED if skipped else JudgmentStatus.ERROR
            return EnsembleJudgment(status, (), components, self.fingerprint, reasons)
        tallies: dict[str, dict[Verdict, int]] = {}
        for component in usable:
            for graded in component.dimensions:
                tally = tallies.setdefault(graded.dimension, {})
                tally[graded.verdict] = tally.get(graded.verdict, 0) + 1
        votes = tuple(DimensionVote(dimension, plurality(tally, self.on_tie), tally, sum(tally.values()))
                      for dimension, tally in tallies.items())
        return EnsembleJudgment(JudgmentStatus.VALID, votes, components, self.fingerprint)
