"""The instrumented app of the end-to-end test (run as its own process).

It calls `verdict.init()` + `verdict.instrument()` and sends chat calls through the real `openai`
client to the fake LLM server, under 4 intents, for each of 9 simulated days. The tracing SDK
stamps spans with the wall clock, so the days are simulated with one test-only hook, the
`BackdatingExporter` below: it is passed to `verdict.init(exporter=...)` and hands the real OTLP
HTTP exporter copies of the (already redacted) spans with start/end times moved back by the
current day's offset. Everything else (patching, attributes, content capture, redaction, OTLP,
the collector) is the production path. After each day the app flushes, so every span of a day is
exported with that day's offset.

    python -m tests.daemon.app COLLECTOR_URL LLM_BASE_URL TENANT PER_DAY INTENT...
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

DAYS = 9
NS_PER_HOUR = 3600 * 10**9


def day_offset_ns(day: int) -> int:
    """Day 8 (the last) lands 12 h before now: inside the drift detector's current window (last 24 h);
    day 7 falls in the gap; days 0-6 fill the 7-day baseline."""
    return -((DAYS - 1 - day) * 24 + 12) * NS_PER_HOUR


class BackdatingExporter(SpanExporter):
    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.offset_ns = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        shifted = [ReadableSpan(
            name=s.name, context=s.context, parent=s.parent, resource=s.resource, attributes=s.attributes,
            events=s.events, links=s.links, kind=s.kind, status=s.status,
            start_time=s.start_time + self.offset_ns, end_time=s.end_time + self.offset_ns,
            instrumentation_scope=s.instrumentation_scope) for s in spans]
        return self.inner.export(shifted)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def query_for(intent: str, day: int, i: int) -> str:
    return f"[{intent} day {day}] How do I change setting {i}?"


def main(argv: list[str]) -> int:
    collector_url, llm_base_url, tenant, per_day, *intents = argv
    import openai

    import verdict

    exporter = BackdatingExporter(OTLPSpanExporter(endpoint=f"{collector_url}/v1/traces", timeout=30))
    verdict.init(service_name="e2e-app", endpoint=collector_url, tenant_id=tenant, exporter=exporter,
                 capture_content=True, schedule_delay_millis=200)
    verdict.instrument()
    client = openai.OpenAI(base_url=llm_base_url, api_key="sk-app-test", max_retries=0)
    sent = 0
    for day in range(DAYS):
        exporter.offset_ns = day_offset_ns(day)
        for intent in intents:
            with verdict.intent_context(intent):
                for i in range(int(per_day)):
                    client.chat.completions.create(
                        model="gpt-4o-mini", messages=[{"role": "user", "content": query_for(intent, day, i)}])
                    sent += 1
        if not verdict.flush(60):
            print("flush failed", file=sys.stderr)
            return 1
    verdict.shutdown()
    print(f"sent {sent}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
