"""Simulated days for traffic sent now: an exporter hook that moves spans back in time.

The tracing SDK stamps spans with the wall clock. `BackdatingExporter` is passed to
`verdict.init(exporter=...)` and hands the real exporter copies of the (already redacted) spans with
start and end moved by `offset_ns` (set per simulated day; flush before changing it) plus, with
`spread_ns`, a shift in [-spread_ns, +spread_ns] derived from the trace id, so a day's traffic spreads
over hours instead of landing in one instant while the spans of one trace move together. Everything
else (patching, attributes, content capture, redaction, OTLP, the collector) is the production path.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import cast

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

NS_PER_HOUR = 3600 * 10**9


def day_noon(day: int, days: int, today: datetime) -> datetime:
    """Noon of the UTC day simulated day `day` lands in: day `days - 1` (the last) is the UTC day before
    `today` (00:00 UTC), a closed alert period; the day before it falls in the drift gap, the earlier days
    in the baseline. With a spread under 12 h each simulated day stays inside its own UTC day."""
    return today - timedelta(days=days - day) + timedelta(hours=12)


def day_offset_ns(day: int, days: int, today: datetime, now_ns: int) -> int:
    """The offset that moves a span stamped at `now_ns` (epoch ns) to the noon of its simulated day."""
    return int(day_noon(day, days, today).timestamp()) * 10**9 - now_ns


class BackdatingExporter(SpanExporter):
    def __init__(self, inner: SpanExporter, spread_ns: int = 0) -> None:
        self.inner = inner
        self.offset_ns = 0
        self.spread_ns = spread_ns

    def _shift(self, span: ReadableSpan) -> int:
        if not self.spread_ns:
            return self.offset_ns
        # The trace id is random: its low bits give a uniform, per-trace position in the spread.
        position = (span.context.trace_id % 10_007) / 10_006
        return int(self.offset_ns + round((2 * position - 1) * self.spread_ns))

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        shifted = []
        for s in spans:
            shift = self._shift(s)
            shifted.append(ReadableSpan(
                name=s.name, context=s.context, parent=s.parent, resource=s.resource, attributes=s.attributes,
                events=s.events, links=s.links, kind=s.kind, status=s.status,
                # exported spans have ended: both times are set
                start_time=cast(int, s.start_time) + shift, end_time=cast(int, s.end_time) + shift,
                instrumentation_scope=s.instrumentation_scope))
        return self.inner.export(shifted)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
