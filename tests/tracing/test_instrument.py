"""instrument()/uninstrument(), suppression, import lightness, and never breaking the app."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import openai
import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind

import verdict.tracing as vt
from tests.tracing.conftest import start, stop

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

MSG: list[ChatCompletionMessageParam] = [{"role": "user", "content": "x"}]


def test_import_does_not_import_provider_sdks():
    from tests.imports import loaded_after

    code = "import verdict.tracing, verdict\nverdict.tracing.intent_context('a.b')"
    assert loaded_after(code, ("openai", "anthropic", "duckdb", "scipy", "numpy")) == []


LAZY_SCRIPT = r"""
import json, sys
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import verdict.tracing as vt
exporter = InMemorySpanExporter()
vt.init(service_name="svc", exporter=exporter)
vt.instrument()
vt.instrument()
if sys.argv[3] == "uninstrument":
    vt.uninstrument()
before = sorted(m for m in ("openai", "anthropic") if m in sys.modules)
import anthropic, openai
openai.OpenAI(api_key="sk-x", base_url=sys.argv[1], max_retries=0).chat.completions.create(
    model="gpt-x", messages=[{"role": "user", "content": "hi"}])
anthropic.Anthropic(api_key="sk-x", base_url=sys.argv[2], max_retries=0).messages.create(
    model="claude-x", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
vt.flush()
names = sorted(s.name for s in exporter.get_finished_spans()
               if s.attributes.get("gen_ai.operation.name") == "chat")
print(json.dumps({"imported_by_instrument": before, "spans": names,
                  "hook_left": any(type(f).__name__ == "_PatchOnImport" for f in sys.meta_path)}))
"""


@pytest.mark.parametrize("mode", ["instrument", "uninstrument"])
def test_instrument_patches_providers_when_the_app_imports_them(fake_openai, fake_anthropic, mode):
    """instrument() before the app imports openai/anthropic imports neither (an unused SDK costs
    nothing); each is patched when the app imports it, exactly once; uninstrument() drops the hook."""
    out = subprocess.run([sys.executable, "-c", LAZY_SCRIPT, fake_openai.base_url, fake_anthropic.base_url, mode],
                         capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["imported_by_instrument"] == []
    assert result["hook_left"] is False
    expected = ["chat claude-x", "chat gpt-x"] if mode == "instrument" else []
    assert result["spans"] == expected


def test_uninstrument_restores_the_class_attributes(traced):
    from openai.resources.chat.completions import Completions

    vt.uninstrument()
    original = vars(Completions)["create"]
    vt.instrument()
    assert vars(Completions)["create"] is not original
    vt.uninstrument()
    assert vars(Completions)["create"] is original


def test_double_instrument_never_double_wraps(fake_openai, traced):
    vt.instrument()
    vt.instrument()
    fake_openai.client().chat.completions.create(model="m", messages=MSG)
    assert len(traced.spans()) == 1


def test_cached_raw_response_wrapper_is_inert_after_uninstrument(fake_openai, traced):
    completions = fake_openai.client().chat.completions
    raw_api = completions.with_raw_response  # cached per resource, binds the wrapped method
    raw_api.create(model="before", messages=MSG)
    vt.uninstrument()
    raw = raw_api.create(model="after", messages=MSG)
    assert raw.parse().choices[0].message.content == "fake reply"
    assert [s.name for s in traced.spans()] == ["chat before"]


def test_uninstrumented_calls_make_no_spans(fake_openai, traced):
    vt.uninstrument()
    fake_openai.client().chat.completions.create(model="m", messages=MSG)
    assert traced.spans() == []


@pytest.mark.parametrize("key", ["otel", "legacy", "genai"])
def test_suppression_keys_are_honoured(fake_openai, traced, key):
    from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY

    name = {"otel": _SUPPRESS_INSTRUMENTATION_KEY, "legacy": "suppress_instrumentation",
            "genai": "suppress_language_model_instrumentation"}[key]
    token = otel_context.attach(otel_context.set_value(name, True))
    try:
        fake_openai.client().chat.completions.create(model="m", messages=MSG)
    finally:
        otel_context.detach(token)
    assert traced.spans() == []


def test_nested_inside_another_genai_inference_span_is_not_double_counted(fake_openai, traced):
    tracer = trace.get_tracer("other.genai.instrumentation")
    with tracer.start_as_current_span("chat m", kind=SpanKind.CLIENT, attributes={"gen_ai.operation.name": "chat"}):
        fake_openai.client().chat.completions.create(model="m", messages=MSG)
    assert traced.spans() == []
    # An ordinary app span as parent does not suppress.
    with tracer.start_as_current_span("handler"):
        fake_openai.client().chat.completions.create(model="m", messages=MSG)
    assert len(traced.spans()) == 1


class _BrokenRedactor:
    def text(self, s: str) -> str:
        raise RuntimeError("redactor bug")

    def value(self, obj):
        raise RuntimeError("redactor bug")


def test_redaction_bug_does_not_break_the_call_nor_leak_content(fake_openai):
    traced = start(redactor=_BrokenRedactor())
    try:
        result = fake_openai.client().chat.completions.create(model="m", messages=[{"role": "user", "content": "s3cret"}])
        assert result.choices[0].message.content == "fake reply"
        span = traced.one()
        assert span.attributes is not None
        assert "gen_ai.input.messages" not in span.attributes
        assert span.attributes["gen_ai.response.finish_reasons"] == ("stop",)
        assert vt.stats().errors["content_capture"] == 1
        assert vt.stats().content_omitted == {"content_error": 1}
        assert span.attributes["verdict.content_omitted"] == "content_error"
    finally:
        stop()


def test_recording_bug_is_swallowed_and_counted(fake_openai, traced, monkeypatch, caplog):
    from verdict.tracing import openai_patch

    def broken(attrs, usage, *names):
        raise KeyError("usage layout changed")

    monkeypatch.setattr(openai_patch, "_set_usage", broken)
    client = fake_openai.client()
    for _ in range(3):
        assert client.chat.completions.create(model="m", messages=MSG).choices[0].message.content == "fake reply"
    assert vt.stats().errors["openai.record"] == 3
    assert caplog.text.count("openai.record failed") == 1  # logged once per kind
    assert len(traced.spans()) == 3


def test_stats_balance(fake_openai, traced):
    client = fake_openai.client()
    for _ in range(5):
        client.chat.completions.create(model="m", messages=MSG)
    list(client.chat.completions.create(model="m", messages=MSG, stream=True))
    traced.spans()
    s = vt.stats()
    assert (s.spans_started, s.spans_ended, s.spans_exported, s.error_count) == (6, 6, 6, 0)


def test_instrument_without_init_uses_the_apps_provider(fake_openai):
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.tracing.conftest import _global_provider

    app_exporter = InMemorySpanExporter()
    _global_provider().add_span_processor(SimpleSpanProcessor(app_exporter))
    vt.instrument()
    try:
        fake_openai.client().chat.completions.create(model="solo", messages=[{"role": "user", "content": "hello"}])
        (span,) = [s for s in app_exporter.get_finished_spans() if s.name == "chat solo"]
        assert "hello" in str((span.attributes or {})["gen_ai.input.messages"])  # content built synchronously, redacted
    finally:
        app_exporter.shutdown()
        stop()


def test_openai_exception_type_is_unchanged_for_connection_errors(traced):
    client = openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=MSG)
    assert traced.attrs()["error.type"] == "openai.APIConnectionError"


def test_stream_observer_bug_keeps_chunks_identical(fake_openai, traced, monkeypatch):
    from verdict.tracing import openai_patch

    def broken(self, chunk):
        raise AttributeError("chunk layout changed")

    monkeypatch.setattr(openai_patch.ChatStream, "__call__", broken)
    client = fake_openai.client()
    stream = client.chat.completions.create(model="m", messages=MSG, stream=True)
    texts = [c.choices[0].delta.content for c in stream if c.choices]
    assert "".join(t or "" for t in texts) == "fake reply"
    assert vt.stats().errors["openai.stream_item"] == len(texts)
    assert traced.one().attributes["gen_ai.response.finish_reasons"] == ("error",)  # nothing recorded


class _UpperRedactor:
    """A custom redactor with only the two documented methods (no `has_hook`)."""

    def text(self, s: str) -> str:
        return s.replace("s3cret", "<MINE>")

    def value(self, obj):
        return obj


def test_custom_redactor_with_only_text_and_value(fake_openai):
    traced = start(redactor=_UpperRedactor())
    try:
        fake_openai.client().chat.completions.create(model="m", messages=[{"role": "user", "content": "a s3cret"}])
        assert "a <MINE>" in str((traced.one().attributes or {})["gen_ai.input.messages"])
        assert vt.stats().errors == {}
    finally:
        stop()
