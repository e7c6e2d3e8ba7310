"""Traces from other instrumentations (issue 14, item 5): calls without content are `no_content`
(never sent to the judge, never paid, counted), a lake of unrecognised spans warns by scope, and
an LLM call inherits the intent key of its nearest ancestor span."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import duckdb

from tests.daemon.cli import env, pipeline, write_config
from tests.daemon.conftest import NOW
from tests.daemon.lakes import answer_for, grade, plain_span, span_row, write_rows
from verdict.judges.judge import Judge
from verdict.models.scripted import ScriptedModel
from verdict.tenancy import TenantId
from verdict_daemon.config import Judging, Sampling
from verdict_daemon.service.judge_evaluators import JudgeEvaluator
from verdict_daemon.service.judging import coverage, judge
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.state import StateStore

START = NOW - timedelta(hours=3)


def _no_content_row(trace_id: str) -> dict:
    """An openai-v2 default-mode call as the lake held it before its log events were mapped: model and
    tokens, no messages."""
    row = span_row(trace_id, START, intent="billing.v1", query="", answer="")
    row.update(input_messages=None, output_messages=None, input_tokens=41, output_tokens=17)
    return row


def _lake(tmp_path, rows: list[dict]):
    data = tmp_path / "data"
    write_rows(data, "acme", rows)
    return data


def _plain(trace_id: str, span_id: str, parent: str | None, *, name: str, intent: str | None, scope: str) -> dict:
    return plain_span(trace_id, span_id, parent, START, name=name, intent=intent, scope=scope)


def test_calls_without_content_are_no_content_not_judged_not_paid_and_counted(tmp_path):
    rows = [span_row(f"{i:032x}", START, intent="billing.v1", query=f"q{i}?", answer=answer_for(f"q{i}?"))
            for i in range(4)]
    rows += [_no_content_row(f"{100 + i:032x}") for i in range(3)]
    # an answer without any question or context is not gradable either
    rows.append(span_row(f"{200:032x}", START, intent="billing.v1", query="", answer="An answer to nothing."))
    data = _lake(tmp_path, rows)
    store = StateStore(data)
    assert sample(store, data, TenantId("acme"), Sampling(per_cluster_per_window=40), NOW).sampled == 8
    seen: list[str] = []

    def reply(request):
        seen.append(request.messages[-1].content)
        return grade(request)

    evaluator = JudgeEvaluator("quality", Judge(ScriptedModel(reply, name="scripted/peer"), retries=0), {"kind": "rubric"})
    report = judge(store, TenantId("acme"), evaluator, Judging(), "run-1")
    assert (report.judged, report.errors, report.no_content) == (4, 0, 4)
    assert len(seen) == 4  # the judge model saw only the traces with content
    cov = coverage(store, TenantId("acme"), evaluator.fingerprint)
    assert cov == {"sampled_traces": 8, "usable": 4, "error": 0, "no_content": 4, "rate": 0.5}
    con = duckdb.connect(str(store.path), read_only=True)
    rows_ = con.execute("SELECT status, error_code, coalesce(input_tokens, 0) + coalesce(output_tokens, 0), "
                        "coalesce(cost_usd, 0) FROM judgment_attempts WHERE trace_id >= ? ORDER BY trace_id",
                        [f"{100:032x}"]).fetchall()
    con.close()
    assert rows_ == [("NO_CONTENT", "no_content", 0, 0.0)] * 4
    again = judge(store, TenantId("acme"), evaluator, Judging(), "run-2")  # never retried, never paid again
    assert (again.pending, again.judged, again.no_content) == (0, 0, 0) and len(seen) == 4


def test_pipeline_summary_counts_no_content(tmp_path):
    rows = [span_row(f"{i:032x}", START, intent="billing.v1", query=f"q{i}?", answer=answer_for(f"q{i}?"))
            for i in range(3)]
    rows += [_no_content_row(f"{100 + i:032x}") for i in range(2)]
    data = _lake(tmp_path, rows)
    code, summary, stderr = pipeline("--config", str(write_config(tmp_path / "v.toml", data)),
                                     "--tenant", "acme", "--as-of", NOW.isoformat())
    assert code == 0, stderr
    assert (summary["sampled"], summary["judged"], summary["no_content"]) == (5, 3, 2)
    assert summary["evaluators"][0]["coverage"]["no_content"] == 2
    assert summary["warnings"] == []


def test_spans_without_a_recognised_llm_call_warn_naming_scopes(tmp_path):
    rows = [_plain(f"{i:032x}", f"{i:016x}", None, name="ChatCompletion", intent=None,
                   scope="openinference.instrumentation.openai") for i in range(5)]
    rows += [_plain(f"{50 + i:032x}", f"{50 + i:016x}", None, name="ai.generateText", intent=None, scope="ai")
             for i in range(2)]
    data = _lake(tmp_path, rows)
    config = write_config(tmp_path / "v.toml", data)
    code, summary, stderr = pipeline("--config", str(config), "--tenant", "acme", "--as-of", NOW.isoformat())
    assert code == 0 and summary["sampled"] == 0
    [warning] = summary["warnings"]
    assert "no recognised LLM call" in warning
    assert "openinference.instrumentation.openai (5 spans)" in warning and "ai (2 spans)" in warning
    assert "openinference.instrumentation.openai (5 spans)" in stderr  # logged as a warning too
    # the text summary says it as well
    text = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.pipeline", "--config", str(config),
                           "--tenant", "acme", "--as-of", NOW.isoformat()],
                          capture_output=True, text=True, env=env(), timeout=120)
    assert text.returncode == 0 and "warning: spans but no recognised LLM call" in text.stdout


def test_a_lake_with_llm_calls_does_not_warn_even_when_all_are_sampled(tmp_path):
    data = _lake(tmp_path, [span_row(f"{1:032x}", START, intent="billing.v1", query="q?", answer="a.")])
    store = StateStore(data)
    assert sample(store, data, TenantId("acme"), Sampling(), NOW).warnings() == []
    again = sample(store, data, TenantId("acme"), Sampling(), NOW)
    assert again.sampled == 0 and again.warnings() == []


def test_a_call_inherits_the_intent_key_of_its_nearest_ancestor(tmp_path):
    trace, other = f"{7:032x}", f"{8:032x}"
    rows = [
        # app span (stamped by intent_context) > framework span (its own key) > peer LLM call (no key)
        _plain(trace, "a" * 16, None, name="handle", intent="billing.v1", scope="app"),
        _plain(trace, "b" * 16, "a" * 16, name="agent run", intent="refunds.v1", scope="pydantic-ai"),
        _plain(trace, "c" * 16, "b" * 16, name="step", intent=None, scope="pydantic-ai"),
        {**span_row(trace, START, intent=None, query="q?", answer="a.", span_id="d" * 16),
         "parent_span_id": "c" * 16},
        # a root call without a key stays unassigned; a call with its own key keeps it
        span_row(other, START, intent=None, query="q?", answer="a."),
        {**span_row(f"{9:032x}", START, intent="search.v1", query="q?", answer="a.", span_id="e" * 16),
         "parent_span_id": "f" * 16},
        _plain(f"{9:032x}", "f" * 16, None, name="handle", intent="billing.v1", scope="app"),
    ]
    data = _lake(tmp_path, rows)
    store = StateStore(data)
    sample(store, data, TenantId("acme"), Sampling(per_cluster_per_window=40), NOW)
    con = duckdb.connect(str(store.path), read_only=True)
    got = dict(con.execute("SELECT trace_id, stratum FROM sampled_traces").fetchall())
    keys = dict(con.execute("SELECT trace_id, intent_key FROM sampled_traces").fetchall())
    con.close()
    assert got == {trace: "refunds.v1", other: "unassigned", f"{9:032x}": "search.v1"}
    assert keys[trace] == "refunds.v1" and keys[other] is None
