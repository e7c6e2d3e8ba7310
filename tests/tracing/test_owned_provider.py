"""When Verdict creates the TracerProvider itself, response attributes are recorded on the export
thread. That needs a fresh process (the global provider can be set once), so it runs in one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fakes import Reply

SCRIPT = r"""
import json, sys, openai
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import verdict.tracing as vt
from verdict.tracing.runtime import STATE
exporter = InMemorySpanExporter()
vt.init(service_name="svc", tenant_id="acme", exporter=exporter)
vt.instrument()
client = openai.OpenAI(api_key="sk-x", base_url=sys.argv[1], max_retries=0)
client.chat.completions.create(model="m", messages=[{"role": "user", "content": "mail jane.doe@example.com"}])
vt.flush()
(span,) = exporter.get_finished_spans()
print(json.dumps({"deferred": STATE.current.deferred_response, "attrs": dict(span.attributes),
                  "resource": dict(span.resource.attributes)}))
"""


def _attrs_in_process(fake_openai, traced) -> dict:
    fake_openai.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "mail jane.doe@example.com"}]
    )
    return traced.attrs()


def test_deferred_recording_gives_the_same_span(fake_openai, traced):
    fake_openai.default = Reply("sure", usage=(7, 1))
    joined = _attrs_in_process(fake_openai, traced)  # the app's provider: recorded synchronously
    out = subprocess.run([sys.executable, "-c", SCRIPT, fake_openai.base_url], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["deferred"] is True
    owned = result["attrs"]
    assert owned.pop("verdict.tenant_id") == "acme"
    for volatile in ("gen_ai.response.id",):
        assert owned.pop(volatile) and joined.pop(volatile)
    joined["gen_ai.response.finish_reasons"] = list(joined["gen_ai.response.finish_reasons"])
    assert owned == joined
    assert owned["gen_ai.usage.input_tokens"] == 7
    assert "jane.doe@example.com" not in owned["gen_ai.input.messages"]
    assert result["resource"]["service.name"] == "svc"
    assert result["resource"]["verdict.tenant_id"] == "acme"
