"""The `dimension_verdicts.votes` migration: a state file of the previous schema upgrades in place, its
ensemble verdicts get their tally back-filled from the tally text (and nothing else does), and a real
daemon cycle on the upgraded file stores the tally of new ensemble verdicts."""

from __future__ import annotations

import json
from datetime import datetime

import duckdb

from tests.daemon.conftest import NOW, make_config
from tests.daemon.lakes import synthetic_days, write_rows
from tests.review.legacy import VOTES_STEP, create_previous_schema_state
from verdict.tenancy import TenantId
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.store.state import SCHEMA_VERSION, StateStore

AT = datetime(2026, 11, 19, 12, 0)
PANEL, SINGLE = "e" * 64, "r" * 64
# (tenant, attempt, fingerprint, dimension, value, score, reason) -> the back-filled votes
LEGACY = {
    ("acme", "a-split", PANEL, "safety", "FAIL", None, "votes FAIL=2, PASS=1"): {"FAIL": 2, "PASS": 1},
    ("acme", "a-split", PANEL, "relevance", "PASS", None, "votes PASS=3"): {"PASS": 3},
    ("acme", "a-tie", PANEL, "safety", "UNCLEAR", None, "votes FAIL=1, PASS=1"): {"FAIL": 1, "PASS": 1},
    ("acme", "a-tie", PANEL, "relevance", "PASS", None, "votes PASS=1, UNCLEAR=1"): {"PASS": 1, "UNCLEAR": 1},
    # not a tally: an ensemble row whose text does not parse, a single judge's look-alike rationale
    ("acme", "a-odd", PANEL, "safety", "PASS", None, "votes: all of them"): None,
    ("acme", "a-odd", PANEL, "relevance", "PASS", None, "votes PASS=3 after a retry"): None,
    ("acme", "a-single", SINGLE, "safety", "PASS", None, "votes FAIL=1, PASS=2 is what a user wrote"): None,
    ("acme", "a-single", SINGLE, "relevance", "FAIL", None, "votes FAIL=1, PASS=2"): None,
    ("acme", "a-single", SINGLE, "length", None, 0.5, None): None,
    # the same attempt id under another tenant, whose fingerprint is a rubric judge there
    ("globex", "a-split", PANEL, "safety", "FAIL", None, "votes FAIL=2, PASS=1"): None,
}
LEGACY_ATTEMPTS = {key[1] for key in LEGACY}


def _write_legacy_rows(path) -> None:
    con = duckdb.connect(str(path))
    try:
        for tenant, kind in (("acme", "ensemble"), ("globex", "rubric")):
            con.execute("INSERT INTO evaluators VALUES (?, ?, 'panel', ?, ?)", [tenant, PANEL, json.dumps({"kind": kind}), AT])
        con.execute("INSERT INTO evaluators VALUES ('acme', ?, 'single', ?, ?)", [SINGLE, json.dumps({"kind": "rubric"}), AT])
        for tenant, attempt, fingerprint in sorted({row[:3] for row in LEGACY}):
            con.execute("INSERT INTO judgment_attempts VALUES (?, ?, ?, ?, 1, 'OK', NULL, NULL, ?, 1, 1, 0.0, 'old')",
                        [tenant, attempt, f"trace-{attempt}", fingerprint, AT])
        for tenant, attempt, _, dimension, value, score, reason in LEGACY:
            con.execute("INSERT INTO dimension_verdicts VALUES (?, ?, ?, ?, ?, ?)",
                        [tenant, attempt, dimension, value, score, reason])
    finally:
        con.close()


def _verdicts(path) -> dict[tuple, dict | None]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute("SELECT v.tenant_id, v.attempt_id, a.fingerprint, v.dimension, v.value, v.score, v.reason, "
                           "v.votes FROM dimension_verdicts v JOIN judgment_attempts a USING (tenant_id, attempt_id)").fetchall()
    finally:
        con.close()
    return {row[:7]: None if row[7] is None else json.loads(row[7]) for row in rows}


def test_a_previous_schema_file_upgrades_in_place_and_back_fills_ensemble_tallies_only(tmp_path):
    path = create_previous_schema_state(tmp_path)
    _write_legacy_rows(path)
    store = StateStore(tmp_path)
    assert store.schema_version() == SCHEMA_VERSION > VOTES_STEP
    assert _verdicts(path) == LEGACY  # every other column untouched; votes exactly where a tally was
    StateStore(tmp_path).schema_version()  # reopening runs nothing again
    con = duckdb.connect(str(path), read_only=True)
    versions = [v for (v,) in con.execute("SELECT version FROM schema_version ORDER BY version").fetchall()]
    con.close()
    assert versions == list(range(1, SCHEMA_VERSION + 1))


def test_a_daemon_cycle_on_an_upgraded_file_stores_new_ensemble_tallies(tmp_path):
    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=("billing.v1",), per_day=6, days=2))
    _write_legacy_rows(create_previous_schema_state(data))
    config = make_config(data, evaluators=[
        {"name": "single", "kind": "rubric", "model": "tests.daemon.lakes:scripted_judge_model"},
        {"name": "trio", "kind": "ensemble", "models": ["tests.daemon.lakes:scripted_judge_model"] * 3}])
    evaluators = build_evaluators(config)
    assert run_cycle(config, TenantId("acme"), NOW, evaluators)["errors"] == 0
    fingerprints = {e.name: e.fingerprint for e in evaluators}
    stored = _verdicts(data / "state.duckdb")
    new = {key: votes for key, votes in stored.items() if key[1] not in LEGACY_ATTEMPTS}
    trio = {key: votes for key, votes in new.items() if key[2] == fingerprints["trio"]}
    single = [votes for key, votes in new.items() if key[2] == fingerprints["single"]]
    assert trio and single
    # three identical members: every verdict is unanimous, its tally {value: 3}; the text stays for display
    assert all(votes == {value: 3} and reason == f"votes {value}=3"
               for (_, _, _, _, value, _, reason), votes in trio.items())
    assert single == [None] * len(single)
    assert {key: votes for key, votes in stored.items() if key[1] in LEGACY_ATTEMPTS} == LEGACY
