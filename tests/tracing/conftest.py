"""Tracing fixtures: one real SDK TracerProvider for the session, Verdict initialised per test.

`traced` gives a Verdict pipeline exporting into an InMemorySpanExporter (the real BatchSpanProcessor
and content exporter in between); `all_spans` also sees spans of other instrumentation scopes (the
anthropic SDK's own), through a second processor on the same provider.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import verdict.tracing as vt

_everything = InMemorySpanExporter()


def _global_provider() -> TracerProvider:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        provider.add_span_processor(SimpleSpanProcessor(_everything))
    return provider


@dataclass
class Traced:
    exporter: InMemorySpanExporter

    def spans(self) -> list[ReadableSpan]:
        """Verdict's exported spans, after a flush (the batch processor runs on its own thread)."""
        vt.flush()
        return list(self.exporter.get_finished_spans())

    def one(self) -> ReadableSpan:
        spans = self.spans()
        assert len(spans) == 1, [s.name for s in spans]
        return spans[0]

    def attrs(self) -> dict[str, Any]:
        return dict(self.one().attributes or {})

    def all_spans(self) -> list[ReadableSpan]:
        """Every span the provider finished, whatever its instrumentation scope."""
        vt.flush()
        return list(_everything.get_finished_spans())


def start(**init_kwargs: Any) -> Traced:
    _global_provider()
    exporter = InMemorySpanExporter()
    vt.init(exporter=exporter, **init_kwargs)
    vt.instrument()
    return Traced(exporter)


def stop() -> None:
    vt.uninstrument()
    vt.shutdown()
    vt.reset_stats()
    _everything.clear()


@pytest.fixture
def traced() -> Iterator[Traced]:
    traced = start()
    try:
        yield traced
    finally:
        stop()


@pytest.fixture
def restart() -> Iterator[Any]:
    """`restart(**init_kwargs)` re-initialises Verdict with other options inside a test."""

    def again(**kwargs: Any) -> Traced:
        stop()
        return start(**kwargs)

    yield again
    stop()
