"""`inspect`: the registry (or one version) as bounded pages.

Every list is a page `{"items", "total", "offset", "limit", "truncated"}`; a limit above its hard
ceiling is refused (`invalid_config`), so no inspect output grows with the registry's size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verdict.tenancy import TenantId
from verdict_daemon.store.clusters import ClusterRepository, ClusterView, Event
from verdict_daemon.store.state import StateStore

# Per list: (default limit, hard ceiling).
PAGING = {"version": (20, 200), "cluster": (50, 500), "event": (20, 200)}
MAX_OFFSET = 1_000_000_000


@dataclass(frozen=True)
class Page:
    limit: int
    offset: int = 0


def _page(page: Page, read: Callable[[int, int], tuple[int, list]], shape: Callable[[Any], dict]) -> dict:
    total, rows = read(page.limit, page.offset)
    return {"items": [shape(row) for row in rows], "total": total, "offset": page.offset, "limit": page.limit,
            "truncated": page.offset + len(rows) < total}


def _event(event: Event) -> dict:
    return {"seq": event.seq, "version_id": event.version_id, "action": event.action, "actor": event.actor,
            "generation": event.generation, "detail": event.detail, "at": event.recorded_at.isoformat()}


def _cluster(view: ClusterView) -> dict:
    c = view.cluster
    return {"cluster_id": c.cluster_id, "kind": c.kind, "intent_key": c.intent_key, "fit_size": c.size,
            "display_name": view.display_name, "assigned": view.assigned}


def inspect(store: StateStore, tenant: TenantId, version_id: str | None, pages: dict[str, Page]) -> dict:
    with ClusterRepository(store).transaction() as tx:
        active = tx.pointer(tenant)
        if version_id is None:
            return {"tenant_id": tenant, **active.to_dict(),
                    "versions": _page(pages["version"], lambda n, o: tx.versions_page(tenant, n, o),
                                      lambda v: v.summary()),
                    "events": _page(pages["event"], lambda n, o: tx.events_page(tenant, None, n, o), _event)}
        version = tx.version(tenant, version_id)
        reasons = tx.assignment_reasons(version)
        return {"tenant_id": tenant, **active.to_dict(),
                "version": {**version.summary(), "active": active.version_id == version_id,
                            "params": version.params, "preview": version.preview, "validation": version.validation},
                "assignments": {"total": sum(reasons.values()), "by_reason": reasons},
                "clusters": _page(pages["cluster"], lambda n, o: tx.clusters_page(version, n, o), _cluster),
                "events": _page(pages["event"], lambda n, o: tx.events_page(tenant, version_id, n, o), _event)}
