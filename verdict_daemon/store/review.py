"""The review aggregate in state.duckdb: queued items (`review_items`) and reviewer labels (`review_labels`),
read with the judgments and sampled content they refer to.

Every method is one short transaction (`StateStore.transaction`) filtered on the tenant. Read methods
never create state.duckdb: no file reads as an empty queue.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.store.state import StateStore, insert_rows

_ITEM_COLUMNS = ("tenant_id", "item_id", "trace_id", "fingerprint", "reasons", "flagged", "queued_at")
_LABEL_COLUMNS = ("tenant_id", "item_id", "dimension", "revision", "label", "critique", "reviewer", "labelled_at")

_ITEMS = """
SELECT i.item_id, i.trace_id, i.fingerprint, e.name AS evaluator, i.reasons, i.flagged, i.queued_at,
       s.started_at, s.intent_key,
       (SELECT count(DISTINCT dimension) FROM review_labels r
        WHERE r.tenant_id = i.tenant_id AND r.item_id = i.item_id) AS labelled_dimensions
FROM review_items i
JOIN sampled_traces s ON s.tenant_id = i.tenant_id AND s.trace_id = i.trace_id
LEFT JOIN evaluators e ON e.tenant_id = i.tenant_id AND e.fingerprint = i.fingerprint
WHERE i.tenant_id = $t
"""

# Latest attempt per (trace, evaluator) that is OK, recent and not queued yet, with its flagged
# dimensions (classified here, so a large first run moves one row per judgment, not per verdict).
_CANDIDATES = """
WITH latest AS (
    SELECT attempt_id, trace_id, fingerprint, status, judged_at FROM judgment_attempts WHERE tenant_id = $t
    QUALIFY row_number() OVER (PARTITION BY trace_id, fingerprint ORDER BY attempt_no DESC) = 1),
candidates AS (
    SELECT l.* FROM latest l JOIN sampled_traces s ON s.tenant_id = $t AND s.trace_id = l.trace_id
    WHERE l.status = 'OK' AND l.judged_at >= $since
      AND l.attempt_id NOT IN (SELECT item_id FROM review_items WHERE tenant_id = $t)),
classified AS (
    SELECT c.attempt_id, c.trace_id, c.fingerprint, c.judged_at, v.dimension,
           CASE WHEN v.value = 'UNCLEAR' THEN 'unclear'
                WHEN v.value = 'INCONSISTENT' THEN 'inconsistent'
                WHEN len(json_keys(v.votes)) > 1 THEN 'ensemble_disagreement' END AS why
    FROM candidates c
    JOIN dimension_verdicts v ON v.tenant_id = $t AND v.attempt_id = c.attempt_id)
SELECT attempt_id, trace_id, fingerprint, max(judged_at),
       coalesce(list([dimension, why] ORDER BY dimension) FILTER (WHERE why IS NOT NULL), [])
FROM classified GROUP BY attempt_id, trace_id, fingerprint ORDER BY attempt_id
"""

# Latest label per (item, dimension), with the item's judge verdict.
_LATEST = """
SELECT l.item_id, i.trace_id, i.fingerprint, e.name, l.dimension, l.label, l.critique, v.value, v.reason,
       l.labelled_at, l.revision
FROM review_labels l
JOIN review_items i ON i.tenant_id = l.tenant_id AND i.item_id = l.item_id
LEFT JOIN dimension_verdicts v ON v.tenant_id = l.tenant_id AND v.attempt_id = l.item_id AND v.dimension = l.dimension
LEFT JOIN evaluators e ON e.tenant_id = l.tenant_id AND e.fingerprint = i.fingerprint
WHERE l.tenant_id = $t
QUALIFY row_number() OVER (PARTITION BY l.item_id, l.dimension ORDER BY l.revision DESC) = 1
ORDER BY l.dimension, l.item_id
"""

# Each reviewer's latest label per (item, dimension): the ratings human-human agreement is computed on.
_BY_REVIEWER = """
SELECT l.item_id, i.fingerprint, l.dimension, l.reviewer, l.label
FROM review_labels l
JOIN review_items i ON i.tenant_id = l.tenant_id AND i.item_id = l.item_id
WHERE l.tenant_id = $t
QUALIFY row_number() OVER (PARTITION BY l.item_id, l.dimension, l.reviewer ORDER BY l.revision DESC) = 1
"""

# The latest attempt of every evaluator on every trace, one row per dimension verdict (user-signal correlation).
_JUDGMENTS = """
WITH latest AS (
    SELECT attempt_id, trace_id, fingerprint, status FROM judgment_attempts WHERE tenant_id = $t
    QUALIFY row_number() OVER (PARTITION BY trace_id, fingerprint ORDER BY attempt_no DESC) = 1)
SELECT l.trace_id, l.fingerprint, e.name, l.status, v.dimension, v.value
FROM latest l
LEFT JOIN dimension_verdicts v ON v.tenant_id = $t AND v.attempt_id = l.attempt_id
LEFT JOIN evaluators e ON e.tenant_id = $t AND e.fingerprint = l.fingerprint
ORDER BY l.trace_id, v.dimension
"""


@dataclass(frozen=True)
class ItemSummary:
    item_id: str  # the judgment attempt id
    trace_id: str
    evaluator: str | None
    fingerprint: str
    reasons: tuple[str, ...]
    flagged: dict[str, str]  # dimension -> reason, for the dimensions that made it hard
    queued_at: str
    started_at: str
    intent_key: str | None
    labelled_dimensions: int


@dataclass(frozen=True)
class LabelRecord:
    dimension: str
    revision: int  # 1 for the first label of this dimension; a relabel is the next number
    label: str
    critique: str
    reviewer: str
    labelled_at: str


@dataclass(frozen=True)
class DimensionJudgment:
    dimension: str
    verdict: str | None
    score: float | None
    rationale: str | None


@dataclass(frozen=True)
class Content:
    """A sampled trace's conversation as stored (redacted by the SDK and the collector, not again here)."""

    query: str | None
    response: str | None
    context: str | None
    history: str | None = None  # sampled_traces.history (JSON): conversation so far, trajectory, or transcript


@dataclass(frozen=True)
class StoredItem:
    item: ItemSummary
    content: Content
    judgments: tuple[DimensionJudgment, ...]
    labels: tuple[LabelRecord, ...]  # every record, oldest first
    definition: str | None = None  # the item's evaluator as registered (JSON): the bounds of what its judge was shown


@dataclass(frozen=True)
class QueueCounts:
    items: int
    pending: int  # items without any label yet
    by_reason: dict[str, int]  # only reasons some item carries
    label_records: int
    reviewers: int


@dataclass(frozen=True)
class NewItem:
    item_id: str
    trace_id: str
    fingerprint: str
    reasons: tuple[str, ...]
    flagged: dict[str, str]
    queued_at: datetime


@dataclass(frozen=True)
class RoutingCandidate:
    attempt_id: str
    trace_id: str
    fingerprint: str
    judged_at: datetime
    flagged: dict[str, str]  # dimension -> reason (unclear, inconsistent, ensemble_disagreement)


@dataclass(frozen=True)
class LatestLabel:
    """The label in force on one (item, dimension), with the judge's verdict on it."""

    item_id: str
    trace_id: str
    fingerprint: str
    evaluator: str | None
    dimension: str
    label: str
    critique: str
    verdict: str | None
    rationale: str | None
    labelled_at: datetime
    revision: int


@dataclass(frozen=True)
class ReviewerLabel:
    item_id: str
    fingerprint: str
    dimension: str
    reviewer: str
    label: str


@dataclass(frozen=True)
class LatestJudgment:
    """One dimension verdict of the latest attempt of an evaluator on a trace (dimension None: no verdicts)."""

    trace_id: str
    fingerprint: str
    evaluator: str | None
    status: str
    dimension: str | None
    verdict: str | None


def _summary(row: tuple) -> ItemSummary:
    item_id, trace, fingerprint, evaluator, reasons, flagged, queued, started, intent, labelled = row
    return ItemSummary(item_id, trace, evaluator, fingerprint, tuple(json.loads(reasons)), json.loads(flagged),
                       queued.isoformat(), started.isoformat(), intent, labelled)


def item_not_found(tenant: str, item_id: str) -> DaemonError:
    return DaemonError("item_not_found", f"no review item {item_id!r} for tenant {tenant!r}")


class ReviewRepository:
    def __init__(self, store: StateStore) -> None:
        self.store = store

    def exists(self) -> bool:
        """Read paths never create state.duckdb: no file means an empty queue."""
        return self.store.path.exists()

    # --- routing --------------------------------------------------------------------------------
    def routing_candidates(self, tenant: TenantId, since: datetime) -> list[RoutingCandidate]:
        with self.store.transaction() as con:
            rows = con.execute(_CANDIDATES, {"t": tenant, "since": since}).fetchall()
        return [RoutingCandidate(a, t, f, at, dict(pairs)) for a, t, f, at, pairs in rows]

    def queue(self, tenant: TenantId, items: Sequence[NewItem]) -> None:
        if not items:
            return
        with self.store.transaction() as con:
            insert_rows(con, "review_items", _ITEM_COLUMNS, [
                (tenant, i.item_id, i.trace_id, i.fingerprint, json.dumps(list(i.reasons)), json.dumps(i.flagged),
                 i.queued_at) for i in items])

    # --- the queue ------------------------------------------------------------------------------
    def items_page(self, tenant: TenantId, *, pending: bool | None, reason: str | None, limit: int,
                   offset: int, traces: tuple[str, ...] | None = None) -> tuple[int, list[ItemSummary]]:
        """(items matching, one page of them newest first); `pending` None: labelled or not; `traces`: only
        items of these traces."""
        where = {None: "", True: "labelled_dimensions = 0", False: "labelled_dimensions > 0"}[pending]
        if reason is not None:
            where = " AND ".join(filter(None, [where, "list_contains(reasons::VARCHAR[], $reason)"]))
        if traces is not None:
            where = " AND ".join(filter(None, [where, "list_contains($traces::VARCHAR[], trace_id)"]))
        query = f"SELECT * FROM ({_ITEMS}) {'WHERE ' + where if where else ''}"
        params = {"t": tenant, **({"reason": reason} if reason else {}),
                  **({"traces": list(traces)} if traces is not None else {})}
        with self.store.transaction() as con:
            total = con.execute(f"SELECT count(*) FROM ({query})", params).fetchone()[0]
            rows = con.execute(f"{query} ORDER BY queued_at DESC, item_id LIMIT {int(limit)} OFFSET {int(offset)}",
                               params).fetchall()
        return total, [_summary(r) for r in rows]

    def counts(self, tenant: TenantId) -> QueueCounts:
        with self.store.transaction() as con:
            items, pending = con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE labelled_dimensions = 0) FROM ({_ITEMS})",
                {"t": tenant}).fetchone()
            reasons = con.execute("SELECT r, count(*) FROM (SELECT unnest(reasons::VARCHAR[]) AS r FROM review_items "
                                  "WHERE tenant_id = $t) GROUP BY r", {"t": tenant}).fetchall()
            records, reviewers = con.execute("SELECT count(*), count(DISTINCT reviewer) FROM review_labels "
                                             "WHERE tenant_id = $t", {"t": tenant}).fetchone()
        return QueueCounts(items, pending, dict(reasons), records, reviewers)

    def item(self, tenant: TenantId, item_id: str) -> StoredItem | None:
        """The item with its conversation, the judge's verdicts and every label record; None if the
        tenant has no such item."""
        with self.store.transaction() as con:
            row = con.execute(f"SELECT * FROM ({_ITEMS}) WHERE item_id = $i", {"t": tenant, "i": item_id}).fetchone()
            if row is None:
                return None
            item = _summary(row)
            content = Content(*con.execute(
                "SELECT query, response, context, history FROM sampled_traces WHERE tenant_id = $t AND trace_id = $tr",
                {"t": tenant, "tr": item.trace_id}).fetchone())
            judged = con.execute("SELECT dimension, value, score, reason FROM dimension_verdicts "
                                 "WHERE tenant_id = $t AND attempt_id = $i ORDER BY dimension",
                                 {"t": tenant, "i": item_id}).fetchall()
            labels = con.execute(
                "SELECT dimension, revision, label, critique, reviewer, labelled_at FROM review_labels "
                "WHERE tenant_id = $t AND item_id = $i ORDER BY labelled_at, dimension, revision",
                {"t": tenant, "i": item_id}).fetchall()
            definition = _definitions(con, tenant, [item.fingerprint]).get(item.fingerprint)
        return StoredItem(item, content, tuple(DimensionJudgment(*j) for j in judged),
                          tuple(LabelRecord(d, r, lab, c, who, at.isoformat()) for d, r, lab, c, who, at in labels),
                          definition)

    def append_labels(self, tenant: TenantId, item_id: str, labels: Mapping[str, str], *, critique: str,
                      reviewer: str, at: datetime) -> list[LabelRecord]:
        """One new record per labelled dimension, each the dimension's next revision, all in one
        transaction: `item_not_found` for an item the tenant does not have, `invalid_config` for a
        dimension the judge gave no verdict on."""
        with self.store.transaction() as con:
            if con.execute("SELECT 1 FROM review_items WHERE tenant_id = $t AND item_id = $i",
                           {"t": tenant, "i": item_id}).fetchone() is None:
                raise item_not_found(tenant, item_id)
            judged = {d for (d,) in con.execute(
                "SELECT dimension FROM dimension_verdicts WHERE tenant_id = $t AND attempt_id = $i AND value IS NOT NULL",
                {"t": tenant, "i": item_id}).fetchall()}
            unknown = sorted(set(labels) - judged)
            if unknown:
                raise DaemonError("invalid_config", f"dimension(s) {unknown} were not judged on item {item_id!r} "
                                  f"(judged: {', '.join(sorted(judged))})")
            revisions = dict(con.execute("SELECT dimension, max(revision) FROM review_labels WHERE tenant_id = $t AND "
                                         "item_id = $i GROUP BY dimension", {"t": tenant, "i": item_id}).fetchall())
            records = [LabelRecord(d, revisions.get(d, 0) + 1, labels[d], critique, reviewer, at.isoformat())
                       for d in sorted(labels)]
            insert_rows(con, "review_labels", _LABEL_COLUMNS,
                        [(tenant, item_id, r.dimension, r.revision, r.label, r.critique, r.reviewer, at)
                         for r in records])
        return records

    # --- what labels feed -----------------------------------------------------------------------
    def latest_labels(self, tenant: TenantId) -> list[LatestLabel]:
        if not self.exists():
            return []
        with self.store.transaction() as con:
            return [LatestLabel(*row) for row in con.execute(_LATEST, {"t": tenant}).fetchall()]

    def reviewer_labels(self, tenant: TenantId) -> list[ReviewerLabel]:
        with self.store.transaction() as con:
            return [ReviewerLabel(*row) for row in con.execute(_BY_REVIEWER, {"t": tenant}).fetchall()]

    def contents(self, tenant: TenantId, trace_ids: Sequence[str],
                 fingerprints: Sequence[str] = ()) -> tuple[dict[str, Content], dict[str, str]]:
        """(trace -> its sampled content, fingerprint -> its evaluator's registered definition JSON)."""
        with self.store.transaction() as con:
            rows = con.execute("SELECT trace_id, query, response, context, history FROM sampled_traces "
                               "WHERE tenant_id = $t AND list_contains($traces, trace_id)",
                               {"t": tenant, "traces": list(trace_ids)}).fetchall()
            definitions = _definitions(con, tenant, fingerprints)
        return {t: Content(q, r, c, h) for t, q, r, c, h in rows}, definitions

    def latest_judgments(self, tenant: TenantId) -> list[LatestJudgment]:
        if not self.exists():
            return []
        with self.store.transaction() as con:
            return [LatestJudgment(*row) for row in con.execute(_JUDGMENTS, {"t": tenant}).fetchall()]


def _definitions(con, tenant: TenantId, fingerprints: Sequence[str]) -> dict[str, str]:
    return dict(con.execute("SELECT fingerprint, definition FROM evaluators WHERE tenant_id = $t "
                            "AND list_contains($f, fingerprint)", {"t": tenant, "f": list(fingerprints)}).fetchall())


def trace_items_in(snapshot, trace_id: str) -> tuple[str, ...]:
    """The review items of one trace in a tenant's snapshot (store/views.py's `review_items`), newest first."""
    return tuple(r[0] for r in snapshot.execute("SELECT item_id FROM review_items WHERE trace_id = ? "
                                                "ORDER BY queued_at DESC, item_id", [trace_id]).fetchall())
