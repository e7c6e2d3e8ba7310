"""What a run returns: one SampleResult per input, in input order, and the run's summed usage."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast, overload

from pydantic import BaseModel

from verdict.graph.errors import UnitError
from verdict.models.base import Usage

if TYPE_CHECKING:
    from verdict.graph.build import Graph


class SampleResult:
    """Every unit's output (or error state) for one sample, addressable by unit path
    (`row["layer.judge[2]"]`) or by a unit name that is unique in the graph (`row["meanpool"]`), and the
    attempt that produced each one."""

    __slots__ = ("_attempts", "_graph", "_results", "error", "index", "source", "usage")

    def __init__(self, graph: Graph, index: int, source: Any, results: Sequence[Any], attempts: Sequence[int],
                 usage: Usage, error: str | None = None) -> None:
        self._graph, self._results, self._attempts = graph, results, attempts
        self.index, self.source, self.usage = index, source, usage
        # Why the sample failed: the first unit that failed on its own (not merely downstream of a failure).
        self.error = error or _first_error(graph, results)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def outputs(self) -> dict[str, BaseModel | UnitError | None]:
        return {node.path: self._results[node.index] for node in self._graph.nodes}

    @property
    def attempts(self) -> dict[str, int]:
        """path -> the attempt that produced the unit's result: the one that succeeded, or the last one for
        a UnitError (its `.attempts`); 0 when the unit called no model (CPU units, upstream failures)."""
        return {node.path: self._attempts[node.index] for node in self._graph.nodes}

    @property
    def errors(self) -> dict[str, UnitError]:
        return {p: o for p, o in self.outputs.items() if isinstance(o, UnitError)}

    @property
    def output(self) -> BaseModel | UnitError | None:
        """The output of the graph's last unit (in topological order)."""
        return self._results[-1] if self._results else None

    def __getitem__(self, path: str) -> BaseModel | UnitError | None:
        index = self._graph.by_path.get(path)
        if index is None:
            matches = [n.index for n in self._graph.nodes if n.unit.name == path]
            if len(matches) != 1:
                known = ", ".join(self._graph.by_path)
                raise KeyError(f"no unit at path {path!r}" + (" (ambiguous name)" if matches else "")
                               + f"; paths: {known}")
            index = matches[0]
        return cast(BaseModel | UnitError | None, self._results[index])

    def __repr__(self) -> str:
        state = "ok" if self.ok else f"error={self.error!r}"
        return f"<SampleResult #{self.index} {state}>"


@dataclass(frozen=True, slots=True)
class RunResult(Sequence[SampleResult]):
    rows: tuple[SampleResult, ...]
    usage: Usage
    elapsed_s: float

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> SampleResult: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[SampleResult, ...]: ...

    def __getitem__(self, index: int | slice) -> SampleResult | tuple[SampleResult, ...]:
        return self.rows[index]

    def __iter__(self) -> Iterator[SampleResult]:
        return iter(self.rows)

    @property
    def failed(self) -> list[SampleResult]:
        return [r for r in self.rows if not r.ok]


def _first_error(graph: Graph, results: Sequence[Any]) -> str | None:
    upstream = None
    for node in graph.nodes:
        result = results[node.index]
        if isinstance(result, UnitError):
            if result.kind != "upstream":
                return f"{node.path}: {result}"
            upstream = upstream or f"{node.path}: {result}"
    return upstream
