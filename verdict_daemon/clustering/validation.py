"""`validate`: structure, coverage and definition fingerprint of a version, recorded on the version.

Checks (all must pass for `validated`; otherwise `validation_failed` is recorded and returned as the
error `validation_failed` with the checks):
- structure: the stored clusters equal the definition's; ids are unique and well formed (an explicit
  cluster's id is its valid intent key; a semantic one is `semantic/<key>` of a well-formed semantic
  definition);
- fingerprint: the stored definition still hashes to its fingerprint (nothing edited it);
- coverage: the version has assignments, each names one of its clusters or a reserved id, and at
  least MIN_COVERAGE of them are in a real cluster;
- quality_gate (semantic, hybrid): the gate stored at fit time passed. Experimental versions are
  never `validated` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from verdict.intent import validate_intent_key
from verdict.tenancy import TenantId
from verdict_daemon.clustering import events, versions
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.store.clusters import ClusterRepository, Coverage, RegistryCluster
from verdict_daemon.store.state import StateStore

MIN_COVERAGE = 0.5  # below this, most traffic would sit in `unassigned`: not a usable registry


@dataclass(frozen=True)
class Check:
    check: str
    passed: bool
    detail: str

    def to_dict(self) -> dict:
        return {"check": self.check, "passed": self.passed, "detail": self.detail}


def _structure(clusters: list[RegistryCluster], version: versions.Version) -> Check:
    stored = {c.cluster_id: (c.kind, c.intent_key) for c in clusters}
    defined = version.definition.get("clusters", [])
    ids = [c.get("cluster_id") for c in defined]
    if not ids or len(set(ids)) != len(ids) or set(ids) != set(stored):
        return Check("structure", False, "the stored clusters do not match the definition (missing, extra or duplicated ids)")
    for cluster in defined:
        cid = cluster["cluster_id"]
        if cid.startswith(versions.SEMANTIC_PREFIX):
            continue
        try:
            validate_intent_key(cluster.get("intent_key"))
        except ValueError:
            return Check("structure", False, f"cluster {cid[:80]!r} does not name a valid intent key")
        if cluster["intent_key"] != cid or stored[cid] != ("intent_key", cid):
            return Check("structure", False, f"cluster {cid!r}: id, kind and intent key disagree")
    semantic_ids = [cid for cid in ids if cid.startswith(versions.SEMANTIC_PREFIX)]
    if version.strategy == "explicit" and semantic_ids:
        return Check("structure", False, "an explicit version holds semantic clusters")
    if semantic_ids or version.strategy == "semantic":
        from verdict_daemon.clustering.semantic import clusters_from_definition

        try:
            keys = {versions.SEMANTIC_PREFIX + c.key for c in clusters_from_definition(version.definition["semantic"])}
        except (ValueError, TypeError, KeyError) as exc:
            return Check("structure", False, f"semantic definition: {str(exc)[:200]}")
        if keys != set(semantic_ids):
            return Check("structure", False, "semantic cluster ids do not match the semantic definition")
    return Check("structure", True, f"{len(ids)} clusters, ids unique and well formed")


def _coverage(coverage: Coverage) -> Check:
    total, foreign, covered = coverage.total, coverage.foreign, coverage.covered
    if not total:
        return Check("coverage", False, "the version has no assignments yet (run assign first)")
    if foreign:
        return Check("coverage", False, f"{foreign} assignment(s) name a cluster the version does not define")
    share = covered / total
    return Check("coverage", share >= MIN_COVERAGE,
                 f"{covered}/{total} assigned traces ({share:.1%}) are in a cluster (minimum {MIN_COVERAGE:.0%})")


def _gate(version: versions.Version) -> Check:
    gate = version.gate or {}
    passed = bool(gate.get("passed"))
    failed = ", ".join(gate.get("failed_checks", [])) or "not run"
    return Check("quality_gate", passed, "the preregistered quality gate passed at fit time" if passed
                 else f"the preregistered quality gate failed ({failed}): experimental clustering stays unvalidated")


def validate(store: StateStore, tenant: TenantId, actor: str, version_id: str) -> dict:
    with ClusterRepository(store).transaction() as tx:
        version = tx.version(tenant, version_id)
        fingerprint_ok = versions.fingerprint(version.definition) == version.definition_fingerprint
        checks = [_structure(tx.clusters(version), version),
                  Check("fingerprint", fingerprint_ok, "definition matches its fingerprint" if fingerprint_ok
                        else "the stored definition no longer matches its fingerprint"),
                  _coverage(tx.coverage(version))]
        if version.experimental:
            checks.append(_gate(version))
        passed = all(c.passed for c in checks)
        status = "validated" if passed else "validation_failed"
        report = {"status": status, "checks": [c.to_dict() for c in checks]}
        tx.set_validation(version, status, report)
        events.record(tx, tenant, version_id, status, actor, detail={"failed": [c.check for c in checks if not c.passed]})
    if not passed:
        failed = [c for c in checks if not c.passed]
        raise ClusterError("validation_failed", f"version {version_id} failed validation: "
                           + "; ".join(f"{c.check}: {c.detail}" for c in failed), {"checks": report["checks"]})
    return {"version_id": version_id, **report}
