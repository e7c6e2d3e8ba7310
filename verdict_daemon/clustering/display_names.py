"""`rename`: a human-readable display name for a cluster id (tenant-wide; the id never changes)."""

from __future__ import annotations

from datetime import UTC, datetime

from verdict.redact import redact_text
from verdict.tenancy import TenantId
from verdict_daemon.clustering import events
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.store.clusters import ClusterRepository
from verdict_daemon.store.state import StateStore

MAX_DISPLAY_NAME = 80
MAX_CLUSTER_ID = 200


def parse_display_name(text: str) -> str:
    """A display name is shown in reports: short, printable, and free of personal data or secrets."""
    name = text.strip()
    if not 1 <= len(name) <= MAX_DISPLAY_NAME:
        raise ClusterError("invalid_config", f"--display-name must be 1-{MAX_DISPLAY_NAME} characters "
                           f"(got {len(name)})")
    if not name.isprintable():
        raise ClusterError("invalid_config", "--display-name must not contain control characters")
    if redact_text(name) != name:
        raise ClusterError("invalid_config", "--display-name looks like it holds personal data or a secret "
                           f"(redaction would change it to {redact_text(name)!r})")
    return name


def parse_cluster_id(text: str) -> str:
    if not 1 <= len(text) <= MAX_CLUSTER_ID or not text.isprintable():
        raise ClusterError("invalid_config", f"--cluster-id must be 1-{MAX_CLUSTER_ID} printable characters")
    return text


def rename(store: StateStore, tenant: TenantId, actor: str, cluster_id: str, display_name: str) -> dict:
    cluster_id, display_name = parse_cluster_id(cluster_id), parse_display_name(display_name)
    with ClusterRepository(store).transaction() as tx:
        if not tx.knows_cluster(tenant, cluster_id):
            raise ClusterError("unknown_cluster", f"no version of tenant {tenant}'s registry has cluster {cluster_id!r}")
        before = tx.display_name(tenant, cluster_id)
        tx.set_display_name(tenant, cluster_id, display_name, actor, datetime.now(UTC).replace(tzinfo=None))
        events.record(tx, tenant, None, "renamed", actor,
                      detail={"cluster_id": cluster_id, "display_name": display_name, "previous": before})
    return {"cluster_id": cluster_id, "display_name": display_name, "previous": before}
