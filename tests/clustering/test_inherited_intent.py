"""Both registry modes give a trace the same intent key: a model call's own `verdict.intent_key`, else that of its
nearest ancestor span carrying one (`intent_context` around an agent or a foreign instrumentation's call); the
nearest span carrying the attribute decides, a refused key included (docs/daemon.md, "The intent rule").

The lake: three days of keyed traffic plus, each day, one trace of every shape below; an explicit registry version is
fitted on them and activated (so `normalize` reads the shapes too), then the day after the cutoff holds the shapes
again (indexed by the cycle's own assign step) and a two-turn conversation whose first turn has its key on a parent
span. The real cycle runs in `--registry-mode active`, then `off`, on real Parquet segments and DuckDB files; every
sampled trace and unit gets the same cluster in both, and the shapes the one the rule says. A team's imported
evaluation records of those traces (`[[imported_evaluations]]`) land in the same cells as their judgments, in both
modes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from collector.lake import write_segment
from collector.schema import arrow_schema
from tests.clustering.cli import lifecycle
from tests.clustering.lakes import INVALID_REASON
from tests.clustering.test_conversation_clusters import conversation_judge  # noqa: F401 (the evaluators' model)
from tests.clustering.test_pipeline_active import _rows
from tests.daemon.lakes import plain_span, span_row, synthetic_days, write_rows
from verdict import semconv as sc
from verdict.tenancy import TenantId
from verdict_daemon.config import Clustering, parse_config
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.service.daemon import Daemon

ACME = TenantId("acme")
NOW = datetime(2026, 11, 20, tzinfo=UTC)
CUTOFF = "2026-11-18T00:00:00+00:00"
TRAINING_DAY = datetime(2026, 11, 17, 2, 0, tzinfo=UTC)
DAY = datetime(2026, 11, 19, 1, 0, tzinfo=UTC)  # after the cutoff: indexed by the cycle's assign step
MIDNIGHT = datetime(2026, 11, 19, tzinfo=UTC)
UNASSIGNED = "unassigned"


def _id(tag: str, shape: int, length: int = 32) -> str:
    return f"{tag}{shape:02d}".ljust(length, "0")


def _call(trace: str, span: str, parent: str | None, start: datetime, intent: str | None, **extra) -> dict:
    row = span_row(trace, start, intent=intent, query=f"question of {span}", answer="Done, as asked.", span_id=span)
    row.update(parent_span_id=parent, **extra)
    return row


def _span(trace: str, span: str, parent: str | None, start: datetime, intent: str | None, **extra) -> dict:
    """An app, agent or framework span around calls, started a second before `start`."""
    return plain_span(trace, span, parent, start - timedelta(seconds=1), name=f"step {span[:4]}", intent=intent,
                      scope="app", **extra)


REFUSED = {"intent_key": None, "intent_key_error": INVALID_REASON, "attributes": '{"verdict.intent_key": "<EMAIL>"}'}


def shapes(tag: str, start: datetime) -> tuple[list[dict], dict[str, tuple[str, str, str | None]]]:
    """The trace shapes and, per trace, (graded span, key status, intent key) the rule gives it."""
    rows: list[dict] = []
    expected: dict[str, tuple[str, str, str | None]] = {}

    def trace(shape: int, graded: str, status: str, key: str | None, *spans: dict) -> None:
        rows.extend(spans)
        expected[_id(tag, shape)] = (graded, status, key)

    def sid(shape: int, n: int) -> str:
        return _id(tag, shape * 10 + n, 16)

    t = [_id(tag, n) for n in range(10)]
    at = [start + timedelta(minutes=7 * n) for n in range(10)]
    # 1: the key on the call itself
    trace(1, sid(1, 1), "valid", "billing.v1", _call(t[1], sid(1, 1), None, at[1], "billing.v1"))
    # 2: the key only on the app span, two levels up (a framework span without one between)
    trace(2, sid(2, 3), "valid", "refunds.v1", _span(t[2], sid(2, 1), None, at[2], "refunds.v1"),
          _span(t[2], sid(2, 2), sid(2, 1), at[2], None), _call(t[2], sid(2, 3), sid(2, 2), at[2], None))
    # 3: a key on both: the call's own wins
    trace(3, sid(3, 2), "valid", "search.v1", _span(t[3], sid(3, 1), None, at[3], "router.v1"),
          _call(t[3], sid(3, 2), sid(3, 1), at[3], "search.v1"))
    # 4: two calls under two agent spans with different keys: the graded (last) call's inherited key
    trace(4, sid(4, 4), "valid", "refunds.v1", _span(t[4], sid(4, 1), None, at[4], None),
          _span(t[4], sid(4, 2), sid(4, 1), at[4], "billing.v1"), _call(t[4], sid(4, 3), sid(4, 2), at[4], None),
          _span(t[4], sid(4, 5), sid(4, 1), at[4] + timedelta(seconds=10), "refunds.v1"),
          _call(t[4], sid(4, 4), sid(4, 5), at[4] + timedelta(seconds=10), None))
    # 5: no key anywhere
    trace(5, sid(5, 2), "missing", None, _span(t[5], sid(5, 1), None, at[5], None),
          _call(t[5], sid(5, 2), sid(5, 1), at[5], None))
    # 6: the call's own key was refused: it is not replaced by its parent's
    trace(6, sid(6, 2), "invalid", None, _span(t[6], sid(6, 1), None, at[6], "billing.v1"),
          _call(t[6], sid(6, 2), sid(6, 1), at[6], None, **REFUSED))
    # 7: the nearest span carrying a key carries a refused one: the walk stops there
    trace(7, sid(7, 3), "invalid", None, _span(t[7], sid(7, 1), None, at[7], "billing.v1"),
          _span(t[7], sid(7, 2), sid(7, 1), at[7], None, **REFUSED), _call(t[7], sid(7, 3), sid(7, 2), at[7], None))
    return rows, expected


def conversation(tag: str, start: datetime) -> tuple[list[dict], str, str]:
    """A closed two-turn conversation: its first turn's key is on the app span around the call, its second turn's
    on the call. Returns (rows, first turn's trace, second turn's trace)."""
    first, second = _id(tag, 8), _id(tag, 9)
    rows = [_span(first, _id(tag, 81, 16), None, start, "refunds.v1", conversation_id=f"conv-{tag}"),
            _call(first, _id(tag, 82, 16), _id(tag, 81, 16), start, None, conversation_id=f"conv-{tag}"),
            _call(second, _id(tag, 91, 16), None, start + timedelta(minutes=5), "billing.v1",
                  conversation_id=f"conv-{tag}")]
    return rows, first, second


def across_midnight(tag: str) -> tuple[list[dict], str]:
    """A call just after midnight whose keyed agent span started the day before (another date partition)."""
    trace = _id(tag, 10)
    return [_span(trace, _id(tag, 101, 16), None, MIDNIGHT - timedelta(seconds=29), "refunds.v1"),
            _call(trace, _id(tag, 102, 16), _id(tag, 101, 16), MIDNIGHT + timedelta(seconds=30), None)], trace


@pytest.fixture
def lake(tmp_path):
    data = tmp_path / "data"
    training, _ = shapes("a", TRAINING_DAY)
    write_rows(data, "acme", synthetic_days(NOW - timedelta(days=2), intents=("billing.v1", "search.v1"), per_day=6,
                                            days=3) + training)
    version = lifecycle(data, cutoff=CUTOFF, through=CUTOFF)  # fitted on the training days (normalize's index)
    rows, expected = shapes("b", DAY)
    turns, first, second = conversation("b", DAY + timedelta(hours=2))
    crossing, late = across_midnight("b")
    write_rows(data, "acme", rows + turns + crossing)
    expected |= {first: (_id("b", 82, 16), "valid", "refunds.v1"), second: (_id("b", 91, 16), "valid", "billing.v1"),
                 late: (_id("b", 102, 16), "valid", "refunds.v1")}
    return data, version, expected, first


REASONS = {"valid": None, "missing": "missing_intent_key", "invalid": "invalid_intent_key"}


def _clusters(data) -> dict[str, str]:
    return dict(_rows(data, "SELECT trace_id, cluster FROM cluster_assignments"))


def test_both_registry_modes_read_the_same_inherited_intent_key(lake):
    data, version, expected, first = lake
    config = parse_config({"data_dir": str(data), "tenants": [{"id": "acme"}],
                           "sampling": {"per_cluster_per_window": 50},
                           "evaluators": [
                               {"name": "quality", "kind": "rubric", "model": f"{__name__}:conversation_judge"},
                               {"name": "outcome", "kind": "rubric", "unit": "conversation",
                                "model": f"{__name__}:conversation_judge"}]})
    evaluators = build_evaluators(config)

    summary = run_cycle(config, ACME, NOW, evaluators, registry_mode="active")
    assert summary["registry_version"] == version and summary["sampled_conversations"] == 1
    # The index (normalize's rows for the training day, the assign step's for the day after) holds the rule's key.
    index = {t: (span, status, key) for t, span, status, key in _rows(
        data, "SELECT trace_id, span_id, key_status, intent_key FROM analysis_index")}
    trained = shapes("a", TRAINING_DAY)[1]
    assert {t: index.get(t) for t in expected | trained} == expected | trained
    active = _clusters(data)
    sampled = {t for (t,) in _rows(data, "SELECT trace_id FROM sampled_traces")}
    assert set(expected) | {f"conversation:{first}"} <= sampled and set(active) == sampled
    want = {t: key or UNASSIGNED for t, (_, _, key) in expected.items()} | {f"conversation:{first}": "refunds.v1"}
    assert {t: active[t] for t in want} == want
    reasons = dict(_rows(data, "SELECT trace_id, reason FROM cluster_assignments"))
    assert {t: reasons[t] for t in expected} == {t: REASONS[status] for t, (_, status, _) in expected.items()}

    summary = run_cycle(config, ACME, NOW, evaluators, registry_mode="off")
    assert summary["registry_version"] is None
    assert _clusters(data) == active  # every sampled trace and unit, not only the shapes
    keys = dict(_rows(data, "SELECT trace_id, intent_key FROM sampled_traces"))
    assert {t: keys[t] for t in expected} == {t: key for t, (_, _, key) in expected.items()}


def evaluation_records(data, traces: dict[str, str], at: datetime) -> None:
    """One `gen_ai.evaluation.result` log record per trace, named by `traces` (each its own evaluation name, so
    the drift cells show each trace's cluster), landed with the collector's writer as the log exporter's would."""
    records = []
    for n, (trace, name) in enumerate(sorted(traces.items())):
        ns = int((at + timedelta(seconds=n)).timestamp() * 1e9)
        record = dict.fromkeys(c.name for c in sc.LOG_COLUMNS)
        record.update(record_id=f"{n:032x}", trace_id=trace, time=ns, sequence=0, received_at=ns,
                      event_name=sc.EVENT_EVALUATION_RESULT, attributes=json.dumps({
                          sc.EVALUATION_NAME: name, sc.EVALUATION_SCORE_LABEL: "pass",
                          sc.EVALUATOR_NAME: "support-qa-suite"}))
        records.append(record)
    write_segment(data, "acme", at.date().isoformat(), pa.Table.from_pylist(records, schema=arrow_schema("logs")),
                  table_name="logs")


def _cells(data, series: str) -> dict[str, str]:
    """dimension -> cluster of the cells of the series' latest drift run."""
    return dict(_rows(data, f"""
        SELECT c.dimension, c.cluster FROM drift_cells c JOIN drift_runs r USING (tenant_id, run_id)
        WHERE r.run_id = (SELECT run_id FROM drift_runs WHERE fingerprint = (
            SELECT fingerprint FROM evaluators WHERE name = '{series}') ORDER BY as_of DESC, completed_at DESC LIMIT 1)"""))


def test_imported_evaluations_land_in_the_cells_of_the_judgments_of_their_traces(lake):
    """The shapes whose earliest keyed span is not the rule's (a keyed parent started before the call's own key;
    an earlier agent's key; a refused key under a keyed parent), a trace without a key, a conversation's turns, a
    call under a keyed span of the day before, and a key the active version does not know (`unassigned` there, its
    own cluster in the intent-key mode): each trace's record is in the cell of its judgment, in both modes."""
    data, _, expected, _ = lake
    unknown = _id("b", 11)  # a valid key the version was not fitted on
    write_rows(data, "acme", [_call(unknown, _id("b", 111, 16), None, DAY + timedelta(hours=3), "returns.v1")])
    names = {t: f"q{t[:3]}" for t in [*expected, unknown]}
    evaluation_records(data, names, DAY + timedelta(hours=4))
    config = parse_config({"data_dir": str(data), "tenants": [{"id": "acme"}],
                           "sampling": {"per_cluster_per_window": 50},
                           "evaluators": [
                               {"name": "quality", "kind": "rubric", "model": f"{__name__}:conversation_judge"}],
                           "imported_evaluations": [{"name": "support-qa", "evaluator": "support-qa-suite",
                                                     "evaluations": sorted(names.values())}]})
    evaluators = build_evaluators(config)
    daemon = Daemon(config.model_copy(update={"clustering": Clustering(registry_mode="active")}),
                    clock=lambda: NOW + timedelta(seconds=10))

    def pipeline(mode: str, as_of: datetime) -> Callable[[], object]:
        return lambda: run_cycle(config, ACME, as_of, evaluators, registry_mode=mode)

    # Later looks each (one at an `as_of` taken returns its stored run), the current window still past midnight;
    # the daemon's drift job pins the version apart from the pipeline's cycle.
    for mode, look in (("active", pipeline("active", NOW)), ("daemon", daemon.drift),
                       ("off", pipeline("off", NOW + timedelta(seconds=20)))):
        look()
        judged = _clusters(data)
        assert _cells(data, "support-qa") == {name: judged[t] for t, name in names.items()}, mode
        assert judged[unknown] == ("returns.v1" if mode == "off" else UNASSIGNED)
    assert {judged[t] for t in expected} >= {UNASSIGNED, "search.v1", "refunds.v1"}
