"""Explicit clustering: one cluster per valid intent key (the supported strategy).

Fit reads the analysis index before the cutoff: every valid key becomes a cluster whose id is the
key. Traces without a key are reported as `missing_intent_key`, invalid or unsafe keys as
`invalid_intent_key` with their (redacted) reasons; neither is folded into a catch-all cluster.
Assignment is one set-based INSERT … SELECT (a join of the index on the version's clusters).
"""

from __future__ import annotations

from datetime import datetime

from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.service.sampling import UNASSIGNED

PREVIEW_TOP = 10  # clusters and invalid-key reasons listed in a fit preview
KIND = "intent_key"

# The candidate rows of a fit: the tenant's indexed traces before the cutoff (of the target workload).
CANDIDATES = ("a.tenant_id = $t AND a.started_at < $cutoff AND ($workload IS NULL OR a.workload = $workload)")


def key_counts(con, args: dict) -> tuple[list[tuple], dict[str, int], list[tuple]]:
    """(one cluster per valid key as (cluster_id, kind, intent_key, size), traces per key status,
    the most frequent invalid-key reasons) over the candidates `args` select."""
    keys = con.execute(f"SELECT a.intent_key, count(*) FROM analysis_index a WHERE {CANDIDATES} "
                       "AND a.key_status = 'valid' GROUP BY 1 ORDER BY 1", args).fetchall()
    statuses = dict(con.execute(f"SELECT a.key_status, count(*) FROM analysis_index a WHERE {CANDIDATES} GROUP BY 1",
                                args).fetchall())
    reasons = con.execute(f"SELECT a.key_reason, count(*) AS n FROM analysis_index a WHERE {CANDIDATES} "
                          "AND a.key_status = 'invalid' GROUP BY 1 ORDER BY n DESC, 1 LIMIT $top",
                          {**args, "top": PREVIEW_TOP + 1}).fetchall()
    return [(key, KIND, key, size) for key, size in keys], statuses, reasons


def fit(con, tenant: str, cutoff: datetime, workload: str | None) -> tuple[list[tuple], dict, dict]:
    """(clusters as (cluster_id, kind, intent_key, size), definition, preview)."""
    clusters, statuses, reasons = key_counts(con, {"t": tenant, "cutoff": cutoff, "workload": workload})
    if not clusters:
        raise ClusterError("invalid_config", f"no indexed trace before {cutoff.isoformat()}"
                           + (f" (workload {workload})" if workload else "")
                           + " carries a valid intent key; explicit clustering needs keys (see --strategy hybrid)")
    definition = {"strategy": "explicit",
                  "clusters": [{"cluster_id": cid, "intent_key": key} for cid, _, key, _ in clusters]}
    preview = preview_report(sum(statuses.values()), [(cid, size) for cid, _, _, size in clusters],
                             statuses.get("missing", 0), statuses.get("invalid", 0), reasons)
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


# Assigns the rows of `scope` (a SQL condition on analysis_index `a`) that the version has not
# assigned yet. Rows without a known explicit key go to `unassigned` with their reason, or, with
# `$fallback` (hybrid), are left to the semantic step.
ASSIGN = f"""
    INSERT INTO registry_assignments
    SELECT a.tenant_id, $v, a.trace_id, a.started_at, coalesce(c.cluster_id, '{UNASSIGNED}'), 'explicit',
           CASE WHEN c.cluster_id IS NOT NULL THEN NULL
                WHEN a.key_status = 'missing' THEN 'missing_intent_key'
                WHEN a.key_status = 'invalid' THEN 'invalid_intent_key'
                ELSE 'unknown_intent_key' END,
           $now
    FROM analysis_index a
    LEFT JOIN registry_clusters c
      ON c.tenant_id = a.tenant_id AND c.version_id = $v AND c.kind = '{KIND}' AND c.intent_key = a.intent_key
    ANTI JOIN (SELECT trace_id FROM registry_assignments WHERE tenant_id = $t AND version_id = $v) r
      ON r.trace_id = a.trace_id
    WHERE a.tenant_id = $t AND ($workload IS NULL OR a.workload = $workload) AND ({{scope}})
      AND NOT ($fallback AND a.key_status <> 'valid')"""
