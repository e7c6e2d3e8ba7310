"""Verdict's light call span (verdict/tracing/callspan.py) exports exactly what the SDK's span would.

One fresh process (the global provider can be set once) runs the same calls twice against the fake OpenAI
server: first on the provider `init()` created, where calls get a `CallSpan`, then after the app adds a span
processor of its own, where they must get the SDK's span again (and that processor must see them), also after
`shutdown()` and a new `init()`. The
exported spans of the two halves must be equal but for ids and times: roots, local and remote parents
(trace state, the random-trace-id flag), an unsampled parent (nothing exported), a failed call, a stream, and
app code that writes to the current span during the call (attributes valid and invalid, events, an exception,
a link, the status)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import Fail, Reply

SCRIPT = r"""
import json, sys, httpx2, openai
from opentelemetry import context, trace
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, StatusCode, TraceFlags, TraceState
import verdict.tracing as vt
from verdict.tracing.callspan import CallSpan

exporter = InMemorySpanExporter()
vt.init(service_name="svc", exporter=exporter)
vt.instrument()
seen = []

def app_writes(request):
    # runs on the calling thread inside the call: the current span is Verdict's
    span = trace.get_current_span()
    seen.append(type(span).__name__)
    span.set_attribute("app.note", "from a hook")
    span.set_attribute("app.bad", object())  # invalid: the SDK drops it
    span.set_attributes({"app.n": 3, "app.flags": (True, False)})
    span.add_event("app.event", {"n": 1, "bad": object()})
    span.add_link(SpanContext(0xABC, 0xDEF, True, TraceFlags(1)), {"why": "batch"})
    span.record_exception(ValueError("boom"), {"extra": "x"})
    span.set_status(StatusCode.UNSET)  # never overrides

quiet = openai.OpenAI(api_key="sk-x", base_url=sys.argv[1], max_retries=0)
hooked = openai.OpenAI(api_key="sk-x", base_url=sys.argv[1], max_retries=0,
                       http_client=httpx2.Client(event_hooks={"request": [app_writes]}))
messages = [{"role": "user", "content": "hello"}]
app = trace.get_tracer("app")

def under(ctx_span, fn):
    token = context.attach(trace.set_span_in_context(ctx_span))
    try:
        fn()
    finally:
        context.detach(token)

def remote(flags, state):
    return NonRecordingSpan(SpanContext(0x1234, 0x5678, True, TraceFlags(flags), TraceState(state)))

def calls():
    with vt.intent_context("billing.v1"):
        quiet.chat.completions.create(model="m", messages=messages)
    with app.start_as_current_span("parent"):
        quiet.chat.completions.create(model="m", messages=messages)
    under(remote(0x03, [("vendor", "v1")]), lambda: quiet.chat.completions.create(model="m", messages=messages))
    under(remote(0x00, []), lambda: quiet.chat.completions.create(model="m", messages=messages))
    try:
        quiet.chat.completions.create(model="fail", messages=messages)
    except openai.APIStatusError:
        pass
    for _ in quiet.chat.completions.create(model="m", messages=messages, stream=True,
                                           stream_options={"include_usage": True}):
        pass
    hooked.chat.completions.create(model="m", messages=messages)

def exported():
    vt.flush()
    out = []
    for s in exporter.get_finished_spans():
        if s.instrumentation_scope.name != "verdict.tracing":
            continue
        attrs = {k: v for k, v in s.attributes.items() if k not in ("gen_ai.response.time_to_first_chunk", "gen_ai.response.id")}
        out.append({
            "name": s.name, "kind": str(s.kind), "parent": None if s.parent is None else
            [s.parent.trace_id == s.context.trace_id, s.parent.is_remote],
            "flags": int(s.context.trace_flags), "state": s.context.trace_state.to_header(),
            "sampled_remote_trace": s.context.trace_id == 0x1234,
            "attrs": json.loads(json.dumps(attrs, default=list)),
            "status": [str(s.status.status_code), s.status.description],
            "events": [[e.name, dict(e.attributes)] for e in s.events],
            "links": [[l.context.span_id, dict(l.attributes)] for l in s.links],
            "resource": dict(s.resource.attributes), "scope": [s.instrumentation_scope.name,
                                                                s.instrumentation_scope.version],
            "timed": s.start_time is not None and s.end_time >= s.start_time,
        })
    exporter.clear()
    return out

calls()
light = exported()
light_seen = list(seen)

class AppProcessor(SpanProcessor):
    started = ended = 0
    def on_start(self, span, parent_context=None):
        if span.instrumentation_scope.name == "verdict.tracing":
            AppProcessor.started += 1
    def on_end(self, span):
        if span.instrumentation_scope.name == "verdict.tracing":
            AppProcessor.ended += 1

trace.get_tracer_provider().add_span_processor(AppProcessor())
seen.clear()
calls()
sdk = exported()
sdk_seen, after_sdk = list(seen), [AppProcessor.started, AppProcessor.ended]
vt.shutdown()  # the app's processor stays on the provider: a new init() must not take it for Verdict's
exporter = InMemorySpanExporter()  # shutdown() shut the first one down
vt.init(service_name="svc", exporter=exporter)
seen.clear()
calls()
again = exported()
print(json.dumps({"light": light, "sdk": sdk, "again": again, "light_seen": light_seen, "sdk_seen": sdk_seen,
                  "again_seen": seen, "app_processor": [after_sdk, [AppProcessor.started, AppProcessor.ended]]}))
"""


def _run(fake_openai, **env: str) -> dict:
    fake_openai.default = Reply("sure", usage=(7, 1))
    fake_openai.handler = lambda request: Fail(500) if (request.body or {}).get("model") == "fail" else None
    out = subprocess.run([sys.executable, "-c", SCRIPT, fake_openai.base_url], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2], env={**os.environ, **env})
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def outcome(fake_openai) -> dict:
    return _run(fake_openai)


def test_light_spans_export_what_sdk_spans_do(outcome):
    assert outcome["light_seen"] == ["CallSpan"]  # the light path ran
    assert outcome["sdk_seen"] == ["_Span"]  # an app processor on the provider: the SDK's spans again
    assert outcome["again_seen"] == ["_Span"]  # also after shutdown() and init() again
    assert outcome["app_processor"] == [[6, 6], [12, 12]]  # ...and that processor saw them start and end
    light, sdk = outcome["light"], outcome["sdk"]
    assert len(light) == 6  # every call but the one under an unsampled parent
    assert light == sdk == outcome["again"]


def test_light_spans_carry_parents_state_and_app_writes(outcome):
    """What the equality above compares is really there (it would also hold if both halves lost it)."""
    root, child, remote, failed, stream, hooked = outcome["light"]
    assert root["parent"] is None and root["attrs"]["verdict.intent_key"] == "billing.v1"
    assert root["flags"] & 0x01 and root["resource"]["service.name"] == "svc"
    assert child["parent"] == [True, False]
    assert remote["parent"] == [True, True] and remote["sampled_remote_trace"]
    assert remote["state"] == "vendor=v1" and remote["flags"] == 0x03
    assert failed["status"][0] == "StatusCode.ERROR" and failed["attrs"]["error.type"] == "openai.InternalServerError"
    assert stream["attrs"]["gen_ai.usage.output_tokens"] == 1 and stream["timed"]
    assert hooked["attrs"]["app.note"] == "from a hook" and hooked["attrs"]["app.n"] == 3
    assert hooked["attrs"].get("app.bad") is None and hooked["attrs"]["app.flags"] == [True, False]
    assert [name for name, _ in hooked["events"]] == ["app.event", "exception"]
    assert hooked["events"][0][1] == {"n": 1, "bad": None}  # the SDK replaces values it cannot keep
    assert hooked["events"][1][1]["exception.type"] == "ValueError" and hooked["events"][1][1]["extra"] == "x"
    assert hooked["links"] == [[0xDEF, {"why": "batch"}]]
    assert hooked["status"][0] == "StatusCode.UNSET"
    assert "gen_ai.input.messages" in hooked["attrs"]  # content still added on the export thread


def test_another_sampler_keeps_the_sdk_span(fake_openai):
    """A provider configured with another sampler (here by OTEL_TRACES_SAMPLER) decides every span itself."""
    outcome = _run(fake_openai, OTEL_TRACES_SAMPLER="always_off")
    assert outcome["light"] == outcome["sdk"] == []
    assert outcome["light_seen"] == ["NonRecordingSpan"]
