"""A closed conversation judged as a whole is clustered as its first turn is, in both registry modes
(docs/conversations.md, "Conversations judged as a whole"; docs/clustering.md, "Using the active version").

The lake: three days of single-turn traffic (billing.v1, hours.v1, returns.v1) that an explicit registry version is
fitted on and activated, then a day of two-turn conversations written after it, so their traces are not in the
analysis index when the cycle runs. Each conversation's second turn carries returns.v1 (a unit taking any turn but
the first would show it); one conversation's first turn is an agent span keyed router.v1 around a billing.v1 call
(the call is what both modes read); one's first call failed (it has no graded call, hence no intent key). Plenty of
keyless-conversation billing.v1 traffic that day keeps most first turns out of the turn sample, so the assign step
has to index them itself. The judge is scripted; everything else is the real cycle on real DuckDB files.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from tests.clustering.cli import lifecycle
from tests.clustering.test_pipeline_active import _rows
from tests.daemon.lakes import span_row, synthetic_days, write_rows
from verdict.models.base import ModelRequest
from verdict.models.scripted import ScriptedModel
from verdict.tenancy import TenantId
from verdict_daemon.config import parse_config
from verdict_daemon.service.cycle import build_evaluators, run_cycle

ACME = TenantId("acme")
NOW = datetime(2026, 11, 20, tzinfo=UTC)
DAY = datetime(2026, 11, 19, 1, 0, tzinfo=UTC)  # the conversations' day, after the version's cutoff
CUTOFF = "2026-11-18T00:00:00+00:00"


def conversation_grade(request: ModelRequest) -> str:
    keys = re.search(r"with exactly the keys ([a-z_, ]+):", request.messages[0].content)
    assert keys is not None, request.messages[0].content
    return json.dumps({k: {"rationale": f"{k} checked", "evidence": [], "verdict": "PASS"}
                       for k in keys.group(1).split(", ")})


def conversation_judge() -> ScriptedModel:
    return ScriptedModel(conversation_grade, name="scripted/conversation-judge")


def _turn(trace: str, start: datetime, key: str, intent: str, **extra) -> dict:
    row = span_row(trace, start, intent=intent, query=f"question of {trace[:6]}", answer="Done, as asked.", **extra)
    row["conversation_id"] = key
    return row


def conversation_day() -> tuple[list[dict], dict[str, str]]:
    """The conversations' spans and, per conversation key, the cluster its first turn gets."""
    rows: list[dict] = []
    expected: dict[str, str] = {}
    for n in range(14):
        key, first = f"k{n:02d}", "billing.v1" if n < 7 else "hours.v1"
        start = DAY + timedelta(minutes=70 * n)
        turn_1, turn_2 = f"{n:02d}a".ljust(32, "0"), f"{n:02d}b".ljust(32, "0")
        if n == 0:  # an agent span keyed router.v1, started first, around the turn's billing.v1 call
            agent = _turn(turn_1, start - timedelta(seconds=1), key, "router.v1", span_id="ab" * 8)
            agent.update(operation="invoke_agent", name="invoke_agent router", kind="INTERNAL", input_messages=None,
                         output_messages=None)
            rows.append(agent)
        failed = n == 7  # its first call failed: the turn has no graded call, hence no intent key
        rows.append(_turn(turn_1, start, key, first, status="ERROR" if failed else "UNSET"))
        rows.append(_turn(turn_2, start + timedelta(minutes=5), key, "returns.v1"))
        expected[turn_1] = "unassigned" if failed else first
    rows += [span_row(f"{n:03d}f".ljust(32, "0"), DAY + timedelta(minutes=20 * n), intent="billing.v1",
                      query=f"loose question {n}", answer="Here you go.") for n in range(50)]
    return rows, expected


@pytest.fixture
def lake(tmp_path):
    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW - timedelta(days=2), intents=("billing.v1", "hours.v1", "returns.v1"),
                                            per_day=10, days=3))
    version = lifecycle(data, cutoff=CUTOFF, through=CUTOFF)  # fitted, validated and activated before the day below
    rows, expected = conversation_day()
    write_rows(data, "acme", rows)
    return data, version, expected


def _units(data_dir) -> dict[str, tuple]:
    return {t: tuple(rest) for t, *rest in _rows(data_dir, """
        SELECT s.trace_id, c.cluster, c.reason, c.method FROM sampled_traces s
        LEFT JOIN cluster_assignments c USING (tenant_id, trace_id) WHERE s.unit = 'conversation'""")}


def test_a_conversation_unit_takes_its_first_turns_cluster_in_both_registry_modes(lake):
    data, version, expected = lake
    config = parse_config({"data_dir": str(data), "tenants": [{"id": "acme"}],
                           "sampling": {"per_cluster_per_window": 8},
                           "evaluators": [{"name": "outcome", "kind": "rubric", "unit": "conversation",
                                           "model": f"{__name__}:conversation_judge"}]})
    evaluators = build_evaluators(config)

    summary = run_cycle(config, ACME, NOW, evaluators, registry_mode="active")
    assert summary["registry_version"] == version and summary["sampled_conversations"] == 14
    assert summary["judged"] == 14 and summary["errors"] == 0
    units = _units(data)
    assert {u.removeprefix("conversation:") for u in units} == set(expected)
    # Most first turns are no turn of the sample: the assign step indexed them itself.
    turns = {t for (t,) in _rows(data, "SELECT trace_id FROM sampled_traces WHERE unit = 'turn'")}
    assert len(set(expected) - turns) >= 7, turns & set(expected)
    # Each unit has its first turn's cluster under the active version, with the version's method; the first turn
    # the registry assigned is exactly that cluster (the failed one: no graded call, no intent key, unassigned).
    method = f"registry:{version}"
    assert units == {f"conversation:{t}": (c, "missing_intent_key" if c == "unassigned" else None, method)
                     for t, c in expected.items()}
    registry = dict(_rows(data, f"SELECT trace_id, cluster_id FROM registry_assignments WHERE version_id = '{version}'"))
    assert {t: registry.get(t, "unassigned") for t in expected} == expected
    # ... and the units are drifted: the evaluator's run has their clusters' cells.
    (run,) = [r for r in summary["drift_runs"] if r["evaluator"] == "outcome"]
    assert run["judgments"] == 14 * 3
    cells = _rows(data, f"SELECT DISTINCT cluster FROM drift_cells WHERE run_id = '{run['run_id']}' ORDER BY 1")
    assert cells == [("billing.v1",), ("hours.v1",), ("unassigned",)]

    # The intent-key mode gives every unit the same cluster: its first turn's intent as a turn's (its graded call's
    # key, not the router span's), and reads it from the sample's own row.
    summary = run_cycle(config, ACME, NOW, evaluators, registry_mode="off")
    assert summary["registry_version"] is None
    assert _units(data) == {u: (c, r, "intent_key") for u, (c, r, _) in units.items()}
    assert dict(_rows(data, "SELECT trace_id, intent_key FROM sampled_traces WHERE unit = 'conversation'")) == {
        f"conversation:{t}": (None if c == "unassigned" else c) for t, c in expected.items()}
