"""A span waiting for export keeps few GC-tracked objects alive.

Every object a waiting span holds counts towards the interpreter's next young collection and is
scanned again by it (and by older generations when the wait is long): at ~25 objects per span the
collections cost more whole-process CPU than the rest of the export (bench/sdk_overhead.py). Counted
with gc.get_objects() in a fresh process (the fake server runs in the test's process, so nothing
else allocates there), with the export held back so every span is still waiting.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import Reply

SCRIPT = r"""
import gc, json, sys, openai
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import verdict.tracing as vt
if sys.argv[2] == "joined":
    trace.set_tracer_provider(TracerProvider())
exporter = InMemorySpanExporter()
# Nothing is exported before the flush: every span of the measured calls is waiting.
vt.init(service_name="svc", exporter=exporter, schedule_delay_millis=600_000, max_export_batch_size=4096,
        max_queue_size=4096)
vt.instrument()
client = openai.OpenAI(api_key="sk-x", base_url=sys.argv[1], max_retries=0)
system = {"role": "system", "content": "You are the billing assistant."}

def call(i):
    messages = [system, {"role": "user", "content": f"refund invoice {i}"}]
    with vt.intent_context("billing.v1"):
        client.chat.completions.create(model="m", messages=messages, temperature=0.2)

for i in range(20):  # warm-up: caches, pools, lazily built state
    call(i)
vt.flush()
calls = 200
gc.collect()
before = len(gc.get_objects())
for i in range(calls):
    call(i)
gc.collect()
waiting = len(gc.get_objects()) - before
vt.flush()
spans = exporter.get_finished_spans()
print(json.dumps({"per_span": waiting / calls, "exported": len(spans),
                  "last": {k: v for k, v in spans[-1].attributes.items() if not isinstance(v, tuple)}}))
"""


@pytest.mark.parametrize("provider", ["owned", "joined"])
def test_a_waiting_span_keeps_few_objects_alive(fake_openai, provider):
    """`owned`: verdict.init() creates the provider (the default); `joined`: the app's provider. Each
    call's user message is new and stays referenced by its span until export (the request content);
    everything else the span holds must be plain strings and numbers or a handful of objects."""
    fake_openai.default = Reply("Refunded.", usage=(9, 2))
    out = subprocess.run([sys.executable, "-c", SCRIPT, fake_openai.base_url, provider], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["exported"] == 220
    # The message dict and list of the request (2) plus span context, trace flags, queued span, pending
    # content and the request snapshot (5); the SDK's ReadableSpan and a held result were 20-25.
    assert result["per_span"] <= 8, result["per_span"]
    last = result["last"]
    assert json.loads(last["gen_ai.input.messages"])[1]["parts"][0]["content"] == "refund invoice 199"
    assert json.loads(last["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Refunded."}], "finish_reason": "stop"}]
    assert last["gen_ai.usage.input_tokens"] == 9



def test_events_on_the_span_are_exported(fake_openai, traced):
    """The queued record keeps what the app or another instrumentation added to Verdict's span while it
    was current (here an HTTP client hook adding an event), next to the pending content."""
    import httpx2
    from opentelemetry import trace

    def hook(request: Any) -> None:
        trace.get_current_span().add_event("request sent", {"http.method": request.method})

    fake_openai.default = Reply("ok")
    client = fake_openai.client(http_client=httpx2.Client(event_hooks={"request": [hook]}))
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    span = traced.one()
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [("request sent", {"http.method": "POST"})]
    assert json.loads(span.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] == "hi"
