"""Runs a Graph over many samples.

The per-sample "copy of the graph" is a result list and a pending-count list (two small list copies);
units are shared, read-only. Model-calling nodes run on an I/O ThreadPoolExecutor, maps and pools on a
separate CPU executor. A worker that finishes a node runs one newly ready node of the same kind inline
(no thread handoff) and submits the rest; a worker that finishes a sample admits the next input itself,
so the calling thread only collects rows. Locks: one per sample for its counters, and one taken twice
per sample (not per call) to admit inputs. A bounded window of samples in flight keeps memory flat, and
every input gets exactly one row, in input order, whatever fails. With `stop_on_error` a sample whose node failed
starts no further model call: its nodes not yet started end as "upstream" errors naming the failed node (a
judgment that needs every dimension is ERROR after one failed for good; calls already in flight finish)."""

from __future__ import annotations

import contextvars
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
    __slots__ = ("attempts", "failed", "index", "lock", "pending", "remaining", "results", "source", "usage", "view")

    def __init__(self, index: int, source: Any, graph: Graph, results: list[Any], attempts: list[int]) -> None:
        self.index, self.source = index, source
        self.view = AttributeView(source) if isinstance(source, Mapping) else source
        self.results = results.copy()
        self.attempts = attempts.copy()
        self.pending = list(graph.pending)
        self.remaining = graph.sample_nodes
        self.usage = Usage()
        self.lock = threading.Lock()
        self.failed: str | None = None  # the path of the sample's first failed node (read with stop_on_error)


def _enter(context: contextvars.Context) -> None:
    for variable, value in context.items():
        variable.set(value)


class Executor:
    def __init__(self, graph: Graph, max_workers: int, cpu_workers: int, stop_on_error: bool = False) -> None:
        self.graph = graph
        self.stop_on_error = stop_on_error
        self.max_workers = max_workers
        self.cpu_workers = cpu_workers
        self._done: SimpleQueue[_Sample | object] = SimpleQueue()
        self._admission = threading.Lock()

    def run(self, samples: Iterable[Any], progress: bool | Callable[[int], None] = False,
            total: int | None = None) -> RunResult:
        started = time.perf_counter()
        self._inputs = iter(samples)
        self._rows: list[SampleResult | None] = []
        self._in_flight = 0
        self._exhausted = False
        self._input_error: BaseException | None = None
        # Workers start with the caller's context variables (e.g. `workload_context("judge")`, the
        # current span): the pools are per run, so setting them once per thread costs nothing per call.
        context = contextvars.copy_context()
        self._io = ThreadPoolExecutor(self.max_workers, thread_name_prefix="verdict-io",
                                      initializer=_enter, initargs=(context,))
        self._cpu = ThreadPoolExecutor(self.cpu_workers, thread_name_prefix="verdict-cpu",
                                       initializer=_enter, initargs=(context,))
        tick = _progress(progress, total)
        try:
            self._template, self._template_attempts, usage = self._run_pinned()
            # A bounded window of samples in flight; each finished sample admits the next one from the
            # worker thread that finished it, so the calling thread is never on the critical path.
            for _ in range(max(2 * self.max_workers, 4)):
                admitted = self._admit()
                if admitted is None:
                    break
                for index in self.graph.starts:
                    self._submit(admitted, index)
            # _END is queued exactly once: by whoever sees the inputs exhausted with nothing in flight.
            while True:
                item = self._done.get()
                if item is _END:
                    break
                sample: _Sample = item  # type: ignore[assignment]  # the queue holds samples and _END
                self._rows[sample.index] = SampleResult(self.graph, sample.index, sample.source, sample.results,
                                                        sample.attempts, sample.usage)
                usage = usage + sample.usage
                tick(1)
        finally:
            self._io.shutdown(wait=True, cancel_futures=True)
            self._cpu.shutdown(wait=True, cancel_futures=True)
            tick(0)
        if self._input_error is not None:
            raise self._input_error
        missing = [i for i, r in enumerate(self._rows) if r is None]
        if missing:  # an engine bug, never a silent drop
            raise RuntimeError(f"internal error: samples {missing[:10]} produced no row")
        return RunResult(tuple(self._rows), usage, time.perf_counter() - started)  # type: ignore[arg-type]  # no None left (checked above)

    def _run_pinned(self) -> tuple[list[Any], list[int], Usage]:
        """Pinned nodes run once, in order, on the calling thread; every sample starts from their results."""
        results: list[Any] = [None] * len(self.graph.nodes)
        attempts = [0] * len(self.graph.nodes)
        usage = Usage()
        for index in self.graph.pinned:
            node = self.graph.nodes[index]
            results[index], used, attempts[index] = run_step(node, None, [results[d] for d in node.deps])
            usage = usage + used
        return results, attempts, usage

    def _admit(self) -> _Sample | None:
        """Take the next input, or None when the inputs are exhausted (the caller starts its nodes).
        Inputs that cannot run (wrong type, nothing to run) get their row here."""
        while True:
            with self._admission:
                if self._exhausted:
                    return None
                try:
                    source = next(self._inputs, _END)
                except Exception as exc:  # the caller's iterator failed: stop admitting, re-raise at the end
                    self._input_error, source = exc, _END
                if source is _END:
                    self._exhausted = True
                    if self._in_flight == 0:
                        self._done.put(_END)
                    return None
                self._in_flight += 1
                index = len(self._rows)
                self._rows.append(None)
            sample = _Sample(index, source, self.graph, self._template, self._template_attempts)
            if not isinstance(source, Mapping | BaseModel) and not hasattr(source, "__dict__"):
                self._rows[index] = SampleResult(
                    self.graph, index, source, sample.results, sample.attempts, Usage(),
                    error=f"a sample is a mapping or an object with attributes, not {type(source).__name__}")
                self._finish(None)
                continue
            if sample.remaining == 0:  # every node is pinned
                self._finish(sample)
                continue
            return sample

    def _finish(self, sample: _Sample | None) -> None:
        if sample is not None:
            self._done.put(sample)
        with self._admission:
            self._in_flight -= 1
            last = self._exhausted and self._in_flight == 0
        if last:
            self._done.put(_END)

    def _submit(self, sample: _Sample, index: int) -> None:
        pool = self._io if self.graph.nodes[index].kind == "io" else self._cpu
        pool.submit(self._work, sample, index)

    def _work(self, sample: _Sample, index: int) -> None:
        nodes = self.graph.nodes
        kind = nodes[index].kind
        while True:
            node = nodes[index]
            result, used = self._step(sample, index)
            ready = []
            with sample.lock:
                if isinstance(result, UnitError) and sample.failed is None:
                    sample.failed = node.path
                sample.usage = sample.usage + used
                for dependent in node.dependents:
                    sample.pending[dependent] -= 1
                    if sample.pending[dependent] == 0:
                        ready.append(dependent)
                sample.remaining -= 1
                finished = sample.remaining == 0
            if finished:
                self._finish(sample)
                sample = self._admit()  # type: ignore[assignment]  # None is handled just below
                if sample is None:
                    return
                index, *others = self.graph.starts
                for start in others:
                    self._submit(sample, start)
                if nodes[index].kind != kind:
                    self._submit(sample, index)
                    return
                continue
            inline = next((d for d in ready if nodes[d].kind == kind), None)
            for dependent in ready:
                if dependent != inline:
                    self._submit(sample, dependent)
            if inline is None:
                return
            index = inline

    def _step(self, sample: _Sample, index: int) -> tuple[Any, Usage]:
        """Run one node for one sample (or, with stop_on_error after a failure, skip its model call)."""
        node = self.graph.nodes[index]
        if self.stop_on_error and sample.failed is not None and node.kind == "io":
            result: Any = UnitError("upstream", f"not run: {sample.failed} failed")
            used = Usage()
        else:
            try:
                result, used, sample.attempts[index] = run_step(node, sample.view,
                                                                [sample.results[d] for d in node.deps])
            except BaseException as exc:  # run_step catches everything expected; keep the sample alive anyway
                result, used = UnitError("internal", f"{type(exc).__name__}: {exc}"), Usage()
        sample.results[index] = result
        return result, used


_END = object()


def _progress(progress: bool | Callable[[int], None], total: int | None) -> Callable[[int], None]:
    """A callback taking the number of finished samples (0 = the run is over)."""
    if callable(progress):
        return progress
    if not progress:
        return lambda n: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="sample")

    def report(n: int) -> None:
        if n:
            bar.update(n)
        else:
            bar.close()

    return report
