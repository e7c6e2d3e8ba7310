"""The cluster aggregate in state.duckdb: the analysis index, registry versions with their clusters and
assignments, the active-version pointer, display names, the registry's events, and the
`cluster_assignments` drift runs read.

`ClusterRepository.transaction()` yields a `RegistryTransaction`: typed reads and writes on one short
transaction, so a lifecycle step that must be atomic (a pointer compare-and-swap with its event, a
version with its clusters) stays one transaction while its SQL stays here. Everything is filtered on
the tenant.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from verdict.tenancy import TenantId
from verdict_daemon.clustering.errors import ClusterError
from verdict_daemon.clustering.versions import RESERVED_CLUSTERS, UNASSIGNED, Version, canonical
from verdict_daemon.store.samples import CONVERSATION, judged_trace_sql
from verdict_daemon.store.state import StateStore, insert_rows

_VERSION_COLUMNS = ("tenant_id", "version_id", "strategy", "experimental", "status", "cutoff", "target_workload",
                    "params", "definition", "definition_fingerprint", "preview", "gate", "validation", "created_by",
                    "created_at")
_INDEX_COLUMNS = ("tenant_id", "trace_id", "span_id", "started_at", "workload", "intent_key", "key_status",
                  "key_reason", "first_user_message", "content_hash", "indexed_at")
_DRIFT_COLUMNS = ("tenant_id", "trace_id", "cluster", "method", "reason", "assigned_at")
EXPLICIT_KIND = "intent_key"
REGISTRY_METHOD_PREFIX = "registry:"  # cluster_assignments.method of rows a registry version gave
MISSING_INTENT_KEY = "missing_intent_key"

# The lake trace whose cluster a sampled row takes: a turn row's own trace, a conversation unit's first turn's.
# A conversation unit whose first turn has no graded call (span_id '') has none: it is no trace the index can hold.
_JUDGED = judged_trace_sql("s")
_CLUSTERED_SAMPLES = f"SELECT {_JUDGED} FROM sampled_traces s WHERE s.tenant_id = $t"
_NO_GRADED_FIRST_TURN = f"s.unit = '{CONVERSATION}' AND s.span_id = ''"

# The candidate rows of a fit: the tenant's indexed traces before the cutoff (of the target workload).
_CANDIDATES = "a.tenant_id = $t AND a.started_at < $cutoff AND ($workload IS NULL OR a.workload = $workload)"

# Assigns the rows of a scope (a condition on analysis_index `a`) that the version has not assigned
# yet. Rows without a known explicit key go to `unassigned` with their reason, or, with `$fallback`
# (hybrid), are left to the semantic step.
_ASSIGN_EXPLICIT = f"""
    INSERT INTO registry_assignments
    SELECT a.tenant_id, $v, a.trace_id, a.started_at, coalesce(c.cluster_id, '{UNASSIGNED}'), 'explicit',
           CASE WHEN c.cluster_id IS NOT NULL THEN NULL
                WHEN a.key_status = 'missing' THEN '{MISSING_INTENT_KEY}'
                WHEN a.key_status = 'invalid' THEN 'invalid_intent_key'
                ELSE 'unknown_intent_key' END,
           $now
    FROM analysis_index a
    LEFT JOIN registry_clusters c
      ON c.tenant_id = a.tenant_id AND c.version_id = $v AND c.kind = '{EXPLICIT_KIND}' AND c.intent_key = a.intent_key
    ANTI JOIN (SELECT trace_id FROM registry_assignments WHERE tenant_id = $t AND version_id = $v) r
      ON r.trace_id = a.trace_id
    WHERE a.tenant_id = $t AND ($workload IS NULL OR a.workload = $workload) AND ({{scope}})
      AND NOT ($fallback AND a.key_status <> 'valid')"""

_EVENTS = ("SELECT seq, version_id, action, actor, generation, detail, recorded_at FROM registry_events "
           "WHERE tenant_id = ?")


@dataclass(frozen=True)
class Scope:
    """Which indexed traces an assignment covers: those started before `before`, the tenant's sampled traces (the
    daemon's cycle; a conversation unit's: its first turn's trace), or these `traces` (an imported evaluation
    series' traces, clustered as a judgment of the same trace is)."""

    before: datetime | None = None
    sampled_only: bool = False
    traces: tuple[str, ...] = ()

    def sql(self) -> tuple[str, dict[str, Any]]:
        if self.sampled_only:
            return f"a.trace_id IN ({_CLUSTERED_SAMPLES})", {}
        if self.traces:
            return "a.trace_id IN (SELECT unnest($traces))", {"traces": list(self.traces)}  # a semi join
        if self.before is None:
            raise ValueError("a scope needs a cutoff or sampled_only")
        return "a.started_at < $cutoff", {"cutoff": self.before}


@dataclass(frozen=True)
class Pointer:
    version_id: str | None
    generation: int

    def to_dict(self) -> dict:
        return {"active_version": self.version_id, "generation": self.generation}


@dataclass(frozen=True)
class RegistryCluster:
    cluster_id: str
    kind: str  # intent_key or semantic
    intent_key: str | None
    size: int  # traces of the fit


@dataclass(frozen=True)
class ClusterView:
    """A version's cluster as inspect shows it."""

    cluster: RegistryCluster
    display_name: str | None
    assigned: int


@dataclass(frozen=True)
class Event:
    seq: int
    version_id: str | None
    action: str
    actor: str
    generation: int | None
    detail: dict
    recorded_at: datetime


@dataclass(frozen=True)
class Coverage:
    total: int  # the version's assignments
    foreign: int  # naming a cluster the version does not define (nor a reserved id)
    covered: int  # in one of its clusters


@dataclass(frozen=True)
class KeyCounts:
    """Fit candidates by intent key: the valid keys with their traces, traces per key status, and the
    most frequent invalid-key reasons."""

    keys: tuple[tuple[str, int], ...]
    statuses: dict[str, int]
    reasons: tuple[tuple[str | None, int], ...]


@dataclass(frozen=True)
class AssignmentCount:
    cluster_id: str
    reason: str | None
    traces: int


@dataclass(frozen=True)
class IndexRow:
    trace_id: str
    span_id: str
    started_at: datetime
    workload: str | None
    intent_key: str | None
    key_status: str
    key_reason: str | None
    first_user_message: str | None
    content_hash: str | None


@dataclass(frozen=True)
class IndexedText:
    trace_id: str
    started_at: datetime
    text: str | None  # the redacted first user message


@dataclass(frozen=True)
class SemanticRecord:
    trace_id: str
    cluster_id: str
    reason: str | None


@dataclass(frozen=True)
class Assignment:
    """A sampled trace's cluster for drift runs (`cluster_assignments`)."""

    trace_id: str
    cluster: str
    method: str
    reason: str | None = None


def _json(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def _version(row: tuple) -> Version:
    values = dict(zip(_VERSION_COLUMNS, row, strict=True))
    for name in ("params", "definition", "preview", "gate", "validation"):
        values[name] = _json(values[name])
    return Version(**values)


class RegistryTransaction:
    """Typed reads and writes inside one open transaction (see ClusterRepository.transaction)."""

    def __init__(self, con: Any) -> None:
        self._con = con

    def _count(self, sql: str, params: list | dict) -> int:
        return cast(int, self._con.execute(sql, params).fetchone()[0])  # an aggregate: one row

    # --- versions -------------------------------------------------------------------------------
    def version(self, tenant: TenantId, version_id: str) -> Version:
        """The tenant's version, or `unknown_version` (another tenant's id is unknown too)."""
        found = self._con.execute(f"SELECT {', '.join(_VERSION_COLUMNS)} FROM cluster_versions "
                                  "WHERE tenant_id = ? AND version_id = ?", [tenant, version_id]).fetchone()
        if found is None:
            raise ClusterError("unknown_version", f"tenant {tenant} has no registry version {version_id!r}")
        return _version(found)

    def insert_version(self, version: Version, clusters: Sequence[RegistryCluster]) -> bool:
        """Store a new version and its clusters; False if it existed."""
        if self._con.execute("SELECT 1 FROM cluster_versions WHERE tenant_id = ? AND version_id = ?",
                             [version.tenant_id, version.version_id]).fetchone():
            return False
        row = (version.tenant_id, version.version_id, version.strategy, version.experimental, version.status,
               version.cutoff, version.target_workload, canonical(version.params), canonical(version.definition),
               version.definition_fingerprint, canonical(version.preview),
               None if version.gate is None else canonical(version.gate),
               None if version.validation is None else canonical(version.validation), version.created_by,
               version.created_at)
        self._con.execute(f"INSERT INTO cluster_versions ({', '.join(_VERSION_COLUMNS)}) "
                          f"VALUES ({', '.join('?' * len(_VERSION_COLUMNS))})", list(row))
        insert_rows(self._con, "registry_clusters", ("tenant_id", "version_id", "cluster_id", "kind", "intent_key", "size"),
                    [(version.tenant_id, version.version_id, c.cluster_id, c.kind, c.intent_key, c.size)
                     for c in clusters])
        return True

    def set_validation(self, version: Version, status: str, report: dict) -> None:
        self._con.execute("UPDATE cluster_versions SET status = ?, validation = ? WHERE tenant_id = ? AND version_id = ?",
                          [status, canonical(report), version.tenant_id, version.version_id])

    def clusters(self, version: Version) -> list[RegistryCluster]:
        return [RegistryCluster(*row) for row in self._con.execute(
            "SELECT cluster_id, kind, intent_key, size FROM registry_clusters WHERE tenant_id = ? AND version_id = ?",
            [version.tenant_id, version.version_id]).fetchall()]

    def coverage(self, version: Version) -> Coverage:
        return Coverage(*self._con.execute("""
            SELECT count(*), count(*) FILTER (WHERE c.cluster_id IS NULL AND r.cluster_id NOT IN ($unassigned, $outlier)),
                   count(*) FILTER (WHERE c.cluster_id IS NOT NULL)
            FROM registry_assignments r
            LEFT JOIN registry_clusters c USING (tenant_id, version_id, cluster_id)
            WHERE r.tenant_id = $t AND r.version_id = $v""",
                                           {"t": version.tenant_id, "v": version.version_id,
                                            "unassigned": RESERVED_CLUSTERS[0],
                                            "outlier": RESERVED_CLUSTERS[1]}).fetchone())

    # --- the pointer and the audit trail ------------------------------------------------------------
    def pointer(self, tenant: TenantId) -> Pointer:
        row = self._con.execute("SELECT version_id, generation FROM registry_pointer WHERE tenant_id = ?",
                                [tenant]).fetchone()
        return Pointer(*row) if row else Pointer(None, 0)

    def set_pointer(self, tenant: TenantId, version_id: str, generation: int, actor: str, at: datetime) -> None:
        self._con.execute("INSERT OR REPLACE INTO registry_pointer VALUES (?, ?, ?, ?, ?)",
                          [tenant, version_id, generation, actor, at])

    def has_event(self, tenant: TenantId, version_id: str, actions: Sequence[str]) -> bool:
        return self._count(f"SELECT count(*) FROM registry_events WHERE tenant_id = ? AND version_id = ? "
                           f"AND action IN ({', '.join('?' * len(actions))})", [tenant, version_id, *actions]) > 0

    def record_event(self, tenant: TenantId, version_id: str | None, action: str, actor: str,
                     generation: int | None, detail: dict, at: datetime) -> int:
        seq = self._count("SELECT coalesce(max(seq), 0) + 1 FROM registry_events WHERE tenant_id = ?", [tenant])
        self._con.execute("INSERT INTO registry_events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                          [tenant, seq, version_id, action, actor, generation, canonical(detail), at])
        return seq

    # --- display names --------------------------------------------------------------------------
    def knows_cluster(self, tenant: TenantId, cluster_id: str) -> bool:
        return self._count("SELECT count(*) FROM registry_clusters WHERE tenant_id = ? AND cluster_id = ?",
                           [tenant, cluster_id]) > 0

    def display_name(self, tenant: TenantId, cluster_id: str) -> str | None:
        row = self._con.execute("SELECT display_name FROM cluster_display_names WHERE tenant_id = ? AND cluster_id = ?",
                                [tenant, cluster_id]).fetchone()
        return row[0] if row else None

    def set_display_name(self, tenant: TenantId, cluster_id: str, name: str, actor: str, at: datetime) -> None:
        self._con.execute("INSERT OR REPLACE INTO cluster_display_names VALUES (?, ?, ?, ?, ?)",
                          [tenant, cluster_id, name, actor, at])

    # --- inspect pages: (total, rows) -------------------------------------------------------------
    def _page(self, sql: str, params: list, limit: int, offset: int) -> tuple[int, list[tuple]]:
        total = self._count(f"SELECT count(*) FROM ({sql})", params)
        return total, self._con.execute(f"{sql} LIMIT ? OFFSET ?", [*params, limit, offset]).fetchall()

    def versions_page(self, tenant: TenantId, limit: int, offset: int) -> tuple[int, list[Version]]:
        total, rows = self._page(f"SELECT {', '.join(_VERSION_COLUMNS)} FROM cluster_versions WHERE tenant_id = ? "
                                 "ORDER BY created_at DESC, version_id", [tenant], limit, offset)
        return total, [_version(row) for row in rows]

    def events_page(self, tenant: TenantId, version_id: str | None, limit: int, offset: int) -> tuple[int, list[Event]]:
        sql, params = (_EVENTS, [tenant]) if version_id is None else (_EVENTS + " AND version_id = ?", [tenant, version_id])
        total, rows = self._page(sql + " ORDER BY seq DESC", params, limit, offset)
        return total, [Event(seq, v, action, actor, generation, json.loads(detail), at)
                       for seq, v, action, actor, generation, detail, at in rows]

    def clusters_page(self, version: Version, limit: int, offset: int) -> tuple[int, list[ClusterView]]:
        total, rows = self._page("""
            SELECT c.cluster_id, c.kind, c.intent_key, c.size, d.display_name,
                   (SELECT count(*) FROM registry_assignments r WHERE r.tenant_id = c.tenant_id
                      AND r.version_id = c.version_id AND r.cluster_id = c.cluster_id) AS assigned
            FROM registry_clusters c
            LEFT JOIN cluster_display_names d ON d.tenant_id = c.tenant_id AND d.cluster_id = c.cluster_id
            WHERE c.tenant_id = ? AND c.version_id = ? ORDER BY c.size DESC, c.cluster_id""",
                                 [version.tenant_id, version.version_id], limit, offset)
        return total, [ClusterView(RegistryCluster(cid, kind, key, size), name, assigned)
                       for cid, kind, key, size, name, assigned in rows]

    def assignment_reasons(self, version: Version) -> dict[str, int]:
        """The version's assignments by reason (`clustered` for rows in a cluster)."""
        return dict(self._con.execute(
            "SELECT coalesce(reason, 'clustered'), count(*) FROM registry_assignments WHERE tenant_id = ? "
            "AND version_id = ? GROUP BY 1 ORDER BY 1", [version.tenant_id, version.version_id]).fetchall())

    # --- fitting --------------------------------------------------------------------------------
    def key_counts(self, tenant: TenantId, cutoff: datetime, workload: str | None, top: int) -> KeyCounts:
        args = {"t": tenant, "cutoff": cutoff, "workload": workload}
        keys = self._con.execute(f"SELECT a.intent_key, count(*) FROM analysis_index a WHERE {_CANDIDATES} "
                                 "AND a.key_status = 'valid' GROUP BY 1 ORDER BY 1", args).fetchall()
        statuses = dict(self._con.execute(
            f"SELECT a.key_status, count(*) FROM analysis_index a WHERE {_CANDIDATES} GROUP BY 1", args).fetchall())
        reasons = self._con.execute(f"SELECT a.key_reason, count(*) AS n FROM analysis_index a WHERE {_CANDIDATES} "
                                    "AND a.key_status = 'invalid' GROUP BY 1 ORDER BY n DESC, 1 LIMIT $top",
                                    {**args, "top": top}).fetchall()
        return KeyCounts(tuple(keys), statuses, tuple(reasons))

    def candidates(self, tenant: TenantId, cutoff: datetime, workload: str | None) -> int:
        return self._count(f"SELECT count(*) FROM analysis_index a WHERE {_CANDIDATES}",
                           {"t": tenant, "cutoff": cutoff, "workload": workload})

    def candidate_texts(self, tenant: TenantId, cutoff: datetime, workload: str | None,
                        keyless_only: bool) -> list[tuple[str, str]]:
        """(content hash, first user message) of the candidates with text, oldest first; `keyless_only`:
        only those without a valid intent key (hybrid)."""
        return cast(list[tuple[str, str]], self._con.execute(
            f"SELECT a.content_hash, a.first_user_message FROM analysis_index a "
            f"WHERE {_CANDIDATES} AND a.first_user_message IS NOT NULL "
            f"{'AND a.key_status <> $valid' if keyless_only else ''} ORDER BY a.started_at, a.trace_id",
            {"t": tenant, "cutoff": cutoff, "workload": workload, **({"valid": "valid"} if keyless_only else {})}
        ).fetchall())

    # --- assigning ------------------------------------------------------------------------------
    def assign_explicit(self, version: Version, scope: Scope, now: datetime) -> int:
        """Explicit rows for the scope's traces the version lacks; returns rows added."""
        condition, args = scope.sql()
        return self._count(_ASSIGN_EXPLICIT.format(scope=condition), {
            **args, "t": version.tenant_id, "v": version.version_id, "workload": version.target_workload,
            "fallback": version.strategy == "hybrid", "now": now})

    def unassigned_texts(self, version: Version, scope: Scope) -> list[IndexedText]:
        condition, args = scope.sql()
        return [IndexedText(*row) for row in self._con.execute(f"""
            SELECT a.trace_id, a.started_at, a.first_user_message FROM analysis_index a
            ANTI JOIN (SELECT trace_id FROM registry_assignments WHERE tenant_id = $t AND version_id = $v) r
              ON r.trace_id = a.trace_id
            WHERE a.tenant_id = $t AND ($workload IS NULL OR a.workload = $workload) AND ({condition})
            ORDER BY a.trace_id""", {**args, "t": version.tenant_id, "v": version.version_id,
                                     "workload": version.target_workload}).fetchall()]

    def insert_semantic(self, version: Version, records: Sequence[SemanticRecord], now: datetime) -> int:
        """Semantic rows the version still lacks (a concurrent assign may have added some); returns rows added."""
        import pyarrow as pa

        batch = pa.table({"trace_id": pa.array([r.trace_id for r in records], pa.string()),
                          "cluster_id": pa.array([r.cluster_id for r in records], pa.string()),
                          "reason": pa.array([r.reason for r in records], pa.string())})
        self._con.register("_semantic", batch)
        try:
            return self._count("""
                INSERT INTO registry_assignments
                SELECT $t, $v, s.trace_id, a.started_at, s.cluster_id, 'semantic', s.reason, $now FROM _semantic s
                JOIN analysis_index a ON a.tenant_id = $t AND a.trace_id = s.trace_id
                ANTI JOIN (SELECT trace_id FROM registry_assignments WHERE tenant_id = $t AND version_id = $v) r
                  ON r.trace_id = s.trace_id""", {"t": version.tenant_id, "v": version.version_id, "now": now})
        finally:
            self._con.unregister("_semantic")

    def assignment_counts(self, version: Version, before: datetime) -> list[AssignmentCount]:
        return [AssignmentCount(*row) for row in self._con.execute("""
            SELECT cluster_id, reason, count(*) FROM registry_assignments
            WHERE tenant_id = $t AND version_id = $v AND started_at < $cutoff GROUP BY ALL""",
                                                                    {"t": version.tenant_id, "v": version.version_id,
                                                                     "cutoff": before}).fetchall()]

    # --- the drift view: cluster_assignments -------------------------------------------------------
    def version_clusters(self, tenant: TenantId, version_id: str, traces: Sequence[str]) -> dict[str, str]:
        """trace_id -> the cluster the version assigned it, for those of `traces` it assigned."""
        return dict(self._con.execute(
            "SELECT trace_id, cluster_id FROM registry_assignments WHERE tenant_id = $t AND version_id = $v "
            "AND trace_id IN (SELECT unnest($traces))", {"t": tenant, "v": version_id, "traces": list(traces)}).fetchall())

    def unindexed_sampled(self, tenant: TenantId) -> list[tuple[str, datetime]]:
        """(trace_id, started_at) of the lake traces sampled rows take their cluster from (a conversation unit's
        first turn) that the analysis index lacks."""
        return cast(list[tuple[str, datetime]], self._con.execute(f"""
            SELECT {_JUDGED} AS trace_id, min(s.started_at) FROM sampled_traces s
            WHERE s.tenant_id = $t AND NOT ({_NO_GRADED_FIRST_TURN})
              AND {_JUDGED} NOT IN (SELECT trace_id FROM analysis_index WHERE tenant_id = $t)
            GROUP BY 1 ORDER BY 1""", {"t": tenant}).fetchall())

    def _drift_counts(self, tenant: TenantId) -> tuple[int, int]:
        return cast(tuple[int, int], self._con.execute(  # two counts: one row
            "SELECT count(*), count(*) FILTER (WHERE reason = ?) "
            "FROM cluster_assignments WHERE tenant_id = ?", [MISSING_INTENT_KEY, tenant]).fetchone())

    def switch_drift_to_version(self, tenant: TenantId, version_id: str, method: str, now: datetime) -> tuple[int, int]:
        """Replace rows of any other method by the version's assignments of sampled rows; returns (rows added, of
        those without an intent key). A conversation unit takes its first turn's assignment (`unassigned`, without
        an intent key, when that turn has no graded call: as in the intent-key mode)."""
        self._con.execute("DELETE FROM cluster_assignments WHERE tenant_id = ? AND method <> ?", [tenant, method])
        before = self._drift_counts(tenant)
        self._con.execute(f"""
            INSERT INTO cluster_assignments
            SELECT s.tenant_id, s.trace_id, coalesce(r.cluster_id, $unassigned), $method,
                   CASE WHEN r.trace_id IS NULL THEN $missing ELSE r.reason END, $now
            FROM sampled_traces s
            LEFT JOIN registry_assignments r ON r.tenant_id = $t AND r.version_id = $v AND r.trace_id = {_JUDGED}
            WHERE s.tenant_id = $t AND (r.trace_id IS NOT NULL OR {_NO_GRADED_FIRST_TURN})
              AND s.trace_id NOT IN (SELECT trace_id FROM cluster_assignments WHERE tenant_id = $t)""",
                          {"t": tenant, "v": version_id, "method": method, "now": now, "unassigned": UNASSIGNED,
                           "missing": MISSING_INTENT_KEY})
        added, missing = (after - first for after, first in zip(self._drift_counts(tenant), before, strict=True))
        return added, missing

    def assign_unclustered(self, tenant: TenantId,
                           assign: Callable[[list[tuple[str, str | None]]], list[Assignment]],
                           now: datetime) -> list[Assignment]:
        """Drop the rows a registry version gave, then give every sampled trace without a
        cluster the one `assign` picks from (trace_id, intent_key): drift never reads a mix."""
        self._con.execute("DELETE FROM cluster_assignments WHERE tenant_id = ? AND starts_with(method, ?)",
                          [tenant, REGISTRY_METHOD_PREFIX])
        traces = self._con.execute(
            "SELECT s.trace_id, s.intent_key FROM sampled_traces s ANTI JOIN "
            "(SELECT trace_id FROM cluster_assignments WHERE tenant_id = $t) a USING (trace_id) "
            "WHERE s.tenant_id = $t ORDER BY s.trace_id", {"t": tenant}).fetchall()
        assignments = assign(traces)  # pure computation: fine inside the short transaction
        insert_rows(self._con, "cluster_assignments", _DRIFT_COLUMNS,
                    [(tenant, a.trace_id, a.cluster, a.method, a.reason, now) for a in assignments])
        return assignments


class ClusterRepository:
    def __init__(self, store: StateStore) -> None:
        self.store = store

    @contextlib.contextmanager
    def transaction(self) -> Iterator[RegistryTransaction]:
        with self.store.transaction() as con:
            yield RegistryTransaction(con)

    # --- the analysis index ---------------------------------------------------------------------
    def indexed_trace_ids(self, tenant: TenantId) -> Any:
        """The index's trace ids as an Arrow table (one column, `trace_id`), to join against the lake."""
        with self.store.transaction() as con:
            return con.sql("SELECT trace_id FROM analysis_index WHERE tenant_id = ?", params=[tenant]).to_arrow_table()

    def add_to_index(self, tenant: TenantId, rows: Sequence[IndexRow], now: datetime) -> tuple[int, int]:
        """(rows added, rows the tenant's index holds now); a row a concurrent writer added first is kept."""
        count = "SELECT count(*) FROM analysis_index WHERE tenant_id = ?"
        with self.store.transaction() as con:
            (before,), = con.execute(count, [tenant]).fetchall()  # fetchall: insert_rows needs a finished result
            insert_rows(con, "analysis_index", _INDEX_COLUMNS, [  # OR IGNORE
                (tenant, r.trace_id, r.span_id, r.started_at, r.workload, r.intent_key, r.key_status, r.key_reason,
                 r.first_user_message, r.content_hash, now) for r in rows])
            (total,), = con.execute(count, [tenant]).fetchall()
        return total - before, total
