"""Registry versions: immutable cluster definitions with a fingerprint, a preview and a status.

A version's id hashes (tenant, strategy, cutoff, target workload, parameters, definition
fingerprint), so fitting the same index twice finds the same version instead of adding one. Only
`status`, `validation` and the display names (tenant-wide, per cluster id) ever change after a fit.

Cluster ids: an explicit cluster's id is its intent key (the same key keeps its id across
versions); a semantic cluster's id is `semantic/<key>` (`/` cannot occur in an intent key). Traces
no cluster takes are `unassigned` (with a reason), semantic outliers `semantic/outlier`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.service.sampling import UNASSIGNED

STRATEGIES = ("explicit", "semantic", "hybrid")
EXPERIMENTAL = frozenset({"semantic", "hybrid"})
OUTLIER = "semantic/outlier"
SEMANTIC_PREFIX = "semantic/"
RESERVED_CLUSTERS = (UNASSIGNED, OUTLIER)
VERSION_ID = re.compile(r"cv-[0-9a-f]{16}")

_COLUMNS = ("tenant_id", "version_id", "strategy", "experimental", "status", "cutoff", "target_workload", "params",
            "definition", "definition_fingerprint", "preview", "gate", "validation", "created_by", "created_at")


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def fingerprint(definition: dict) -> str:
    return hashlib.sha256(canonical(definition).encode()).hexdigest()


def version_id(tenant: str, strategy: str, cutoff: datetime, target_workload: str | None, identity: dict,
               definition_fingerprint: str) -> str:
    digest = hashlib.sha256(canonical([tenant, strategy, cutoff.isoformat(), target_workload, identity,
                                       definition_fingerprint]).encode()).hexdigest()
    return f"cv-{digest[:16]}"


@dataclass(frozen=True)
class Version:
    tenant_id: str
    version_id: str
    strategy: str
    experimental: bool
    status: str  # fitted, validated, validation_failed
    cutoff: datetime
    target_workload: str | None
    params: dict
    definition: dict
    definition_fingerprint: str
    preview: dict
    gate: dict | None  # quality gate result (semantic, hybrid)
    validation: dict | None
    created_by: str
    created_at: datetime

    def summary(self) -> dict:
        """What inspect and fit print about a version (no definition: it can be large)."""
        out = {"version_id": self.version_id, "strategy": self.strategy, "status": self.status,
               "experimental": self.experimental, "cutoff": self.cutoff.isoformat(),
               "target_workload": self.target_workload, "definition_fingerprint": self.definition_fingerprint,
               "clusters": len(self.definition["clusters"]), "created_by": self.created_by,
               "created_at": self.created_at.isoformat()}
        if self.experimental:
            passed = bool(self.gate and self.gate.get("passed"))
            out["quality_gate"] = self.gate
            out["note"] = (f"experimental strategy; quality gate {'passed' if passed else 'FAILED'}"
                           + ("" if passed else ": this version cannot be validated or activated"))
        return out


def row(version: Version) -> tuple:
    return (version.tenant_id, version.version_id, version.strategy, version.experimental, version.status,
            version.cutoff, version.target_workload, canonical(version.params), canonical(version.definition),
            version.definition_fingerprint, canonical(version.preview),
            None if version.gate is None else canonical(version.gate),
            None if version.validation is None else canonical(version.validation), version.created_by,
            version.created_at)


def _json(value):
    return None if value is None else json.loads(value)


def load(con, tenant: str, version: str) -> Version:
    """The tenant's version `version`, or `unknown_version` (another tenant's id is unknown too)."""
    found = con.execute(f"SELECT {', '.join(_COLUMNS)} FROM cluster_versions WHERE tenant_id = ? AND version_id = ?",
                        [tenant, version]).fetchone()
    if found is None:
        raise ClusterError("unknown_version", f"tenant {tenant} has no registry version {version!r}")
    values = dict(zip(_COLUMNS, found, strict=True))
    for name in ("params", "definition", "preview", "gate", "validation"):
        values[name] = _json(values[name])
    return Version(**values)


def insert(con, version: Version, clusters: list[tuple[str, str, str | None, int]]) -> bool:
    """Store a new version and its clusters (cluster_id, kind, intent_key, size); False if it existed."""
    from verdict_daemon.store.state import insert_rows

    exists = con.execute("SELECT 1 FROM cluster_versions WHERE tenant_id = ? AND version_id = ?",
                         [version.tenant_id, version.version_id]).fetchone()
    if exists:
        return False
    con.execute(f"INSERT INTO cluster_versions ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                list(row(version)))
    insert_rows(con, "registry_clusters", ("tenant_id", "version_id", "cluster_id", "kind", "intent_key", "size"),
                [(version.tenant_id, version.version_id, *c) for c in clusters])
    return True


def parse_version_id(text: str) -> str:
    if not VERSION_ID.fullmatch(text):
        raise ClusterError("invalid_config", f"--version: {text[:80]!r} is not a version id (cv- and 16 hex digits)")
    return text
