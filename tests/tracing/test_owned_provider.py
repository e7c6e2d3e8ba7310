"""When Verdict creates the TracerProvider itself, response attributes are recorded on the export
thread. That needs a fresh process (the global provider can be set once), so it runs in one."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import Fail, Reply

SCRIPT = r"""
import json, sys, openai
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import verdict.tracing as vt
from verdict.tracing.runtime import STATE
exporter = InMemorySpanExporter()
vt.init(service_name="svc", tenant_id="acme", exporter=exporter)
vt.instrument()
client = openai.OpenAI(api_key="sk-x", base_url=sys.argv[1], max_retries=0)
messages = [{"role": "user", "content": "mail jane.doe@example.com"}]
if sys.argv[2] == "stream":
    for _ in client.chat.completions.create(model="m", messages=messages, stream=True,
                                            stream_options={"include_usage": True}):
        pass
else:
    try:
        client.chat.completions.create(model="m", messages=messages)
    except openai.APIStatusError:
        pass
vt.flush()
(span,) = exporter.get_finished_spans()
print(json.dumps({"deferred": STATE.current.deferred_response, "attrs": dict(span.attributes),
                  "resource": dict(span.resource.attributes)}))
"""


def _attrs_in_process(fake_openai, traced, mode: str) -> dict:
    import openai

    messages = [{"role": "user", "content": "mail jane.doe@example.com"}]
    client = fake_openai.client()
    if mode == "stream":
        for _ in client.chat.completions.create(model="m", messages=messages, stream=True,
                                                stream_options={"include_usage": True}):
            pass
    else:
        with contextlib.suppress(openai.APIStatusError):
            client.chat.completions.create(model="m", messages=messages)
    return traced.attrs()


@pytest.mark.parametrize(("mode", "behaviour"), [
    ("plain", Reply("sure", usage=(7, 1))),
    ("stream", Reply("sure", usage=(7, 1))),
    ("error", Fail(500)),
])
def test_deferred_recording_gives_the_same_span(fake_openai, traced, mode, behaviour):
    """The same call gives the same attributes whether the app's provider records them on the calling
    thread or Verdict's own provider records them on the export thread: plain, streamed and failed."""
    fake_openai.default = behaviour
    joined = _attrs_in_process(fake_openai, traced, mode)  # the app's provider: recorded synchronously
    out = subprocess.run([sys.executable, "-c", SCRIPT, fake_openai.base_url, mode], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["deferred"] is True
    owned = result["attrs"]
    assert owned.pop("verdict.tenant_id") == "acme"
    for volatile in ("gen_ai.response.id", "gen_ai.response.time_to_first_chunk"):
        assert (volatile in owned) == (volatile in joined)
        owned.pop(volatile, None)
        joined.pop(volatile, None)
    if "gen_ai.response.finish_reasons" in joined:
        joined["gen_ai.response.finish_reasons"] = list(joined["gen_ai.response.finish_reasons"])
    assert owned == joined
    if mode == "error":
        assert owned["error.type"] == "openai.InternalServerError"
    else:
        assert owned["gen_ai.usage.input_tokens"] == 7
    assert "jane.doe@example.com" not in owned["gen_ai.input.messages"]
    assert result["resource"]["service.name"] == "svc"
    assert result["resource"]["verdict.tenant_id"] == "acme"
