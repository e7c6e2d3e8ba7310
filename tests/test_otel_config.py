"""otel-config.yaml (the upstream OpenTelemetry Collector in front of verdict-collector) matches
what verdict-collector accepts.

The static checks read the collector's own definitions (its option defaults, its HTTP routes, its
token parsing) rather than re-typing them. The end-to-end check starts the real verdict-collector
with a token file and sends a span through the real OpenTelemetry SDK OTLP/HTTP exporter using
exactly the headers (with `${env:VERDICT_TOKEN}` substituted), compression and path the config's
exporter declares; only host and port are replaced by the test collector's loopback address (the
config names a deployment host, `verdict-collector`). The upstream collector binary itself is not
run here (no network to fetch it); its component names and keys are checked structurally.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from collector.auth import TokenStore, bearer_token
from collector.config import build_parser

CONFIG_PATH = Path(__file__).resolve().parents[1] / "otel-config.yaml"
CONFIG = yaml.safe_load(CONFIG_PATH.read_text())
PIPELINES = CONFIG["service"]["pipelines"]
VERDICT_EXPORTER = "otlphttp/verdict"
ENV_REF = re.compile(r"\$\{env:([A-Z_][A-Z0-9_]*)\}")
TOKEN = "readme-token-for-acme-0123456789"


def collector_defaults():
    return build_parser({}).parse_args([])


def collector_routes() -> dict[str, set[str]]:
    """The collector's own HTTP routes: path -> methods."""
    from starlette.routing import Route

    from collector.http_server import BodyLimits, create_app

    app = create_app(None, body_limits=BodyLimits(1, 1.0, 1.0), threads=1, health=dict, stats=dict)  # type: ignore[arg-type]  # routes only: no ingest service
    assert all(isinstance(route, Route) for route in app.routes)
    return {route.path: set(route.methods or ()) for route in app.routes if isinstance(route, Route)}


def substitute_env(value: str, environ: dict[str, str]) -> str:
    """The collector's `${env:NAME}` expansion (no defaults are used in the file)."""
    return ENV_REF.sub(lambda m: environ[m.group(1)], value)


def exporter_traces_url() -> str:
    """What the otlphttp exporter posts to: `traces_endpoint`, else `endpoint` + /v1/traces."""
    exporter = CONFIG["exporters"][VERDICT_EXPORTER]
    return exporter.get("traces_endpoint") or exporter["endpoint"].rstrip("/") + "/v1/traces"


def test_every_pipeline_references_defined_components():
    kinds = {"receivers": "receivers", "processors": "processors", "exporters": "exporters"}
    used: dict[str, set[str]] = {kind: set() for kind in kinds}
    for name, pipeline in PIPELINES.items():
        assert name.split("/")[0] == "traces", f"{name}: verdict-collector takes traces only"
        assert pipeline["receivers"] and pipeline["exporters"], name
        for kind in kinds:
            for component in pipeline.get(kind, []):
                assert component in CONFIG[kind], f"pipeline {name} uses undefined {kind[:-1]} {component}"
                used[kind].add(component)
    for kind in kinds:
        assert set(CONFIG[kind]) == used[kind], f"defined but unused {kind}: {set(CONFIG[kind]) - used[kind]}"


def test_memory_limiter_first_and_batch_last_in_every_pipeline():
    for name, pipeline in PIPELINES.items():
        processors = pipeline["processors"]
        assert processors[0] == "memory_limiter", name
        assert processors[-1] == "batch", name


def test_receivers_take_otlp_over_grpc_and_http():
    assert set(CONFIG["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}


def test_one_pipeline_sends_everything_to_verdict_and_another_fans_out():
    to_verdict = [n for n, p in PIPELINES.items() if VERDICT_EXPORTER in p["exporters"]]
    assert len(to_verdict) == 1
    assert "tail_sampling" not in PIPELINES[to_verdict[0]]["processors"], "Verdict gets the full record"
    fan_out = [n for n, p in PIPELINES.items() if VERDICT_EXPORTER not in p["exporters"]]
    assert fan_out and all(PIPELINES[n]["receivers"] == PIPELINES[to_verdict[0]]["receivers"] for n in fan_out)


def test_tail_sampling_keeps_every_error_plus_a_probabilistic_share():
    policies = CONFIG["processors"]["tail_sampling"]["policies"]
    by_type = {p["type"]: p for p in policies}
    assert set(by_type) == {"status_code", "probabilistic"}
    assert by_type["status_code"]["status_code"]["status_codes"] == ["ERROR"]
    assert 0 < by_type["probabilistic"]["probabilistic"]["sampling_percentage"] < 100


def test_verdict_exporter_matches_the_collector():
    defaults = collector_defaults()
    url = urlsplit(exporter_traces_url())
    assert url.scheme == "http" and url.port == defaults.http_port
    assert "POST" in collector_routes()[url.path]
    exporter = CONFIG["exporters"][VERDICT_EXPORTER]
    assert exporter["compression"] == "gzip"  # verdict-collector decodes Content-Encoding: gzip
    assert CONFIG["processors"]["batch"]["send_batch_max_size"] * 4096 < defaults.max_body_bytes


def test_token_header_comes_from_the_environment_and_maps_to_the_tenant(tmp_path):
    headers = CONFIG["exporters"][VERDICT_EXPORTER]["headers"]
    assert [k.lower() for k in headers] == ["authorization"]
    (value,) = headers.values()
    assert ENV_REF.findall(value) == ["VERDICT_TOKEN"], "the token must come from the environment"
    token = bearer_token(substitute_env(value, {"VERDICT_TOKEN": TOKEN}))
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(yaml.safe_dump({TOKEN: "acme"}))
    assert TokenStore.load(tokens).tenant_for(token) == "acme"


@pytest.mark.parametrize("missing", ["", "Basic " + TOKEN])
def test_a_header_without_a_bearer_token_is_no_token(missing):
    assert bearer_token(missing) is None


def test_the_exporter_settings_are_accepted_by_the_real_collector(tmp_path):
    """Real verdict-collector + real OpenTelemetry SDK exporter with the config's exporter settings."""
    import duckdb
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.collector.conftest import Collector

    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(yaml.safe_dump({TOKEN: "acme"}))
    collector = Collector(tmp_path / "data", ("--tokens", str(tokens))).start()
    try:
        exporter_cfg = CONFIG["exporters"][VERDICT_EXPORTER]
        declared = urlsplit(exporter_traces_url())
        endpoint = declared._replace(netloc=f"127.0.0.1:{collector.http_port}").geturl()
        headers = {k: substitute_env(v, {"VERDICT_TOKEN": TOKEN}) for k, v in exporter_cfg["headers"].items()}
        spans = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "fleet-app"}))
        otlp = OTLPSpanExporter(endpoint=endpoint, headers=headers, compression=Compression(exporter_cfg["compression"]))
        provider.add_span_processor(SimpleSpanProcessor(spans))
        provider.add_span_processor(SimpleSpanProcessor(otlp))
        with provider.get_tracer("otel-config-test").start_as_current_span("chat gpt-4o-mini") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("verdict.intent_key", "billing.v1")
        provider.shutdown()
        (sent,) = spans.get_finished_spans()
        assert collector.stats()["requests_acked"] == 1

        # Without the header the same request is refused: the header is what authenticates.
        unauthenticated = OTLPSpanExporter(endpoint=endpoint)
        assert unauthenticated.export([sent]) == SpanExportResult.FAILURE
        assert collector.stats()["requests_unauthenticated"] == 1
    finally:
        assert collector.stop() == 0
    with duckdb.connect() as con:  # its own connection: the module-level default one may be busy
        rows = con.sql(
            f"SELECT tenant, trace_id, service_name, intent_key FROM read_parquet("
            f"'{tmp_path}/data/spans/*/*/*.parquet', hive_partitioning = true)").fetchall()
    assert rows == [("acme", f"{sent.context.trace_id:032x}", "fleet-app", "billing.v1")]
