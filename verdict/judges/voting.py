"""What every judge ensemble shares: its members, its tie rule, its fingerprint, running the members side
by side, and the plurality vote."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Generic, TypeVar

from verdict.graph.errors import ConfigurationError
from verdict.judges.fingerprint import combined_fingerprint

V = TypeVar("V", bound=Hashable)
R = TypeVar("R")


def plurality(tally: Mapping[V, int], on_tie: V) -> V:
    """The most frequent verdict; `on_tie` when several share the top count."""
    top = max(tally.values())
    leaders = [verdict for verdict, count in tally.items() if count == top]
    return leaders[0] if len(leaders) == 1 else on_tie


class Ensemble(Generic[V]):
    kind: ClassVar[str]

    def __init__(self, judges: Sequence[Any], on_tie: V) -> None:
        if not judges:
            raise ConfigurationError(f"a {type(self).__name__} needs at least one judge")
        self.judges = tuple(judges)
        self.on_tie = on_tie
        self.fingerprint = combined_fingerprint(self.kind, [j.fingerprint for j in self.judges],
                                                {"on_tie": str(on_tie)})

    def run_members(self, run: Callable[[Any], list[R]]) -> list[tuple[R, ...]]:
        """Each member's results over the same batch (members run side by side), regrouped per item."""
        with ThreadPoolExecutor(len(self.judges)) as pool:
            per_judge = list(pool.map(run, self.judges))
        return [tuple(results) for results in zip(*per_judge, strict=True)]
