"""Explicit clustering: one cluster per valid intent key (the supported strategy).

Fit reads the analysis index before the cutoff: every valid key becomes a cluster whose id is the
key. Traces without a key are reported as `missing_intent_key`, invalid or unsafe keys as
`invalid_intent_key` with their (redacted) reasons; neither is folded into a catch-all cluster.
Assignment is one set-based INSERT … SELECT joining the index on the version's clusters
(`RegistryTransaction.assign_explicit` in verdict_daemon.store.clusters).
"""

from __future__ import annotations

from datetime import datetime

from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.store.clusters import EXPLICIT_KIND, KeyCounts, RegistryCluster

PREVIEW_TOP = 10  # clusters and invalid-key reasons listed in a fit preview
KIND = EXPLICIT_KIND


def clusters_of(counts: KeyCounts) -> list[RegistryCluster]:
    """One cluster per valid key; its id is the key."""
    return [RegistryCluster(key, KIND, key, size) for key, size in counts.keys]


def fit(counts: KeyCounts, cutoff: datetime, workload: str | None) -> tuple[list[RegistryCluster], dict, dict]:
    """(clusters, definition, preview) from the candidates' key counts (`RegistryTransaction.key_counts`
    with `top=PREVIEW_TOP + 1`)."""
    clusters = clusters_of(counts)
    if not clusters:
        raise ClusterError("invalid_config", f"no indexed trace before {cutoff.isoformat()}"
                           + (f" (workload {workload})" if workload else "")
                           + " carries a valid intent key; explicit clustering needs keys (see --strategy hybrid)")
    definition = {"strategy": "explicit",
                  "clusters": [{"cluster_id": c.cluster_id, "intent_key": c.intent_key} for c in clusters]}
    preview = preview_report(sum(counts.statuses.values()), [(c.cluster_id, c.size) for c in clusters],
                             counts.statuses.get("missing", 0), counts.statuses.get("invalid", 0), list(counts.reasons))
    return clusters, definition, preview


def preview_report(candidates: int, sizes: list[tuple[str, int]], missing: int, invalid: int,
                   reasons: list[tuple[str | None, int]], **extra: int) -> dict:
    """The fit preview: coverage, the largest clusters and why traces stay unassigned."""
    covered = sum(size for _, size in sizes)
    largest = sorted(sizes, key=lambda item: (-item[1], item[0]))
    return {
        "candidates": candidates, "clusters": len(sizes), "covered": covered,
        "coverage": round(covered / candidates, 6) if candidates else 0.0,
        "largest_share": round(largest[0][1] / candidates, 6) if covered else 0.0,  # as the quality gate counts it
        "largest_clusters": [{"cluster_id": c, "traces": n, "share": round(n / candidates, 6)}
                             for c, n in largest[:PREVIEW_TOP]],
        "largest_clusters_truncated": len(largest) > PREVIEW_TOP,
        "missing_intent_key": missing, "invalid_intent_key": invalid,
        "invalid_reasons": [{"reason": r or "unknown", "traces": n} for r, n in reasons[:PREVIEW_TOP]],
        "invalid_reasons_truncated": len(reasons) > PREVIEW_TOP,
        **extra,
    }
