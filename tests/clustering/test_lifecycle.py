"""The explicit registry lifecycle through `verdict-cluster` on real Parquet lakes: normalize paging,
fit previews checked against an independent pyarrow count, immutable assignments, validation,
compare-and-swap activation, rollback rules, rename, inspect paging, determinism, tenant isolation."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime

import duckdb
import pytest

from tests.clustering.cli import lifecycle, normalized, ok, run
from tests.clustering.lakes import (
    CUTOFF,
    DAYS,
    INTENTS,
    INVALID_PER_DAY,
    INVALID_REASON,
    MISSING_PER_DAY,
    PER_DAY,
    build,
    expected_keys,
    rows_for,
)
from tests.daemon.cli import env
from tests.daemon.lakes import write_rows

THROUGH = "2026-11-20T00:00:00+00:00"
TRACES_PER_DAY = len(INTENTS) * PER_DAY + MISSING_PER_DAY + INVALID_PER_DAY


@pytest.fixture
def lake(tmp_path):
    return build(tmp_path / "data")


def _rows(data_dir, sql: str, *params):
    con = duckdb.connect(str(data_dir / "state.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def test_normalize_backfills_in_bounded_pages_and_indexes_what_clustering_needs(lake):
    total = DAYS * TRACES_PER_DAY  # judge-workload and failed calls are not candidates
    first = ok(lake, "normalize", "--limit", "50")
    assert first == {"indexed": 50, "remaining": total - 50, "total_indexed": 50, "complete": False}
    second = ok(lake, "normalize", "--limit", "50000")
    assert second == {"indexed": total - 50, "remaining": 0, "total_indexed": total, "complete": True}
    assert ok(lake, "normalize", "--limit", "10") == {"indexed": 0, "remaining": 0, "total_indexed": total,
                                                      "complete": True}
    rows = _rows(lake, "SELECT key_status, key_reason, count(*), count(DISTINCT content_hash) FROM analysis_index "
                 "WHERE tenant_id = 'acme' GROUP BY ALL ORDER BY 1")
    assert rows == [("invalid", INVALID_REASON, DAYS * INVALID_PER_DAY, INVALID_PER_DAY),
                    ("missing", None, DAYS * MISSING_PER_DAY, MISSING_PER_DAY),
                    ("valid", None, DAYS * len(INTENTS) * PER_DAY, len(INTENTS) * PER_DAY)]
    text, = _rows(lake, "SELECT first_user_message FROM analysis_index WHERE intent_key = 'billing.v1' LIMIT 1")[0]
    assert text.startswith("Why was my card charged twice")
    # globex was not touched by acme's normalize
    assert _rows(lake, "SELECT count(*) FROM analysis_index WHERE tenant_id = 'globex'") == [(0,)]


def test_fit_needs_a_complete_index_and_a_named_strategy(lake):
    code, out = run(lake, "fit", "--cutoff", CUTOFF)
    assert code == 2 and out["code"] == "invalid_config"
    assert all(name in out["message"] for name in ("explicit", "semantic", "hybrid"))
    ok(lake, "normalize", "--limit", "10")
    code, out = run(lake, "fit", "--strategy", "explicit", "--cutoff", CUTOFF)
    assert code == 2 and out["code"] == "analysis_index_pending" and out["pending"] == 3 * TRACES_PER_DAY - 10
    assert _rows(lake, "SELECT count(*) FROM cluster_versions") == [(0,)]


def test_explicit_lifecycle_from_fit_to_rollback(lake):
    normalized(lake)
    fitted = ok(lake, "fit", "--strategy", "explicit", "--cutoff", CUTOFF)
    version, preview = fitted["version_id"], fitted["preview"]
    reference = expected_keys(lake, "acme", datetime.fromisoformat(CUTOFF))
    assert preview["clusters"] == len(INTENTS)
    assert {c["cluster_id"]: c["traces"] for c in preview["largest_clusters"]} == \
        {k: n for k, n in reference.items() if not k.startswith("<")}
    assert preview["missing_intent_key"] == reference["<missing>"] == 3 * MISSING_PER_DAY
    assert preview["invalid_intent_key"] == reference["<invalid>"]
    assert preview["invalid_reasons"] == [{"reason": INVALID_REASON, "traces": reference["<invalid>"]}]
    assert preview["candidates"] == sum(reference.values())
    assert fitted["version"]["status"] == "fitted" and not fitted["version"]["experimental"]
    assert "quality_gate" not in fitted["version"]  # explicit clustering has no gate to claim

    # activation needs a validated version, validation needs assignments
    code, out = run(lake, "activate", "--version", version, "--expected-generation", "0")
    assert code == 2 and out["code"] == "validation_failed"
    code, out = run(lake, "validate", "--version", version)
    assert code == 2 and out["code"] == "validation_failed"
    assert [c["check"] for c in out["checks"] if not c["passed"]] == ["coverage"]

    assigned = ok(lake, "assign", "--version", version, "--through-cutoff", THROUGH)
    assert assigned["assigned"] == assigned["total"] == DAYS * TRACES_PER_DAY
    assert assigned["reasons"] == {"invalid_intent_key": DAYS * INVALID_PER_DAY,
                                   "missing_intent_key": DAYS * MISSING_PER_DAY}
    code, out = run(lake, "assign", "--version", version, "--through-cutoff", THROUGH, "--model-path", str(lake))
    assert code == 2 and out["code"] == "invalid_config" and "explicit" in out["message"]
    assert ok(lake, "validate", "--version", version)["status"] == "validated"
    assert ok(lake, "activate", "--version", version, "--expected-generation", "0") == \
        {"active_version": version, "previous_version": None, "generation": 1}

    # a second version (a later cutoff sees the same keys but more traces): new id, activation is a CAS
    second = lifecycle(lake, cutoff=THROUGH, generation=None)
    assert second != version
    code, out = run(lake, "activate", "--version", second, "--expected-generation", "0")
    assert code == 2 and out["code"] == "generation_conflict" and out["generation"] == 1
    ok(lake, "activate", "--version", second, "--expected-generation", "1")

    # rollback: only to a version that was active before, and also a CAS
    third = ok(lake, "fit", "--strategy", "explicit", "--cutoff", "2026-11-18T00:00:00Z")["version_id"]
    code, out = run(lake, "rollback", "--version", third, "--expected-generation", "2")
    assert code == 2 and out["code"] == "rollback_target_not_activated"
    code, out = run(lake, "rollback", "--version", version, "--expected-generation", "1")
    assert code == 2 and out["code"] == "generation_conflict"
    assert ok(lake, "rollback", "--version", version, "--expected-generation", "2") == \
        {"active_version": version, "previous_version": second, "generation": 3}

    overview = ok(lake, "inspect")
    assert (overview["active_version"], overview["generation"]) == (version, 3)
    assert [e["action"] for e in overview["events"]["items"][:3]] == ["rolled_back", "fitted", "activated"]
    assert overview["versions"]["total"] == 3
    page = ok(lake, "inspect", "--version-limit", "2")["versions"]
    assert (len(page["items"]), page["total"], page["truncated"]) == (2, 3, True)
    page = ok(lake, "inspect", "--version-limit", "2", "--version-offset", "2")["versions"]
    assert (len(page["items"]), page["truncated"]) == (1, False)


def test_assignments_are_immutable_and_new_keys_are_not_invented(lake):
    version = lifecycle(lake, generation=None)
    before = _rows(lake, "SELECT trace_id, cluster_id, reason, assigned_at FROM registry_assignments ORDER BY 1")
    # a new feature ships after the fit: its traces are reported, never put in a cluster the version lacks
    write_rows(lake, "acme", [r | {"start_time": r["start_time"] + 86_400 * 10**9,
                                   "end_time": r["end_time"] + 86_400 * 10**9}
                              for r in rows_for("acme", intents=("checkout.v2",), days=1, seed=9)])
    code, out = run(lake, "assign", "--version", version, "--through-cutoff", "2026-11-21T00:00:00Z")
    assert code == 2 and out["code"] == "analysis_index_pending"
    normalized(lake)
    later = ok(lake, "assign", "--version", version, "--through-cutoff", "2026-11-21T00:00:00Z")
    assert later["assigned"] == TRACES_PER_DAY - 3 * PER_DAY  # one intent instead of four on that day
    assert later["reasons"]["unknown_intent_key"] == PER_DAY
    after = _rows(lake, "SELECT trace_id, cluster_id, reason, assigned_at FROM registry_assignments ORDER BY 1")
    assert set(before) <= set(after)  # nothing assigned earlier changed
    assert ok(lake, "assign", "--version", version, "--through-cutoff", "2026-11-21T00:00:00Z")["assigned"] == 0
    assert _rows(lake, "SELECT count(*), count(DISTINCT trace_id) FROM registry_assignments") == [(len(after),) * 2]


def test_validation_fails_on_an_edited_definition_a_lost_cluster_or_low_coverage(lake):
    version = lifecycle(lake, generation=None)
    state = str(lake / "state.duckdb")

    def fails_with(edit: str, undo: str, failed: list[str]) -> None:
        con = duckdb.connect(state)
        con.execute(edit)
        con.close()
        code, out = run(lake, "validate", "--version", version)
        assert code == 2 and out["code"] == "validation_failed", out
        assert [c["check"] for c in out["checks"] if not c["passed"]] == failed
        code, out = run(lake, "activate", "--version", version, "--expected-generation", "0")
        assert code == 2 and out["code"] == "validation_failed"  # the recorded failure blocks activation
        con = duckdb.connect(state)
        con.execute(undo)
        con.close()

    fails_with("UPDATE cluster_versions SET definition = replace(definition, '\"strategy\":', '\"edited\":1,\"strategy\":')",
               "UPDATE cluster_versions SET definition = replace(definition, '\"edited\":1,', '')", ["fingerprint"])
    fails_with("CREATE TABLE lost AS SELECT * FROM registry_clusters WHERE cluster_id = 'search.v1'; "
               "DELETE FROM registry_clusters WHERE cluster_id = 'search.v1'",
               "INSERT INTO registry_clusters SELECT * FROM lost", ["structure", "coverage"])
    fails_with("UPDATE registry_assignments SET cluster_id = 'unassigned', reason = 'x' "
               "WHERE cluster_id IN ('billing.v1', 'search.v1', 'returns.v1')",
               "UPDATE registry_assignments SET cluster_id = 'billing.v1', reason = NULL WHERE reason = 'x'",
               ["coverage"])
    assert ok(lake, "validate", "--version", version)["status"] == "validated"  # whole again (coverage only counts)


def test_an_experimental_version_is_validated_only_with_a_passed_gate(lake):
    """The rule without the model (test_hybrid_lifecycle.py runs it with MiniLM): every other check
    passes, and the stored gate result alone decides."""
    version = lifecycle(lake, generation=None)
    con = duckdb.connect(str(lake / "state.duckdb"))
    con.execute("UPDATE cluster_versions SET strategy = 'hybrid', experimental = true, "
                "gate = '{\"passed\": false, \"failed_checks\": [\"ari\"]}'")
    con.close()
    code, out = run(lake, "validate", "--version", version)
    assert code == 2 and [c["check"] for c in out["checks"] if not c["passed"]] == ["quality_gate"]
    assert "quality gate failed (ari)" in out["message"]
    summary = ok(lake, "inspect", "--version", version)["version"]
    assert summary["status"] == "validation_failed" and "quality gate FAILED" in summary["note"]
    con = duckdb.connect(str(lake / "state.duckdb"))
    con.execute("UPDATE cluster_versions SET gate = '{\"passed\": true, \"failed_checks\": []}'")
    con.close()
    assert ok(lake, "validate", "--version", version)["status"] == "validated"


def test_refits_and_reruns_are_deterministic(tmp_path):
    outputs = []
    for name in ("one", "two"):
        data = build(tmp_path / name)
        version = lifecycle(data)
        again = ok(data, "fit", "--strategy", "explicit", "--cutoff", CUTOFF)
        assert again["version_id"] == version and again["reused"]
        inspected = ok(data, "inspect", "--version", version)
        outputs.append((version, inspected["version"]["definition_fingerprint"], inspected["version"]["preview"],
                        inspected["clusters"]["items"], inspected["assignments"],
                        _rows(data, "SELECT trace_id, cluster_id, reason FROM registry_assignments ORDER BY 1")))
    assert outputs[0] == outputs[1]


def test_rename_changes_the_display_name_only(lake):
    version = lifecycle(lake)
    ids = _rows(lake, "SELECT cluster_id FROM registry_clusters ORDER BY 1")
    renamed = ok(lake, "rename", "--cluster-id", "billing.v1", "--display-name", "  Billing and invoices  ")
    assert renamed == {"cluster_id": "billing.v1", "display_name": "Billing and invoices", "previous": None}
    assert ok(lake, "rename", "--cluster-id", "billing.v1", "--display-name", "Billing")["previous"] == \
        "Billing and invoices"
    ok(lake, "rename", "--cluster-id", "search.v1", "--display-name", "Búsqueda de productos 🔎")
    clusters = ok(lake, "inspect", "--version", version)["clusters"]["items"]
    names = {c["cluster_id"]: c["display_name"] for c in clusters}
    assert (names["billing.v1"], names["search.v1"]) == ("Billing", "Búsqueda de productos 🔎")
    assert _rows(lake, "SELECT cluster_id FROM registry_clusters ORDER BY 1") == ids
    code, out = run(lake, "rename", "--cluster-id", "nope.v1", "--display-name", "Nope")
    assert code == 2 and out["code"] == "unknown_cluster"


def test_inspect_pages_stay_under_their_ceilings(tmp_path):
    intents = tuple(f"feature{i:02d}.v1" for i in range(30))
    data = build(tmp_path / "data", tenants=("acme",), intents=intents, per_day=1, days=2)
    version = lifecycle(data, cutoff="2026-11-20T00:00:00Z")
    page = ok(data, "inspect", "--version", version, "--cluster-limit", "10", "--cluster-offset", "25")["clusters"]
    assert (len(page["items"]), page["total"], page["offset"], page["limit"], page["truncated"]) == (5, 30, 25, 10, False)
    page = ok(data, "inspect", "--version", version, "--cluster-limit", "10")["clusters"]
    assert len(page["items"]) == 10 and page["truncated"]
    events = ok(data, "inspect", "--event-limit", "1")["events"]
    assert len(events["items"]) == 1 and events["truncated"] and events["total"] == 4
    for flag, value in (("--cluster-limit", "501"), ("--event-limit", "201"), ("--version-limit", "0"),
                        ("--cluster-offset", "-1")):
        code, out = run(data, "inspect", "--version", version, flag, value)
        assert code == 2 and out["code"] == "invalid_config" and flag in out["message"]


def test_tenants_never_see_or_change_each_other(lake):
    version = lifecycle(lake)
    normalized(lake, "globex")
    for args, code_expected in ((("inspect", "--version", version), "unknown_version"),
                                (("assign", "--version", version, "--through-cutoff", THROUGH), "unknown_version"),
                                (("validate", "--version", version), "unknown_version"),
                                (("activate", "--version", version, "--expected-generation", "0"), "unknown_version"),
                                (("rollback", "--version", version, "--expected-generation", "0"), "unknown_version"),
                                (("rename", "--cluster-id", "billing.v1", "--display-name", "Mine"), "unknown_cluster")):
        code, out = run(lake, *args, tenant="globex")
        assert code == 2 and out["code"] == code_expected, (args, out)
    overview = ok(lake, "inspect", tenant="globex")
    assert overview["active_version"] is None and overview["versions"]["total"] == 0 and overview["events"]["total"] == 0
    # globex fits its own registry from its own traces only
    theirs = ok(lake, "fit", "--strategy", "explicit", "--cutoff", CUTOFF, tenant="globex")
    assert theirs["version_id"] != version
    assert theirs["preview"]["candidates"] == sum(expected_keys(lake, "globex", datetime.fromisoformat(CUTOFF)).values())
    assert ok(lake, "inspect")["active_version"] == version


def test_explicit_clustering_never_loads_the_semantic_stack(lake):
    script = ("import sys; from pathlib import Path; from tests.clustering.cli import lifecycle; "
              "lifecycle(Path(sys.argv[1])); "
              "print(sorted(m for m in ('torch', 'sentence_transformers', 'scipy', 'sklearn', "
              "'verdict_daemon.clustering.semantic') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", script, str(lake)], capture_output=True, text=True, env=env(),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
