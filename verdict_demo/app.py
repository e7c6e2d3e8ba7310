"""The demo's support-bot app, run as its own process by the orchestrator.

A plain instrumented app: `verdict.init()` + `verdict.instrument()`, then chat completions through the
real `openai` client, each request inside `verdict.intent_context(<intent>)`. The only simulation hook
is the `BackdatingExporter` (the orchestrator tells the app which simulated day it is living).

TODAY is 00:00 UTC of the day the demo runs (ISO): the last simulated day is the UTC day before it.

Protocol (line based): the orchestrator writes `day <n>` on stdin; the app sends that day's traffic,
flushes every span to the collector and answers `sent <n> <requests>` on stdout. End of stdin: the
app shuts tracing down and exits 0. SIGTERM: it exits at once (143) without a traceback.

    python -m verdict_demo.app COLLECTOR_URL LLM_BASE_URL DAYS PER_DAY SEED TODAY
"""

from __future__ import annotations

import os
import signal
import sys
import time
from datetime import datetime

from verdict_demo.scenario import Scenario

SPREAD_HOURS = 10  # a day's traffic spreads over +-10 h around its noon: inside its own UTC day


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the orchestrator decides when the app stops
    collector_url, llm_base_url, days, per_day, seed, today = argv
    scenario = Scenario(days=int(days), per_day=int(per_day), seed=int(seed))

    import openai
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    import verdict
    from verdict_demo.backdating import NS_PER_HOUR, BackdatingExporter, day_offset_ns

    exporter = BackdatingExporter(OTLPSpanExporter(endpoint=f"{collector_url}/v1/traces", timeout=30),
                                  spread_ns=SPREAD_HOURS * NS_PER_HOUR)
    verdict.init(service_name="support-bot", endpoint=collector_url, exporter=exporter, capture_content=True,
                 schedule_delay_millis=200)
    verdict.instrument()
    client = openai.OpenAI(base_url=llm_base_url, api_key="sk-demo-offline", max_retries=2)
    print("ready", flush=True)
    for line in sys.stdin:
        day = int(line.split()[1])
        exporter.offset_ns = day_offset_ns(day, scenario.days, datetime.fromisoformat(today), time.time_ns())
        traffic = scenario.day_traffic(day)
        for request in traffic:
            with verdict.intent_context(request.intent.key):
                client.chat.completions.create(
                    model="gpt-4o-mini", user=request.customer, max_tokens=512,
                    messages=[{"role": "system", "content": request.intent.system_prompt},
                              {"role": "user", "content": request.question.text}])
        if not verdict.flush(60):
            print("the collector did not accept every span within 60 s", file=sys.stderr)
            return 1
        try:
            print(f"sent {day} {len(traffic)}", flush=True)
        except BrokenPipeError:  # the demo is gone (killed): stop as its watchdog's SIGTERM would
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            break
    verdict.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
