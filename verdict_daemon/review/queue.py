"""Reading the review queue and recording reviewer labels, always within one tenant.

Labels are immutable: `record_labels` only inserts. A relabel of a dimension is a new record with the
next revision number, and the latest revision is the item's label for that dimension; the history
stays readable (`get_item(...).labels`). Another tenant's item id is simply not found: every query
filters on the tenant, and nothing is written for an item the tenant does not own.

Content shown to reviewers (query, response, context, judge rationales, critiques) is passed through
verdict.redact again on the way out, on top of the SDK's and the collector's redaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from verdict.redact import redact_text
from verdict.tenancy import validate_tenant_id
from verdict_daemon.errors import DaemonError
from verdict_daemon.review.routing import REASONS
from verdict_daemon.store.state import StateStore, insert_rows

LABELS = ("PASS", "FAIL")
STATUSES = ("all", "pending", "labelled")  # pending: no label recorded on any dimension yet
MAX_PAGE = 500
MAX_CRITIQUE = 500
_REVIEWER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
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
class ItemPage:
    total: int  # items matching the filters, all pages
    offset: int
    limit: int
    items: tuple[ItemSummary, ...]


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
class ItemDetail:
    item: ItemSummary
    query: str
    response: str
    context: str
    judgments: tuple[DimensionJudgment, ...]
    labels: tuple[LabelRecord, ...]  # every record, oldest first
    latest: dict[str, LabelRecord]  # dimension -> the label in force


def _has_state(store: StateStore) -> bool:
    """Read paths never create state.duckdb: no file means an empty queue."""
    return store.path.exists()


def _summary(row: tuple) -> ItemSummary:
    item_id, trace, fingerprint, evaluator, reasons, flagged, queued, started, intent, labelled = row
    return ItemSummary(item_id, trace, evaluator, fingerprint, tuple(json.loads(reasons)), json.loads(flagged),
                       queued.isoformat(), started.isoformat(), intent, labelled)


def list_items(store: StateStore, tenant: str, *, status: str = "all", reason: str | None = None,
               limit: int = 50, offset: int = 0) -> ItemPage:
    """One page of the tenant's queue, newest first (ties by item id, so pages are stable)."""
    tenant = validate_tenant_id(tenant)
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    if reason is not None and reason not in REASONS:
        raise ValueError(f"reason must be one of {REASONS}, got {reason!r}")
    if not 1 <= limit <= MAX_PAGE or offset < 0:
        raise ValueError(f"limit must lie in [1, {MAX_PAGE}] and offset be >= 0")
    if not _has_state(store):
        return ItemPage(0, offset, limit, ())
    where = {"all": "", "pending": "labelled_dimensions = 0", "labelled": "labelled_dimensions > 0"}[status]
    if reason is not None:
        where = " AND ".join(filter(None, [where, "list_contains(reasons::VARCHAR[], $reason)"]))
    query = f"SELECT * FROM ({_ITEMS}) {'WHERE ' + where if where else ''}"
    params = {"t": tenant, **({"reason": reason} if reason else {})}
    with store.transaction() as con:
        total = con.execute(f"SELECT count(*) FROM ({query})", params).fetchone()[0]
        rows = con.execute(f"{query} ORDER BY queued_at DESC, item_id LIMIT {limit} OFFSET {offset}",
                           params).fetchall()
    return ItemPage(total, offset, limit, tuple(_summary(r) for r in rows))


def queue_summary(store: StateStore, tenant: str) -> dict[str, object]:
    """Counts for a dashboard: items, pending (no label yet), labelled, per reason, label records, reviewers."""
    tenant = validate_tenant_id(tenant)
    by_reason = dict.fromkeys(REASONS, 0)
    summary: dict[str, object] = {"tenant_id": tenant, "items": 0, "pending": 0, "labelled": 0,
                                  "by_reason": by_reason, "label_records": 0, "reviewers": 0}
    if not _has_state(store):
        return summary
    with store.transaction() as con:
        items, pending = con.execute(f"SELECT count(*), count(*) FILTER (WHERE labelled_dimensions = 0) FROM ({_ITEMS})",
                                     {"t": tenant}).fetchone()
        reasons = con.execute("SELECT r, count(*) FROM (SELECT unnest(reasons::VARCHAR[]) AS r FROM review_items "
                              "WHERE tenant_id = $t) GROUP BY r", {"t": tenant}).fetchall()
        records, reviewers = con.execute("SELECT count(*), count(DISTINCT reviewer) FROM review_labels "
                                         "WHERE tenant_id = $t", {"t": tenant}).fetchone()
    summary.update(items=items, pending=pending, labelled=items - pending, label_records=records, reviewers=reviewers)
    by_reason.update(dict(reasons))
    return summary


def _not_found(tenant: str, item_id: str) -> DaemonError:
    return DaemonError("item_not_found", f"no review item {item_id!r} for tenant {tenant!r}")


def _label_records(con, tenant: str, item_id: str) -> list[LabelRecord]:
    rows = con.execute("SELECT dimension, revision, label, critique, reviewer, labelled_at FROM review_labels "
                       "WHERE tenant_id = $t AND item_id = $i ORDER BY labelled_at, dimension, revision",
                       {"t": tenant, "i": item_id}).fetchall()
    return [LabelRecord(d, r, lab, c, who, at.isoformat()) for d, r, lab, c, who, at in rows]


def latest_labels(records: list[LabelRecord] | tuple[LabelRecord, ...]) -> dict[str, LabelRecord]:
    latest: dict[str, LabelRecord] = {}
    for record in records:
        if record.dimension not in latest or record.revision > latest[record.dimension].revision:
            latest[record.dimension] = record
    return dict(sorted(latest.items()))


def get_item(store: StateStore, tenant: str, item_id: str) -> ItemDetail:
    """The item with its redacted conversation, the judge's verdict and rationale per dimension, and
    its label history; `item_not_found` for an id this tenant does not have."""
    tenant = validate_tenant_id(tenant)
    if not _has_state(store):
        raise _not_found(tenant, item_id)
    with store.transaction() as con:
        row = con.execute(f"SELECT * FROM ({_ITEMS}) WHERE item_id = $i", {"t": tenant, "i": item_id}).fetchone()
        if row is None:
            raise _not_found(tenant, item_id)
        item = _summary(row)
        query, response, context = con.execute(
            "SELECT query, response, context FROM sampled_traces WHERE tenant_id = $t AND trace_id = $tr",
            {"t": tenant, "tr": item.trace_id}).fetchone()
        judged = con.execute("SELECT dimension, value, score, reason FROM dimension_verdicts "
                             "WHERE tenant_id = $t AND attempt_id = $i ORDER BY dimension",
                             {"t": tenant, "i": item_id}).fetchall()
        records = _label_records(con, tenant, item_id)
    return ItemDetail(
        item=item, query=redact_text(query or ""), response=redact_text(response or ""),
        context=redact_text(context or ""),
        judgments=tuple(DimensionJudgment(d, v, s, None if r is None else redact_text(r)) for d, v, s, r in judged),
        labels=tuple(records), latest=latest_labels(records))


def validate_label_input(labels: Mapping[str, str], critique: str, reviewer: str) -> str:
    """The critique as stored (redacted, stripped); ValueError naming what is wrong."""
    if not labels:
        raise ValueError("give at least one dimension label (DIMENSION=PASS|FAIL)")
    bad = {d: v for d, v in labels.items() if v not in LABELS}
    if bad:
        raise ValueError(f"labels must be exactly PASS or FAIL, got {bad}")
    if not _REVIEWER.match(reviewer):
        raise ValueError("reviewer must be 1-64 characters: letters, digits and . _ @ + - (not starting with one)")
    text = critique.strip()
    if not text or "\n" in text or "\r" in text:
        raise ValueError("critique must be one non-empty line")
    if len(text) > MAX_CRITIQUE:
        raise ValueError(f"critique must be at most {MAX_CRITIQUE} characters, got {len(text)}")
    return redact_text(text)


def record_labels(store: StateStore, tenant: str, item_id: str, labels: Mapping[str, str], *, critique: str,
                  reviewer: str, now: datetime | None = None) -> list[LabelRecord]:
    """Record a reviewer's PASS/FAIL on dimensions of an item, one new record per dimension (all or
    none are written). Dimensions must be ones the judge gave a PASS/FAIL-style verdict on."""
    tenant = validate_tenant_id(tenant)
    stored_critique = validate_label_input(labels, critique, reviewer)
    if not _has_state(store):
        raise _not_found(tenant, item_id)
    at = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    with store.transaction() as con:
        if con.execute("SELECT 1 FROM review_items WHERE tenant_id = $t AND item_id = $i",
                       {"t": tenant, "i": item_id}).fetchone() is None:
            raise _not_found(tenant, item_id)
        judged = {d for (d,) in con.execute("SELECT dimension FROM dimension_verdicts WHERE tenant_id = $t AND "
                                            "attempt_id = $i AND value IS NOT NULL", {"t": tenant, "i": item_id}).fetchall()}
        unknown = sorted(set(labels) - judged)
        if unknown:
            raise DaemonError("invalid_config", f"dimension(s) {unknown} were not judged on item {item_id!r} "
                              f"(judged: {', '.join(sorted(judged))})")
        revisions = dict(con.execute("SELECT dimension, max(revision) FROM review_labels WHERE tenant_id = $t AND "
                                     "item_id = $i GROUP BY dimension", {"t": tenant, "i": item_id}).fetchall())
        rows = [(tenant, item_id, d, revisions.get(d, 0) + 1, labels[d], stored_critique, reviewer, at)
                for d in sorted(labels)]
        insert_rows(con, "review_labels", _LABEL_COLUMNS, rows)
    return [LabelRecord(d, rev, lab, c, who, at.isoformat()) for _, _, d, rev, lab, c, who, at in rows]
