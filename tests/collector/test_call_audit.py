"""Why spans are not `llm_calls` rows, counted (issue 25, item 5): `llm_call_duplicates` lists the rows the
identity rule merged with the rule and the row kept; `llm_calls_audit` counts them per rule and the spans the
inference allow-list left out per operation. Spans decoded and written as the collector does, read through the
real views (the /stats side runs the real collector: test_call_audit_stats.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from collector.call_audit import CallAudit, read_call_audit
from collector.views import materialize_duplicates, open_scoped
from tests.collector import dialect_payloads as payloads
from tests.collector.test_call_identity import (
    SECOND,
    T0,
    Call,
    land,
    openinference_span,
    openllmetry_span,
    v2_span,
)
from verdict.tenancy import validate_tenant_id

TENANT = validate_tenant_id("audit")
DAY = datetime.fromtimestamp(T0 / 1e9, UTC).date()


def _step(operation: str | None, span: int, **attrs) -> payloads.SpanSpec:
    attrs = {**attrs, "gen_ai.operation.name": operation} if operation else attrs
    return payloads.SpanSpec("opentelemetry.instrumentation.langchain", f"step {span}", {
        "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini", **attrs},
        trace=50, span=span, start=T0 + 20 * SECOND, end=T0 + 21 * SECOND)


def _lake(tmp_path):
    by_id = Call(1, T0, T0 + SECOND, "chatcmpl-a")  # openai-v2 and OpenLLMetry share the response id
    by_input = Call(2, T0 + 10 * SECOND, T0 + 11 * SECOND, "chatcmpl-b")  # OpenInference names no id
    alone = Call(3, T0 + 30 * SECOND, T0 + 31 * SECOND, "chatcmpl-c")
    land(tmp_path, "audit", [
        v2_span(by_id, 1, 1), openllmetry_span(by_id, 2, 2),
        openinference_span(by_input, 3, 3), v2_span(by_input, 4, 4),
        v2_span(alone, 5, 5),
        *(_step("execute_task", 10 + i) for i in range(3)), _step("invoke_agent", 20), _step("embeddings", 21),
        payloads.SpanSpec("opentelemetry.instrumentation.requests", "GET /orders", {"http.request.method": "GET"},
                          trace=60, span=30),  # no dialect, no operation: not a model call, not counted
    ])


def test_duplicates_are_listed_with_their_rule_and_the_row_kept(tmp_path):
    _lake(tmp_path)
    con = open_scoped(tmp_path, TENANT)
    try:
        kept = {row[0] for row in con.execute("SELECT span_id FROM llm_calls").fetchall()}
        dropped = con.execute("SELECT span_id, rule, kept_span_id, date FROM llm_call_duplicates "
                              "ORDER BY span_id").fetchall()
        audit = con.execute("SELECT outcome, reason, spans FROM llm_calls_audit WHERE date = ? "
                            "ORDER BY outcome, reason", [DAY]).fetchall()
    finally:
        con.close()
    assert len(kept) == 3 and f"{5:016x}" in kept
    (id_twin,) = {f"{1:016x}", f"{2:016x}"} - kept
    (input_twin,) = {f"{3:016x}", f"{4:016x}"} - kept
    assert dropped == sorted([(id_twin, "response_id", ({f"{1:016x}", f"{2:016x}"} - {id_twin}).pop(), DAY),
                              (input_twin, "input", ({f"{3:016x}", f"{4:016x}"} - {input_twin}).pop(), DAY)])
    assert audit == [("duplicate", "input", 1), ("duplicate", "response_id", 1),
                     ("not_inference", "embeddings", 1), ("not_inference", "execute_task", 3),
                     ("not_inference", "invoke_agent", 1)]


def test_the_rule_evaluated_once_gives_the_same_calls_and_audit(tmp_path):
    """materialize_duplicates (the daemon's sampler) changes what is computed, not the answer."""
    _lake(tmp_path)
    con = open_scoped(tmp_path, TENANT)
    try:
        before = con.execute("SELECT * FROM llm_calls ORDER BY span_id").fetchall()
        audit = read_call_audit(con, DAY, DAY)
        materialize_duplicates(con)
        assert con.execute("SELECT * FROM llm_calls ORDER BY span_id").fetchall() == before
        assert read_call_audit(con, DAY, DAY) == audit
    finally:
        con.close()
    assert audit == CallAudit((("input", 1), ("response_id", 1)),
                              (("execute_task", 3), ("embeddings", 1), ("invoke_agent", 1)))
    assert audit.as_json() == {"duplicates": {"input": 1, "response_id": 1},
                               "not_inference": {"execute_task": 3, "embeddings": 1, "invoke_agent": 1}}


def test_one_instrumentation_merges_nothing_and_still_counts_what_is_left_out(tmp_path):
    land(tmp_path, "audit", [v2_span(Call(1, T0, T0 + SECOND, "same"), 1, 1),
                             v2_span(Call(2, T0, T0 + SECOND, "same"), 2, 2),
                             payloads.SpanSpec("opentelemetry.instrumentation.openai_v2", "embeddings",
                                               {"gen_ai.operation.name": "embeddings", "gen_ai.system": "openai"},
                                               trace=3, span=3)])
    con = open_scoped(tmp_path, TENANT)
    try:
        assert read_call_audit(con, DAY, DAY) == CallAudit((), (("embeddings", 1),))
        assert con.execute("SELECT count(*) FROM llm_calls").fetchone()[0] == 2
    finally:
        con.close()
