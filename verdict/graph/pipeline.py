"""Pipeline: the top-level Block that builds and runs a judge graph."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from verdict.graph.build import Graph, build
from verdict.graph.compose import Block
from verdict.graph.errors import ConfigurationError
from verdict.graph.executor import Executor
from verdict.graph.results import RunResult, SampleResult


class Pipeline(Block):
    """`Pipeline() >> unit >> Layer(...)`. The graph is materialised (and checked) on the first run or on
    `build()`; later changes to its units are not seen by that pipeline object."""

    def __init__(self, name: str | None = None, members: list[Any] | None = None) -> None:
        super().__init__(name or "pipeline", members)
        self._graph: Graph | None = None
        self._build_lock = threading.Lock()

    @property
    def segment(self) -> str:  # type: ignore[override]  # read-only here: a Pipeline's segment is its name
        return self.name or "pipeline"

    def build(self) -> Graph:
        """Materialise the graph; raises ConfigurationError for anything that would fail mid-run."""
        with self._build_lock:
            if self._graph is None:
                if not self.members:
                    raise ConfigurationError(f"pipeline {self.name!r} is empty")
                self._graph = build(self)
            return self._graph

    def run(self, sample: Any, *, max_workers: int = 16) -> SampleResult:
        """Run one sample; the result's `.usage` holds its token usage and cost."""
        return self.run_from_dataset([sample], max_workers=max_workers)[0]

    def run_from_dataset(self, samples: Iterable[Any], *, max_workers: int = 32, cpu_workers: int | None = None,
                         progress: bool | Callable[[int], None] = False, stop_on_error: bool = False) -> RunResult:
        """Run every sample; one row per input, in input order. Model calls use `max_workers` threads,
        maps and pools `cpu_workers` (default: the CPU count). `stop_on_error`: a sample with a failed
        node starts no further model call (its unstarted nodes end as "upstream" errors)."""
        if max_workers < 1:
            raise ConfigurationError(f"max_workers must be >= 1, got {max_workers}")
        cpu = cpu_workers or os.cpu_count() or 1
        total = len(samples) if hasattr(samples, "__len__") else None  # type: ignore[arg-type]  # Sized: checked by hasattr
        return Executor(self.build(), max_workers, cpu, stop_on_error).run(samples, progress, total)
