"""Semantic clustering maths on synthetic vectors (no model): fit, k choice, radius, outliers,
determinism, two-stage scaling, JSON definitions, gate metrics. sklearn is the independent
reference for silhouette, ARI and purity."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score, silhouette_score
from sklearn.metrics.cluster import contingency_matrix

from tests.clustering import eval_set
from verdict_daemon.clustering import quality_gate as gate
from verdict_daemon.clustering.semantic import (
    OUTLIER,
    SemanticCluster,
    SemanticParams,
    assign_semantic,
    clusters_from_definition,
    definition_of,
    fit_semantic,
    silhouette,
)


def blobs(sizes: list[int], dim: int = 48, spread: float = 0.25, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors around len(sizes) random directions, and their true blob labels."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(sizes), dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    rows = np.vstack([c + spread * rng.normal(size=(n, dim)) / np.sqrt(dim) for c, n in zip(centres, sizes, strict=True)])
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32), np.repeat(np.arange(len(sizes)), sizes)


def ids_for(n: int) -> list[str]:
    return [f"text-{i:05d}" for i in range(n)]


def test_fit_recovers_separated_blobs_with_silhouette_k():
    x, truth = blobs([40, 30, 30, 25, 25])
    fit = fit_semantic(x, ids=ids_for(len(x)))
    assert fit.k == 5 and fit.method == "ward"
    assert OUTLIER not in fit.labels  # tight blobs: every radius is the 0.05 floor
    assert [c.size for c in fit.clusters] == [40, 30, 30, 25, 25]
    fit = fit_semantic(x, SemanticParams(min_radius=0.0), ids=ids_for(len(x)))
    labels = np.asarray(fit.labels)
    kept = labels != OUTLIER
    assert adjusted_rand_score(truth[kept], labels[kept]) == 1.0
    # Beyond the 95 % member quantile: the farthest 1-2 members of each blob, nobody else.
    assert 5 <= (~kept).sum() <= 8
    assert sum(c.size for c in fit.clusters) == kept.sum()
    chosen = next(cut for cut in fit.k_scan if cut.k == fit.k)
    assert chosen.silhouette == max(cut.silhouette for cut in fit.k_scan if cut.largest_share <= 0.30)


def test_silhouette_matches_sklearn():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(90, 16))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    dist = np.clip(1 - x @ x.T, 0, 2)
    np.fill_diagonal(dist, 0)
    for k in (2, 5, 9):
        labels = rng.integers(0, k, size=90)
        labels[:k] = np.arange(k)
        labels[-1] = k  # a singleton scores 0, as in sklearn
        assert silhouette(dist, labels) == pytest.approx(silhouette_score(x, labels, metric="cosine"), abs=1e-9)


def test_largest_cluster_cap_steers_k():
    # One dominant blob: k=2 has the best silhouette but puts 70 % in one cluster.
    x, _ = blobs([140, 20, 20, 20], spread=0.2)
    capped = fit_semantic(x, ids=ids_for(len(x)))
    uncapped = fit_semantic(x, SemanticParams(max_cluster_fraction=1.0), ids=ids_for(len(x)))
    assert max(c.size for c in uncapped.clusters) / len(x) > 0.30
    assert max(c.size for c in capped.clusters) / len(x) <= 0.30
    assert capped.k > uncapped.k


def test_no_cut_under_the_cap_takes_the_smallest_largest_cluster():
    x, _ = blobs([60, 60], spread=0.05)
    fit = fit_semantic(x, SemanticParams(k_max=3, max_cluster_fraction=0.05), ids=ids_for(len(x)))
    shares = {cut.k: cut.largest_share for cut in fit.k_scan}
    assert all(share > 0.05 for share in shares.values())
    assert fit.k == min(shares, key=lambda k: (shares[k], k))


def test_rerun_and_input_order_give_the_same_clusters():
    x, _ = blobs([30, 30, 30])
    ids = ids_for(len(x))
    first = fit_semantic(x, ids=ids)
    assert fit_semantic(x.copy(), ids=list(ids)) == first
    perm = np.random.default_rng(1).permutation(len(x))
    shuffled = fit_semantic(x[perm], ids=[ids[i] for i in perm])
    assert shuffled.clusters == first.clusters  # same keys, centroids, radii, sizes, order
    assert list(shuffled.labels) == [first.labels[i] for i in perm]


def test_duplicates_do_not_change_keys_but_count_in_sizes():
    x, _ = blobs([15, 15, 15, 15])
    ids = ids_for(len(x))
    base = fit_semantic(x, ids=ids)
    doubled = fit_semantic(np.vstack([x, x[:15]]), ids=ids + ids[:15])
    assert {c.key for c in doubled.clusters} == {c.key for c in base.clusters}
    assert doubled.sample_size == 60
    assert [c.size for c in doubled.clusters] == [30, 15, 15, 15]


def test_keys_without_ids_hash_the_vectors():
    x, _ = blobs([15, 15, 15])
    assert fit_semantic(x).clusters == fit_semantic(x.copy()).clusters
    assert all(c.key.startswith("sem-") and len(c.key) == 20 for c in fit_semantic(x).clusters)


def test_two_stage_fit_samples_then_assigns_everyone():
    x, truth = blobs([250, 250, 250, 250], spread=0.2)
    ids = ids_for(len(x))
    params = SemanticParams(fit_sample_size=150)
    fit = fit_semantic(x, params, ids=ids)
    assert fit.sample_size == 150 and len(fit.labels) == 1000
    assert adjusted_rand_score(truth, fit.labels) > 0.99
    assert fit_semantic(x, params, ids=ids) == fit
    other_seed = fit_semantic(x, SemanticParams(fit_sample_size=150, seed=1), ids=ids)
    assert {c.key for c in other_seed.clusters} != {c.key for c in fit.clusters}  # another sample
    assert adjusted_rand_score(fit.labels, other_seed.labels) > 0.99  # same partition


def test_radius_is_a_member_quantile_with_a_floor():
    x, _ = blobs([50, 50], spread=0.3)
    fit = fit_semantic(x, SemanticParams(radius_quantile=0.5, min_radius=0.0), ids=ids_for(100))
    labels = np.asarray(fit.labels)
    assert 0 < (labels == OUTLIER).mean() < 0.6  # half of each cluster lies beyond its median radius
    for index, cluster in enumerate(fit.clusters):
        c = np.asarray(cluster.centroid)
        assert np.linalg.norm(c) == pytest.approx(1.0)
        members = x[labels == index].astype(np.float64)
        inside = 1 - (members / np.linalg.norm(members, axis=1, keepdims=True)) @ c
        assert inside.max() <= cluster.radius + 1e-9
    floored = fit_semantic(x, SemanticParams(min_radius=1.5), ids=ids_for(100))
    assert all(c.radius == 1.5 for c in floored.clusters)


def test_assign_picks_nearest_containing_cluster_and_flags_outliers():
    e = np.eye(4)
    clusters = (SemanticCluster("a", tuple(e[0]), 0.5, 1), SemanticCluster("b", tuple(e[1]), 0.9, 1))
    near_a = e[0] + 0.2 * e[1]
    between = e[0] + 1.05 * e[1]  # nearer b, and inside both radii
    only_b = e[0] + 1.5 * e[1]
    far = e[2]  # cosine distance 1 to both
    assert assign_semantic(clusters, np.vstack([near_a, between, only_b, far, -e[0]])) == [0, 1, 1, OUTLIER, OUTLIER]
    assert assign_semantic((), np.vstack([near_a])) == [OUTLIER]
    with pytest.raises(ValueError, match="dimension 3, the clusters 4"):
        assign_semantic(clusters, np.ones((1, 3)))


def test_definition_round_trips_through_json():
    x, _ = blobs([25, 25, 25, 25])
    fit = fit_semantic(x, ids=ids_for(100))
    text = json.dumps(definition_of(fit), sort_keys=True)
    restored = clusters_from_definition(json.loads(text))
    assert restored == fit.clusters
    assert tuple(assign_semantic(restored, x)) == fit.labels
    assert json.dumps(definition_of(fit_semantic(x, ids=ids_for(100))), sort_keys=True) == text


def _definition() -> dict:
    return definition_of(fit_semantic(blobs([10, 10, 10, 10])[0], ids=ids_for(40)))


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d.update(schema="other"), "not a semantic definition"),
    (lambda d: d.update(clusters=[]), "non-empty 'clusters'"),
    (lambda d: d["clusters"][0].pop("radius"), r"clusters\[0\] must have exactly"),
    (lambda d: d["clusters"][1].update(key=d["clusters"][0]["key"]), r"clusters\[1\].key must be"),
    (lambda d: d["clusters"][0].update(centroid=d["clusters"][0]["centroid"][:-1]), "must be 48 finite numbers"),
    (lambda d: d["clusters"][0]["centroid"].__setitem__(0, float("nan")), "finite numbers"),
    (lambda d: d["clusters"][0].update(centroid=[2 * v for v in d["clusters"][0]["centroid"]]), "unit length"),
    (lambda d: d["clusters"][0].update(radius=2.5), r"radius must be a cosine distance"),
    (lambda d: d["clusters"][0].update(size=True), "size must be a non-negative integer"),
    (lambda d: d.update(k=99), "k=99 but lists 4 clusters"),
])
def test_malformed_definitions_are_named(mutate, message):
    definition = _definition()
    mutate(definition)
    with pytest.raises(ValueError, match=message):
        clusters_from_definition(definition)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "single"}, "method must be one of ward, average, complete"),
    ({"k_rule": "elbow"}, "k_rule must be one of silhouette"),
    ({"k_min": 1}, "2 <= k_min <= k_max"),
    ({"k_min": 9, "k_max": 4}, "2 <= k_min <= k_max"),
    ({"radius_quantile": 0}, "radius_quantile must be in"),
    ({"max_cluster_fraction": 1.5}, "max_cluster_fraction must be in"),
    ({"fit_sample_size": 2}, "fit_sample_size must be an integer >= 3"),
])
def test_invalid_params_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SemanticParams(**kwargs)


def test_params_round_trip_and_reject_unknown_fields():
    params = SemanticParams(method="average", k_max=12, seed=3)
    assert SemanticParams.from_dict(json.loads(json.dumps(params.to_dict()))) == params
    with pytest.raises(ValueError, match="unknown semantic parameter"):
        SemanticParams.from_dict({"radius": 0.3})


@pytest.mark.parametrize(("vectors", "message"), [
    (np.ones(4), "2-D"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN or infinite"),
    (np.array([[1.0, 0.0], [0.0, 0.0]]), "row 1 is all zeros"),
])
def test_bad_vectors_are_rejected(vectors, message):
    with pytest.raises(ValueError, match=message):
        fit_semantic(vectors)


def test_fewer_than_three_distinct_points_make_one_cluster():
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    fit = fit_semantic(x, ids=["a", "b", "a"])
    assert fit.k == 1 and fit.labels == (0, 0, 0) and fit.k_scan == ()
    with pytest.raises(ValueError, match="got 2 ids for 3 vectors"):
        fit_semantic(x, ids=["a", "b"])


# --- gate metrics -----------------------------------------------------------------------------


def sklearn_purity(truth, labels) -> float:
    table = contingency_matrix(truth, labels)
    return table.max(axis=0).sum() / table.sum()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(-1, 5)), min_size=1, max_size=60))
def test_partition_scores_match_sklearn(pairs):
    truth, labels = [t for t, _ in pairs], [label for _, label in pairs]
    purity, ari = gate.partition_scores(truth, labels)
    assert purity == pytest.approx(sklearn_purity(truth, labels), abs=1e-12)
    assert ari == pytest.approx(adjusted_rand_score(truth, labels), abs=1e-9)


def test_gate_checks_every_preregistered_threshold():
    truth = [c for c in eval_set.CATEGORIES for _ in range(10)]
    perfect = [i // 10 for i in range(80)]
    result = gate.evaluate_gate(truth, perfect, 8, SemanticParams(), "sha256:x")
    assert result.passed and result.failed_checks == () and result.purity == 1.0 and result.ari == 1.0
    assert result.largest_share == 0.125 and result.outlier_share == 0.0

    catch_all = [0] * 40 + perfect[40:]  # first 4 categories in one cluster
    assert gate.evaluate_gate(truth, catch_all, 5, SemanticParams(), "x").failed_checks == ("largest_share",)

    random_split = np.random.default_rng(0).integers(0, 8, size=80).tolist()
    failed = gate.evaluate_gate(truth, random_split, 8, SemanticParams(), "x").failed_checks
    assert "purity" in failed and "ari" in failed

    mostly_outliers = [OUTLIER] * 24 + perfect[24:]
    result = gate.evaluate_gate(truth, mostly_outliers, 6, SemanticParams(), "x")
    assert "outlier_share" in result.failed_checks and result.outlier_share == 0.3
    assert result.to_dict()["status"] == "gate_failed"
    assert result.to_dict()["thresholds"] == {"max_largest_share": 0.30, "min_purity": 0.50,
                                              "min_ari": 0.20, "max_outlier_share": 0.20}


def test_product_eval_set_is_the_frozen_file():
    items = gate.load_eval_set()
    assert eval_set.sha256() == gate.EVAL_SET_SHA256
    assert [(i.question_id, i.category, i.text) for i in items] == eval_set.load()
    assert tuple(i.question_id for i in items) == eval_set.QUESTION_IDS
    assert {c: sum(i.category == c for i in items) for c in eval_set.CATEGORIES} == dict.fromkeys(eval_set.CATEGORIES, 10)
