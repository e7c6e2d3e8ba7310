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

STRATEGIES = ("explicit", "semantic", "hybrid")
EXPERIMENTAL = frozenset({"semantic", "hybrid"})
OUTLIER = "semantic/outlier"
SEMANTIC_PREFIX = "semantic/"
UNASSIGNED = "unassigned"  # the stratum and cluster of a trace without an intent key or cluster
RESERVED_CLUSTERS = (UNASSIGNED, OUTLIER)
VERSION_ID = re.compile(r"cv-[0-9a-f]{16}")

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


def parse_version_id(text: str) -> str:
    if not VERSION_ID.fullmatch(text):
        raise ClusterError("invalid_config", f"--version: {text[:80]!r} is not a version id (cv- and 16 hex digits)")
    return text
