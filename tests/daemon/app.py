"""The instrumented app of the end-to-end test (run as its own process).

It calls `verdict.init()` + `verdict.instrument()` and sends chat calls through the real `openai`
client to the fake LLM server, under 4 intents, for each of 9 simulated days. The days are
simulated with the demo's `BackdatingExporter` (verdict_demo/backdating.py): it hands the
real OTLP HTTP exporter copies of the (already redacted) spans moved back by the current day's
offset (relative to now: the last day 12 h ago, inside the windows of a drift look taken now); everything else is the production path. After each day the app flushes, so every span of a
day is exported with that day's offset.

    python -m tests.daemon.app COLLECTOR_URL LLM_BASE_URL TENANT PER_DAY INTENT...
"""

from __future__ import annotations

import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from verdict_demo.backdating import NS_PER_HOUR, BackdatingExporter

DAYS = 9


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
