"""`inspect`: the registry (or one version) as bounded pages.

Every list is a page `{"items", "total", "offset", "limit", "truncated"}`; a limit above its hard
ceiling is refused (`invalid_config`), so no inspect output grows with the registry's size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from verdict.tenancy import validate_tenant_id
from verdict_daemon.clustering import pointer, versions
from verdict_daemon.store.state import StateStore

# Per list: (default limit, hard ceiling).
PAGING = {"version": (20, 200), "cluster": (50, 500), "event": (20, 200)}
MAX_OFFSET = 1_000_000_000


@dataclass(frozen=True)
class Page:
    limit: int
    offset: int = 0


def _page(con, sql: str, params: list, page: Page, shape) -> dict:
    total = con.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0]
    rows = con.execute(f"{sql} LIMIT ? OFFSET ?", [*params, page.limit, page.offset]).fetchall()
    return {"items": [shape(row) for row in rows], "total": total, "offset": page.offset, "limit": page.limit,
            "truncated": page.offset + len(rows) < total}


def _event(row) -> dict:
    seq, version_id, action, actor, generation, detail, at = row
    return {"seq": seq, "version_id": version_id, "action": action, "actor": actor, "generation": generation,
            "detail": json.loads(detail), "at": at.isoformat()}


_EVENTS = ("SELECT seq, version_id, action, actor, generation, detail, recorded_at FROM registry_events "
           "WHERE tenant_id = ?")


def inspect(store: StateStore, tenant: str, version_id: str | None, pages: dict[str, Page]) -> dict:
    tenant = validate_tenant_id(tenant)
    with store.transaction() as con:
        active = pointer.current(con, tenant)
        if version_id is None:
            return {"tenant_id": tenant, **active.to_dict(),
                    "versions": _page(con, "SELECT version_id FROM cluster_versions WHERE tenant_id = ? "
                                      "ORDER BY created_at DESC, version_id", [tenant], pages["version"],
                                      lambda row: versions.load(con, tenant, row[0]).summary()),
                    "events": _page(con, _EVENTS + " ORDER BY seq DESC", [tenant], pages["event"], _event)}
        version = versions.load(con, tenant, version_id)
        reasons = dict(con.execute(
            "SELECT coalesce(reason, 'clustered'), count(*) FROM registry_assignments WHERE tenant_id = ? "
            "AND version_id = ? GROUP BY 1 ORDER BY 1", [tenant, version_id]).fetchall())
        clusters = _page(con, """
            SELECT c.cluster_id, c.kind, c.intent_key, c.size, d.display_name,
                   (SELECT count(*) FROM registry_assignments r WHERE r.tenant_id = c.tenant_id
                      AND r.version_id = c.version_id AND r.cluster_id = c.cluster_id) AS assigned
            FROM registry_clusters c
            LEFT JOIN cluster_display_names d ON d.tenant_id = c.tenant_id AND d.cluster_id = c.cluster_id
            WHERE c.tenant_id = ? AND c.version_id = ? ORDER BY c.size DESC, c.cluster_id""",
                         [tenant, version_id], pages["cluster"],
                         lambda r: {"cluster_id": r[0], "kind": r[1], "intent_key": r[2], "fit_size": r[3],
                                    "display_name": r[4], "assigned": r[5]})
        return {"tenant_id": tenant, **active.to_dict(),
                "version": {**version.summary(), "active": active.version_id == version_id,
                            "params": version.params, "preview": version.preview, "validation": version.validation},
                "assignments": {"total": sum(reasons.values()), "by_reason": reasons},
                "clusters": clusters,
                "events": _page(con, _EVENTS + " AND version_id = ? ORDER BY seq DESC", [tenant, version_id],
                                pages["event"], _event)}
