"""The instrumented app of the end-to-end test (run as its own process).

It calls `verdict.init()` + `verdict.instrument()` and sends chat calls through the real `openai`
client to the fake LLM server, under 4 intents, for each of 9 simulated days. The days are
simulated with the demo's `BackdatingExporter` (verdict_demo/backdating.py): it hands the
real OTLP HTTP exporter copies of the (already redacted) spans moved back by the current day's
offset (relative to now: the last day 12 h ago, inside the windows of a drift look taken now); everything else is the production path. After each day the app flushes, so every span of a
day is exported with that day's offset.

    python -m tests.daemon.app COLLECTOR_URL LLM_BASE_URL TENANT PER_DAY INTENT...

COLLECTOR_URL may be `URL+SPLIT_URL,SPLIT_URL...`: every span then goes to URL and, in the same export, to
one of the SPLIT_URLs chosen by its trace id (as a trace-aware load balancer in front of several
collectors routes), so one run lands the same traffic whole in one lake and split across others.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from verdict_demo.backdating import NS_PER_HOUR, BackdatingExporter

DAYS = 9


def query_for(intent: str, day: int, i: int) -> str:
    return f"[{intent} day {day}] How do I change setting {i}?"


class TeeByTrace(SpanExporter):
    """Every span to `whole`; each span also to one of `split`, by its trace id (a trace stays together)."""

    def __init__(self, whole: SpanExporter, split: Sequence[SpanExporter]) -> None:
        self.whole, self.split = whole, list(split)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        parts: dict[int, list[ReadableSpan]] = {}
        for s in spans:
            parts.setdefault(s.context.trace_id % len(self.split), []).append(s)
        results = [self.whole.export(spans), *(self.split[i].export(part) for i, part in parts.items())]
        ok = all(r == SpanExportResult.SUCCESS for r in results)
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        for exporter in (self.whole, *self.split):
            exporter.shutdown()


def _otlp(url: str) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=30)


def main(argv: list[str]) -> int:
    collector_urls, llm_base_url, tenant, per_day, *intents = argv
    import openai

    import verdict

    collector_url, _, split = collector_urls.partition("+")
    inner: SpanExporter = TeeByTrace(_otlp(collector_url), [_otlp(u) for u in split.split(",")]) if split \
        else _otlp(collector_url)
    exporter = BackdatingExporter(inner)
    verdict.init(service_name="e2e-app", endpoint=collector_url, tenant_id=tenant, exporter=exporter,
                 capture_content=True, schedule_delay_millis=200)
    verdict.instrument()
    client = openai.OpenAI(base_url=llm_base_url, api_key="sk-app-test", max_retries=0)
    sent = 0
    for day in range(DAYS):
        exporter.offset_ns = -((DAYS - 1 - day) * 24 + 12) * NS_PER_HOUR
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
