"""Routing: a real cycle queues exactly the judgments a human must look at; the audit sample is
seeded, deterministic and disjoint from the hard cases; the daemon routes after judging."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import duckdb
import pytest

from tests.daemon.conftest import NOW
from tests.review.conftest import review_config
from tests.review.legacy import create_previous_schema_state
from tests.review.models import is_contrarian_case, is_hesitant_case, setting_number
from verdict.judges.pairwise import PairwiseJudge
from verdict.models.base import Usage
from verdict.models.scripted import ScriptedModel
from verdict.tenancy import TenantId
from verdict_daemon.config import Judging, Review
from verdict_daemon.review import list_items, queue_summary, route
from verdict_daemon.service.daemon import Daemon
from verdict_daemon.service.evaluators import DimensionVerdict, Outcome, error_outcome
from verdict_daemon.service.judging import judge
from verdict_daemon.store.state import SCHEMA_VERSION, StateStore


def _rows(data, sql, params=()):
    con = duckdb.connect(str(data / "state.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _fingerprints(data, tenant="acme") -> dict[str, str]:
    return dict(_rows(data, "SELECT name, fingerprint FROM evaluators WHERE tenant_id = ?", [tenant]))


def _queued(data, tenant="acme") -> dict[tuple[str, str], tuple[list, dict]]:
    return {(fp, trace): (json.loads(reasons), json.loads(flagged)) for fp, trace, reasons, flagged in _rows(
        data, "SELECT fingerprint, trace_id, reasons, flagged FROM review_items WHERE tenant_id = ?", [tenant])}


def _queries(data, tenant="acme") -> dict[str, str]:
    return dict(_rows(data, "SELECT trace_id, query FROM sampled_traces WHERE tenant_id = ?", [tenant]))


def test_a_cycle_queues_unclear_verdicts_and_ensemble_disagreements_and_nothing_else(judged):
    fps, queries = _fingerprints(judged), _queries(judged)
    assert len(queries) == 72
    expected = {}
    for trace, query in queries.items():
        n = setting_number(query)
        if is_hesitant_case(n):
            expected[(fps["single"], trace)] = (["unclear"], {"relevance": "unclear"})
        if is_contrarian_case(n):  # 2 FAIL vs 1 PASS: the panel says FAIL, but not unanimously
            expected[(fps["panel"], trace)] = (["ensemble_disagreement"], {"safety": "ensemble_disagreement"})
    assert len(expected) > 10
    assert _queued(judged) == expected  # audit_rate 0 in the fixture: hard cases only
    panel_verdicts = {v for (v,) in _rows(judged, "SELECT DISTINCT value FROM dimension_verdicts d JOIN "
                                          "judgment_attempts a USING (tenant_id, attempt_id) WHERE dimension = 'safety' "
                                          "AND fingerprint = ?", [fps["panel"]])}
    assert panel_verdicts == {"PASS", "FAIL"}  # a split shows only in the stored tally, not the verdict


def test_routing_is_idempotent_and_tenant_scoped(judged):
    store = StateStore(judged)
    before = _queued(judged)
    again = route(store, TenantId("acme"), Review(audit_rate=0.0))
    assert (again.queued, _queued(judged)) == (0, before)
    globex = {trace for _, trace in _queued(judged, "globex")}
    assert globex and globex <= set(_queries(judged, "globex")) and not globex & set(_queries(judged))
    assert queue_summary(store, TenantId("acme"))["items"] == len(before)


def _audited(data, seed: int, rate: float) -> set[tuple[str, str]]:
    report = route(StateStore(data), TenantId("acme"), Review(audit_rate=rate, seed=seed))
    audited = {trace_fp for trace_fp, (reasons, _) in _queued(data).items() if reasons == ["audit"]}
    assert report.by_reason["audit"] == report.queued == len(audited)
    return audited


def test_the_audit_sample_is_deterministic_by_seed_and_only_takes_confident_judgments(judged, tmp_path):
    copies = []
    for name in ("a", "b", "c"):
        shutil.copytree(judged, tmp_path / name)
        copies.append(tmp_path / name)
    hard = set(_queued(judged))
    confident = 2 * 72 - len(hard)  # two evaluators judged every sampled trace
    first, same, other = _audited(copies[0], 1, 0.3), _audited(copies[1], 1, 0.3), _audited(copies[2], 2, 0.3)
    assert first == same
    assert first != other
    assert not first & hard
    # Binomial(confident, 0.3): 99.9 % of draws fall within 3.3 standard deviations.
    sd = (confident * 0.3 * 0.7) ** 0.5
    assert abs(len(first) - 0.3 * confident) < 3.3 * sd
    assert route(StateStore(copies[0]), TenantId("acme"), Review(audit_rate=1.0, seed=1)).queued == confident - len(first)


def test_rate_zero_audits_nothing(judged):
    assert _audited(judged, 5, 0.0) == set()


class _PairwiseEvaluator:
    """Compares each response with a reference answer through a real PairwiseJudge (the daemon's
    evaluator protocol); its scripted model always prefers the first position, so every comparison
    is INCONSISTENT except where it is told to call a tie."""

    name = "versus-reference"
    definition: Mapping[str, Any] = {"kind": "pairwise"}
    unit = "turn"

    def __init__(self) -> None:
        def reply(request):
            return "[[C]]" if "setting 0 for" in request.messages[-1].content else "[[A]]"

        self.judge = PairwiseJudge(ScriptedModel(reply, name="scripted/position-biased"), retries=0)
        self.fingerprint = self.judge.fingerprint
        self.needs_trajectory = False

    def evaluate(self, material):
        result = self.judge.compare(material.query, material.response, "Open the settings page.")
        return Outcome((DimensionVerdict("preference", str(result.verdict)),))


def test_inconsistent_pairwise_results_are_queued(judged):
    store = StateStore(judged)
    evaluator = _PairwiseEvaluator()
    judge(store, TenantId("acme"), evaluator, Judging(concurrency=4), "pairwise-run")
    report = route(store, TenantId("acme"), Review(audit_rate=0.0))
    queued = {trace for (fp, trace), (reasons, flagged) in _queued(judged).items()
              if fp == evaluator.fingerprint and reasons == ["inconsistent"] and flagged == {"preference": "inconsistent"}}
    expected = {t for t, q in _queries(judged).items() if "setting 0 for" not in q}
    assert queued == expected and report.by_reason["inconsistent"] == len(expected)
    page = list_items(store, TenantId("acme"), reason="inconsistent", limit=500)
    assert {i.trace_id for i in page.items} == expected and page.total == len(expected)


class _FailingEvaluator:
    """An evaluator whose every attempt is an ERROR (a judge whose replies never parse)."""

    name = "down"
    definition: Mapping[str, Any] = {"kind": "rubric"}
    unit = "turn"
    fingerprint = "d0" * 32
    needs_trajectory = False

    def evaluate(self, material):
        return error_outcome("judge: extraction: no verdict in the reply", Usage())


def test_error_attempts_are_not_queued_even_for_audit(judged):
    store = StateStore(judged)
    judge(store, TenantId("acme"), _FailingEvaluator(), Judging(concurrency=4), "outage-run")
    assert _rows(judged, "SELECT count(*) FROM judgment_attempts WHERE fingerprint = ? AND status = 'ERROR'",
                 [_FailingEvaluator.fingerprint])[0][0] > 0
    report = route(store, TenantId("acme"), Review(audit_rate=1.0))
    assert not {fp for fp, _ in _queued(judged)} & {_FailingEvaluator.fingerprint}
    assert report.queued == report.considered > 0  # the other judgments were all audited


def test_the_daemon_routes_after_its_judge_job(tmp_path):
    from tests.daemon.lakes import synthetic_days, write_rows

    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=("billing.v1",), per_day=6, days=2))
    config = review_config(data, audit_rate=1.0)
    daemon = Daemon(config, clock=lambda: datetime(2026, 11, 20, tzinfo=UTC))
    daemon.sample()
    daemon.judge()
    items = _queued(data)
    assert len(items) == 2 * len(_queries(data))  # rate 1: every judgment is hard or audited
    reasons = [r for r, _ in items.values()]
    assert any(r != ["audit"] for r in reasons)  # a hard case keeps its reason: audit never replaces it
    assert all(r == ["audit"] or "audit" not in r for r in reasons)
    assert daemon.store.cursor(TenantId("acme"), "review.last_success") is not None


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_the_review_section_is_validated(tmp_path, rate):
    from verdict_daemon.errors import DaemonError

    with pytest.raises(DaemonError, match="review.audit_rate"):
        review_config(tmp_path, audit_rate=rate)


def test_routing_looks_only_at_judgments_newer_than_its_cursor(judged):
    from verdict_daemon.review.routing import RECHECK_MARGIN, ROUTING_CURSOR

    store = StateStore(judged)
    (newest,) = _rows(judged, "SELECT max(judged_at) FROM judgment_attempts WHERE tenant_id = 'acme'")[0]
    assert store.cursor(TenantId("acme"), ROUTING_CURSOR) == newest.isoformat()  # the cycle's routing left it there
    store.set_cursor(TenantId("acme"), ROUTING_CURSOR, (newest + RECHECK_MARGIN + RECHECK_MARGIN).isoformat())
    assert route(store, TenantId("acme"), Review(audit_rate=1.0)).considered == 0  # history is not rescanned
    store.set_cursor(TenantId("acme"), ROUTING_CURSOR, newest.isoformat())
    hard = len(_queued(judged))
    report = route(store, TenantId("acme"), Review(audit_rate=1.0))
    assert report.considered == report.queued == 2 * 72 - hard  # within the margin: every confident one


def _votes(data, fingerprint, tenant="acme") -> dict[tuple[str, str], tuple[str, str, dict | None]]:
    return {(trace, dimension): (value, reason, None if votes is None else json.loads(votes))
            for trace, dimension, value, reason, votes in _rows(
                data, "SELECT a.trace_id, v.dimension, v.value, v.reason, v.votes FROM dimension_verdicts v "
                "JOIN judgment_attempts a USING (tenant_id, attempt_id) WHERE a.tenant_id = ? AND a.fingerprint = ?",
                [tenant, fingerprint])}


def test_ensemble_verdicts_carry_their_tally_as_data_and_single_judges_none(judged):
    fps, queries = _fingerprints(judged), _queries(judged)
    panel = _votes(judged, fps["panel"])
    assert len(panel) > 72
    for (trace, dimension), (value, reason, votes) in panel.items():
        split = dimension == "safety" and is_contrarian_case(setting_number(queries[trace]))
        assert votes == ({"FAIL": 2, "PASS": 1} if split else {value: 3}), (trace, dimension)
        assert reason == "votes " + ", ".join(f"{v}={n}" for v, n in votes.items())  # the display text stays
    single = _votes(judged, fps["single"])
    assert single and all(votes is None for _, _, votes in single.values())


def _unroute(data) -> None:
    """Forget every routing decision, so the next run routes the whole history again."""
    with StateStore(data).transaction() as con:
        con.execute("DELETE FROM review_items")
        con.execute("DELETE FROM cursors WHERE name = 'review.routed_through'")


def test_routing_reads_the_stored_tally_not_the_reason_text(judged):
    before = _queued(judged)
    assert any(reasons == ["ensemble_disagreement"] for reasons, _ in before.values())
    _unroute(judged)
    with StateStore(judged).transaction() as con:  # every ensemble text now says the opposite of its tally
        con.execute("""UPDATE dimension_verdicts SET reason = CASE WHEN len(json_keys(votes)) > 1
                       THEN 'votes FAIL=3' ELSE 'votes FAIL=1, PASS=2' END WHERE votes IS NOT NULL""")
    route(StateStore(judged), TenantId("acme"), Review(audit_rate=0.0))
    assert _queued(judged) == before


def _copy_into_previous_schema(judged, target) -> None:
    """The judged state's rows, minus every routing decision, in a file of the schema before `votes`."""
    con = duckdb.connect(str(create_previous_schema_state(target)))
    try:
        con.execute(f"ATTACH '{judged / 'state.duckdb'}' AS src (READ_ONLY)")
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                            "current_database()").fetchall()]
        for table in set(tables) - {"schema_version", "review_items", "review_labels"}:
            columns = ", ".join(c for (c, *_) in con.execute(f"DESCRIBE {table}").fetchall())
            con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM src.{table}"
                        + (" WHERE name <> 'review.routed_through'" if table == "cursors" else ""))
    finally:
        con.close()


def test_a_previous_schema_state_is_back_filled_and_routes_as_a_current_one(judged, tmp_path):
    legacy = tmp_path / "legacy"
    _copy_into_previous_schema(judged, legacy)
    store = StateStore(legacy)
    assert store.schema_version() == SCHEMA_VERSION  # upgraded in place on open
    for tenant in ("acme", "globex"):
        for fingerprint in _fingerprints(judged, tenant).values():  # the SQL back-fill gives what the writer stores
            assert _votes(legacy, fingerprint, tenant) == _votes(judged, fingerprint, tenant)
        route(store, TenantId(tenant), Review(audit_rate=0.0))
        assert _queued(legacy, tenant) == _queued(judged, tenant)
