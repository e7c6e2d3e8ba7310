"""Runs a Graph over many samples.

The per-sample "copy of the graph" is a result list and a pending-count list (two small list copies);
units are shared, read-only. Model-calling nodes run on an I/O ThreadPoolExecutor, maps and pools on a
separate CPU executor. A worker that finishes a node runs one newly ready node of the same kind inline
(no thread handoff) and submits the rest. The only lock is per sample. The calling thread admits samples
from the input iterator as earlier ones finish (a bounded window keeps memory flat), so every input gets
exactly one row, in input order, whatever fails.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from queue import SimpleQueue
from typing import Any

from pydantic import BaseModel

from verdict.graph.build import Graph
from verdict.graph.errors import UnitError
from verdict.graph.results import RunResult, SampleResult
from verdict.graph.step import run_step
from verdict.graph.template import AttributeView
from verdict.models.base import Usage


class _Sample:
    __slots__ = ("index", "lock", "pending", "remaining", "results", "source", "usage", "view")

    def __init__(self, index: int, source: Any, graph: Graph, results: list[Any]) -> None:
        self.index, self.source = index, source
        self.view = AttributeView(source) if isinstance(source, Mapping) else source
        self.results = results.copy()
        self.pending = list(graph.pending)
        self.remaining = graph.sample_nodes
        self.usage = Usage()
        self.lock = threading.Lock()


class Executor:
    def __init__(self, graph: Graph, max_workers: int, cpu_workers: int) -> None:
        self.graph = graph
        self.max_workers = max_workers
        self.cpu_workers = cpu_workers
        self._done: SimpleQueue[_Sample] = SimpleQueue()

    def run(self, samples: Iterable[Any], progress: bool | Callable[[int], None] = False,
            total: int | None = None) -> RunResult:
        started = time.perf_counter()
        graph = self.graph
        self._io = ThreadPoolExecutor(self.max_workers, thread_name_prefix="verdict-io")
        self._cpu = ThreadPoolExecutor(self.cpu_workers, thread_name_prefix="verdict-cpu")
        tick = _progress(progress, total)
        try:
            template, usage = self._run_pinned()
            rows: list[SampleResult | None] = []
            window = max(2 * self.max_workers, 4)
            in_flight = 0
            inputs = iter(samples)
            exhausted = False
            while True:
                while not exhausted and in_flight < window:
                    source = next(inputs, _END)
                    if source is _END:
                        exhausted = True
                        break
                    rows.append(None)
                    in_flight += self._admit(_Sample(len(rows) - 1, source, graph, template), rows)
                if in_flight == 0:
                    break
                sample = self._done.get()
                in_flight -= 1
                rows[sample.index] = SampleResult(graph, sample.index, sample.source, sample.results, sample.usage)
                usage = usage + sample.usage
                tick(1)
        finally:
            self._io.shutdown(wait=True, cancel_futures=True)
            self._cpu.shutdown(wait=True, cancel_futures=True)
            tick(0)
        missing = [i for i, r in enumerate(rows) if r is None]
        if missing:  # an engine bug, never a silent drop
            raise RuntimeError(f"internal error: samples {missing[:10]} produced no row")
        return RunResult(tuple(rows), usage, time.perf_counter() - started)  # type: ignore[arg-type]

    def _run_pinned(self) -> tuple[list[Any], Usage]:
        """Pinned nodes run once, in order, on the calling thread; every sample starts from their results."""
        results: list[Any] = [None] * len(self.graph.nodes)
        usage = Usage()
        for index in self.graph.pinned:
            node = self.graph.nodes[index]
            results[index], used = run_step(node, None, [results[d] for d in node.deps])
            usage = usage + used
        return results, usage

    def _admit(self, sample: _Sample, rows: list[SampleResult | None]) -> int:
        source = sample.source
        if not isinstance(source, Mapping | BaseModel) and not hasattr(source, "__dict__"):
            rows[sample.index] = SampleResult(
                self.graph, sample.index, source, sample.results, Usage(),
                error=f"a sample is a mapping or an object with attributes, not {type(source).__name__}")
            return 0
        if sample.remaining == 0:
            rows[sample.index] = SampleResult(self.graph, sample.index, source, sample.results, Usage())
            return 0
        for index in self.graph.starts:
            self._submit(sample, index)
        return 1

    def _submit(self, sample: _Sample, index: int) -> None:
        pool = self._io if self.graph.nodes[index].kind == "io" else self._cpu
        pool.submit(self._work, sample, index)

    def _work(self, sample: _Sample, index: int) -> None:
        nodes = self.graph.nodes
        kind = nodes[index].kind
        while True:
            node = nodes[index]
            try:
                result, used = run_step(node, sample.view, [sample.results[d] for d in node.deps])
            except BaseException as exc:  # run_step catches everything expected; keep the sample alive anyway
                result, used = UnitError("internal", f"{type(exc).__name__}: {exc}"), Usage()
            sample.results[index] = result
            ready = []
            with sample.lock:
                sample.usage = sample.usage + used
                for dependent in node.dependents:
                    sample.pending[dependent] -= 1
                    if sample.pending[dependent] == 0:
                        ready.append(dependent)
                sample.remaining -= 1
                finished = sample.remaining == 0
            if finished:
                self._done.put(sample)
                return
            inline = next((d for d in ready if nodes[d].kind == kind), None)
            for dependent in ready:
                if dependent != inline:
                    self._submit(sample, dependent)
            if inline is None:
                return
            index = inline


_END = object()


def _progress(progress: bool | Callable[[int], None], total: int | None) -> Callable[[int], None]:
    """A callback taking the number of finished samples (0 = the run is over)."""
    if callable(progress):
        return progress
    if not progress:
        return lambda n: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="sample")
    return lambda n: bar.update(n) if n else bar.close()
