"""Sampling from the span lake: stratified, deterministic, exclusions, targets and the global budget."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import timedelta

import duckdb
import pyarrow as pa

from collector.lake import write_segment
from collector.schema import arrow_schema
from tests.daemon.conftest import INTENTS, NOW
from tests.daemon.lakes import answer_for, span_row, write_rows
from verdict.semconv import LOG_COLUMNS
from verdict.tenancy import TenantId
from verdict_daemon.clustering.assign_step import AssignReport, IntentKeyAssigner, assign
from verdict_daemon.config import Sampling
from verdict_daemon.service.material import graded_texts
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.state import StateStore


def _sampled(store: StateStore, tenant: str = "acme") -> list[tuple]:
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        return con.execute("SELECT trace_id, stratum, window_start FROM sampled_traces WHERE tenant_id = ? "
                           "ORDER BY trace_id", [tenant]).fetchall()
    finally:
        con.close()


def test_same_lake_same_seed_same_picks_and_per_stratum_target(lake, tmp_path):
    config = Sampling(per_cluster_per_window=10, seed=3)
    a, b = StateStore(tmp_path / "a"), StateStore(tmp_path / "b")
    report = sample(a, lake, TenantId("acme"), config, NOW)
    sample(b, lake, TenantId("acme"), config, NOW)
    picks = _sampled(a)
    assert picks == _sampled(b)
    assert report.sampled == len(picks) == 4 * 9 * 10  # 4 intents x 9 daily windows x target
    assert set(Counter((s, w) for _t, s, w in picks).values()) == {10}
    # independent reference: per (intent, UTC day), the 10 traces with the smallest md5("seed:trace_id")
    traces = duckdb.connect().execute(
        f"SELECT trace_id, intent_key, min(start_time)::DATE FROM read_parquet('{lake}/spans/tenant=acme/*/*.parquet') "
        "GROUP BY ALL").fetchall()
    cells: dict[tuple, list[str]] = {}
    for trace_id, intent, day in traces:
        cells.setdefault((intent, day), []).append(trace_id)
    expected = {t for ids in cells.values() for t in sorted(ids, key=lambda t: hashlib.md5(f"3:{t}".encode()).hexdigest())[:10]}
    assert {t for t, *_ in picks} == expected
    other_seed = StateStore(tmp_path / "c")
    sample(other_seed, lake, TenantId("acme"), Sampling(per_cluster_per_window=10, seed=4), NOW)
    assert {t for t, *_ in _sampled(other_seed)} != {t for t, *_ in picks}


def test_rerun_tops_up_but_never_resamples(lake, tmp_path):
    store = StateStore(tmp_path / "s")
    sample(store, lake, TenantId("acme"), Sampling(per_cluster_per_window=5), NOW)
    first = {t for t, *_ in _sampled(store)}
    again = sample(store, lake, TenantId("acme"), Sampling(per_cluster_per_window=5), NOW)
    assert again.sampled == 0
    sample(store, lake, TenantId("acme"), Sampling(per_cluster_per_window=8), NOW)
    topped = _sampled(store)
    assert first < {t for t, *_ in topped} and set(Counter((s, w) for _t, s, w in topped).values()) == {8}


def test_global_budget_is_shared_fairly_across_strata(lake, tmp_path):
    store = StateStore(tmp_path / "s")
    report = sample(store, lake, TenantId("acme"), Sampling(per_cluster_per_window=40, max_traces_per_run=72), NOW)
    assert report.sampled == 72 and report.budget_limited
    # 36 (stratum, window) cells: every one gets its first two picks before any gets a third
    assert set(Counter((s, w) for _t, s, w in _sampled(store)).values()) == {2}


def test_judge_workload_errors_and_other_tenants_are_excluded(tmp_path):
    data = tmp_path / "data"
    start = NOW - timedelta(hours=3)
    rows = [span_row(f"{i:032x}", start, intent="billing.v1", query="q", answer="a.") for i in range(5)]
    rows += [span_row(f"{100 + i:032x}", start, intent="billing.v1", query="q", answer="a.", workload="judge")
             for i in range(5)]
    rows += [span_row(f"{200 + i:032x}", start, intent="billing.v1", query="q", answer="a.", status="ERROR")
             for i in range(5)]
    rows += [span_row(f"{300 + i:032x}", start, intent=None, query="q", answer="a.") for i in range(3)]
    write_rows(data, "acme", rows)
    write_rows(data, "globex", [span_row(f"{400 + i:032x}", start, intent="billing.v1", query="q", answer="a.")
                                for i in range(7)])
    store = StateStore(data)
    sample(store, data, TenantId("acme"), Sampling(), NOW)
    picked = _sampled(store)
    assert {int(t, 16) for t, *_ in picked} == {0, 1, 2, 3, 4, 300, 301, 302}
    assert Counter(s for _t, s, _w in picked) == {"billing.v1": 5, "unassigned": 3}
    assert _sampled(store, "globex") == []
    # traces without an intent key are kept and reported, never dropped
    assert assign(store, TenantId("acme"), IntentKeyAssigner()) == AssignReport(assigned=8, missing_intent_key=3)
    con = duckdb.connect(str(store.path), read_only=True)
    assert con.execute("SELECT cluster, reason, count(*) FROM cluster_assignments GROUP BY ALL ORDER BY 1").fetchall() \
        == [("billing.v1", None, 5), ("unassigned", "missing_intent_key", 3)]
    con.close()


def test_graded_material_comes_from_the_last_call_of_the_trace(tmp_path):
    data = tmp_path / "data"
    start = NOW - timedelta(hours=2)
    first = span_row("a" * 32, start, intent="search.v1", query="draft question", answer="draft.", span_id="1" * 16)
    last = span_row("a" * 32, start + timedelta(seconds=5), intent="search.v1", query="final question",
                    answer=answer_for("final question"), span_id="2" * 16)
    write_rows(data, "acme", [first, last])
    store = StateStore(data)
    sample(store, data, TenantId("acme"), Sampling(), NOW)
    con = duckdb.connect(str(store.path), read_only=True)
    row = con.execute("SELECT span_id, query, response, started_at FROM sampled_traces").fetchone()
    assert row is not None
    con.close()
    assert row[:3] == ("2" * 16, "final question", answer_for("final question"))
    assert row[3] == start.replace(tzinfo=None)  # the trace starts at its first call


def test_graded_texts_reads_semconv_messages():
    inputs = ('[{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},'
              ' {"role": "user", "parts": [{"type": "text", "content": "first"}]},'
              ' {"role": "assistant", "parts": [{"type": "text", "content": "ok"}]},'
              ' {"role": "user", "parts": [{"type": "text", "content": "second"}]}]')
    outputs = '[{"role": "assistant", "parts": [{"type": "text", "content": "answer"}], "finish_reason": "stop"}]'
    system = '[{"type": "text", "content": "Policy: refunds within 30 days."}]'
    assert graded_texts(inputs, outputs, system) == ("second", "answer", "Be brief.\nPolicy: refunds within 30 days.")
    assert graded_texts(None, "not json", None) == ("", "", "")


def test_graded_texts_reads_a_final_answer_tool_call_as_the_answer():
    """smolagents' agents answer only through a `final_answer` tool call (arguments as an object or JSON text);
    any other tool call, or a final_answer without a string `answer`, is no answer text."""
    inputs = '[{"role": "user", "parts": [{"type": "text", "content": "Why?"}]}]'

    def output(name: str, arguments) -> str:
        return json.dumps([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "c1", "name": name, "arguments": arguments}]}])

    assert graded_texts(inputs, output("final_answer", {"answer": "Because."}), None)[1] == "Because."
    assert graded_texts(inputs, output("final_answer", '{"answer": "Because."}'), None)[1] == "Because."
    assert graded_texts(inputs, output("lookup_charge", {"answer": "no"}), None)[1] == ""
    assert graded_texts(inputs, output("final_answer", "{not json"), None)[1] == ""
    assert graded_texts(inputs, output("final_answer", {"answer": 3}), None)[1] == ""


def test_graded_texts_question_is_not_a_tool_result_sent_as_user():
    """Anthropic, Bedrock and Strands Agents send tool results as `user` messages: the question is the last
    user message with text, and the tool result is context."""
    inputs = json.dumps([
        {"role": "user", "parts": [{"type": "text", "content": "Why two charges?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {}}]},
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", "response": "two charges"}]}])
    outputs = '[{"role": "assistant", "parts": [{"type": "text", "content": "One is pending."}]}]'
    assert graded_texts(inputs, outputs, None)[:2] == ("Why two charges?", "One is pending.")


def test_intents_listed_in_fixture_are_all_sampled(lake, tmp_path):
    store = StateStore(tmp_path / "s")
    sample(store, lake, TenantId("acme"), Sampling(per_cluster_per_window=1), NOW)
    assert {s for _t, s, _w in _sampled(store)} == set(INTENTS)


def test_messages_from_log_events_landed_in_the_next_date_partition_are_read(tmp_path):
    """The sampler reads messages one date partition at a time: a call starting just before midnight whose
    GenAI log events carry its messages and are dated just after it (the next `logs` partition) is still
    judged from them."""
    data = tmp_path / "data"
    start = NOW - timedelta(days=1, seconds=1)  # 23:59:59 the day before NOW's
    span = span_row("e" * 32, start, intent="billing.v1", query="", answer="")
    span.update(input_messages=None, output_messages=None)
    write_rows(data, "acme", [span])
    event_ns = int((start + timedelta(seconds=2)).timestamp() * 1e9)  # 00:00:01: the next day's partition
    record = dict.fromkeys(c.name for c in LOG_COLUMNS)
    record.update(record_id="1" * 32, trace_id="e" * 32, span_id="e" * 16, time=event_ns, sequence=0,
                  received_at=event_ns, event_name="gen_ai.client.inference.operation.details",
                  input_messages=json.dumps([{"role": "user", "parts": [{"type": "text", "content": "late question"}]}]),
                  output_messages=json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "late answer."}],
                                               "finish_reason": "stop"}]))
    write_segment(data, "acme", (NOW - timedelta(days=1) + timedelta(seconds=1)).date().isoformat(),
                       pa.Table.from_pylist([record], schema=arrow_schema("logs")), table_name="logs")
    store = StateStore(data)
    assert sample(store, data, TenantId("acme"), Sampling(), NOW + timedelta(hours=1)).sampled == 1
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        assert con.execute("SELECT query, response FROM sampled_traces").fetchall() == [("late question", "late answer.")]
    finally:
        con.close()
