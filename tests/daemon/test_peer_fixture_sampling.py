"""Sampling reads `llm_calls` (issue 14): the recorded openai-v2 default-mode traces, whose conversation
is in OTLP log records, are judged from those messages whichever signal arrives first; the recorded
OpenLLMetry + anthropic-native traces (two instrumentations, two root traces per call) give one
sampled trace per call; the summary's `llm_calls_audit` says why spans are not calls (rows merged as duplicates
per rule, non-inference spans per operation). Real collector process, real `verdict-pipeline` process, scripted
judge."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from collector.views import open_scoped
from tests.daemon.cli import pipeline, write_config
from verdict.redact import redact_text
from verdict.tenancy import validate_tenant_id
from verdict_daemon.store.state import StateStore

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dialects"
V2 = FIXTURES / "openai-v2-default"
NATIVE = FIXTURES / "openllmetry-anthropic-native"
PYDANTIC_AI = FIXTURES / "pydantic-ai"
# tenant -> (fixture directory, files in arrival order)
REPLAYS = {
    "v2-spans-first": (V2, ("traces-1.pb", "logs-1.pb")),
    "v2-logs-first": (V2, ("logs-1.pb", "traces-1.pb")),
    "anthropic-twice": (NATIVE, ("traces-1.pb",)),
    "agent-and-twice": (PYDANTIC_AI, ("traces-1.pb",)),
}
EXTRA = {"agent-and-twice": (NATIVE, ("traces-1.pb",))}  # a second sender into the same tenant


@pytest.fixture(scope="module")
def lake(tmp_path_factory, request) -> Path:
    from tests.collector.conftest import Collector, post_recording

    tmp = tmp_path_factory.mktemp("peer-sampling")
    tokens = tmp / "tokens.yaml"
    tokens.write_text("".join(f'"token-{t}-0123456789": {t}\n' for t in REPLAYS))
    collector = Collector(tmp / "data", ("--tokens", str(tokens)))
    collector.start()
    request.addfinalizer(collector.process.kill)  # a no-op once it exited
    for tenant, (directory, files) in [*REPLAYS.items(), *EXTRA.items()]:
        for name in files:
            post_recording(collector.http_port, directory / name, f"token-{tenant}-0123456789")
    assert collector.stop() == 0
    return collector.data_dir


def _run(tmp_path: Path, data: Path, tenant: str) -> tuple[dict, list[tuple]]:
    """`verdict-pipeline` one hour after the tenant's last span; its summary and sampled_traces rows."""
    con = open_scoped(data, validate_tenant_id(tenant))
    last = con.execute("SELECT max(end_time) FROM spans").fetchone()[0]
    con.close()
    as_of = (last + timedelta(hours=1)).isoformat()
    code, summary, stderr = pipeline("--config", str(write_config(tmp_path / "v.toml", data, tenant=tenant)),
                                     "--tenant", tenant, "--as-of", as_of)
    assert code == 0, stderr
    con = duckdb.connect(str(StateStore(data).path), read_only=True)
    sampled = con.execute("SELECT trace_id, query, response FROM sampled_traces WHERE tenant_id = ? "
                          "ORDER BY query", [tenant]).fetchall()
    con.close()
    return summary, sampled


@pytest.mark.parametrize("tenant", ["v2-spans-first", "v2-logs-first"])
def test_openai_v2_default_mode_is_judged_from_its_log_events(lake, tmp_path, tenant):
    manifest = json.loads((V2 / "manifest.json").read_text())
    calls = manifest["expected_llm_calls"]
    summary, sampled = _run(tmp_path, lake, tenant)
    assert (summary["sampled"], summary["judged"], summary["no_content"]) == (len(calls), len(calls), 0), summary
    assert summary["llm_calls_audit"] == {"duplicates": {}, "not_inference": {}}
    questions = sorted(redact_text(c["question"]) for c in calls)
    answers = sorted(redact_text(c["answer"]) for c in calls)
    assert all(q in query for q, (_, query, _) in zip(questions, sampled, strict=True)), sampled
    assert sorted(response for *_, response in sampled) == answers
    assert not any(secret in str(sampled) for secret in manifest["planted_secrets"])


def test_a_call_described_by_two_instrumentations_is_sampled_once(lake, tmp_path):
    manifest = json.loads((NATIVE / "manifest.json").read_text())
    con = open_scoped(lake, validate_tenant_id("anthropic-twice"))
    traces = con.execute("SELECT count(DISTINCT trace_id) FROM spans WHERE operation = 'chat'").fetchone()[0]
    con.close()
    assert traces == 2 * len(manifest["expected_llm_calls"])  # each call is its own root trace twice
    summary, sampled = _run(tmp_path, lake, "anthropic-twice")
    assert (summary["sampled"], summary["judged"]) == (len(manifest["expected_llm_calls"]),) * 2, summary
    # The anthropic SDK's span and OpenLLMetry's share each call's response id: one row of each call merged.
    assert summary["llm_calls_audit"] == {"duplicates": {"response_id": 2}, "not_inference": {}}
    questions = sorted(redact_text(c["question"]) for c in manifest["expected_llm_calls"])
    assert all(q in query for q, (_, query, _) in zip(questions, sampled, strict=True)), sampled


def test_the_summary_says_why_spans_are_not_calls(lake, tmp_path):
    """Pydantic AI's agent spans (`invoke_agent`, no call) and the two-instrumentation anthropic calls in one
    tenant: four calls sampled, and the summary counts the agent spans and the merged rows."""
    summary, sampled = _run(tmp_path, lake, "agent-and-twice")
    assert summary["sampled"] == len(sampled) == 4, summary
    assert summary["llm_calls_audit"] == {"duplicates": {"response_id": 2}, "not_inference": {"invoke_agent": 2}}
