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
from verdict.tenancy import TenantId
from verdict_daemon.review.routing import REASONS
from verdict_daemon.service.material import judged_sample
from verdict_daemon.store.review import (
    Content,
    DimensionJudgment,
    ItemSummary,
    LabelRecord,
    ReviewRepository,
    item_not_found,
)
from verdict_daemon.store.state import StateStore

__all__ = ["DimensionJudgment", "ItemDetail", "ItemPage", "ItemSummary", "LabelRecord", "get_item", "list_items",
           "queue_summary", "record_labels"]

LABELS = ("PASS", "FAIL")
STATUSES = ("all", "pending", "labelled")  # pending: no label recorded on any dimension yet
MAX_PAGE = 500
MAX_CRITIQUE = 500
_REVIEWER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")


@dataclass(frozen=True)
class ItemPage:
    total: int  # items matching the filters, all pages
    offset: int
    limit: int
    items: tuple[ItemSummary, ...]


@dataclass(frozen=True)
class ItemDetail:
    """An item as its judge was shown it (`material.judged_sample`, redacted again): `response` is the graded text
    (a conversation unit's transcript); `history` and `trajectory` are the background beside it ("" when none)."""

    item: ItemSummary
    query: str
    response: str
    context: str
    judgments: tuple[DimensionJudgment, ...]
    labels: tuple[LabelRecord, ...]  # every record, oldest first
    latest: dict[str, LabelRecord]  # dimension -> the label in force
    history: str = ""  # the conversation so far the judge was shown (a turn of a conversation)
    trajectory: str = ""  # the tool trajectory the judge was shown (an agent run, an evaluator with trajectory = true)


def list_items(store: StateStore, tenant: TenantId, *, status: str = "all", reason: str | None = None,
               limit: int = 50, offset: int = 0, traces: tuple[str, ...] | None = None) -> ItemPage:
    """One page of the tenant's queue, newest first (ties by item id, so pages are stable); `traces`: only
    the items of these traces (a drift signal's examples)."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    if reason is not None and reason not in REASONS:
        raise ValueError(f"reason must be one of {REASONS}, got {reason!r}")
    if not 1 <= limit <= MAX_PAGE or offset < 0:
        raise ValueError(f"limit must lie in [1, {MAX_PAGE}] and offset be >= 0")
    repository = ReviewRepository(store)
    if not repository.exists():
        return ItemPage(0, offset, limit, ())
    pending = {"all": None, "pending": True, "labelled": False}[status]
    total, items = repository.items_page(tenant, pending=pending, reason=reason, limit=limit, offset=offset,
                                         traces=traces)
    return ItemPage(total, offset, limit, tuple(items))


def queue_summary(store: StateStore, tenant: TenantId) -> dict[str, object]:
    """Counts for a dashboard: items, pending (no label yet), labelled, per reason, label records, reviewers."""
    by_reason = dict.fromkeys(REASONS, 0)
    summary: dict[str, object] = {"tenant_id": tenant, "items": 0, "pending": 0, "labelled": 0,
                                  "by_reason": by_reason, "label_records": 0, "reviewers": 0}
    repository = ReviewRepository(store)
    if not repository.exists():
        return summary
    counts = repository.counts(tenant)
    summary.update(items=counts.items, pending=counts.pending, labelled=counts.items - counts.pending,
                   label_records=counts.label_records, reviewers=counts.reviewers)
    by_reason.update(counts.by_reason)
    return summary


def latest_labels(records: list[LabelRecord] | tuple[LabelRecord, ...]) -> dict[str, LabelRecord]:
    latest: dict[str, LabelRecord] = {}
    for record in records:
        if record.dimension not in latest or record.revision > latest[record.dimension].revision:
            latest[record.dimension] = record
    return dict(sorted(latest.items()))


def get_item(store: StateStore, tenant: TenantId, item_id: str) -> ItemDetail:
    """The item as its judge was shown it (redacted), the judge's verdict and rationale per dimension, and its label
    history; `item_not_found` for an id this tenant does not have."""
    repository = ReviewRepository(store)
    stored = repository.item(tenant, item_id) if repository.exists() else None
    if stored is None:
        raise item_not_found(tenant, item_id)
    shown = judged_input(stored.content, stored.definition)
    return ItemDetail(
        item=stored.item, query=redact_text(shown["query"]), response=redact_text(shown["graded"]),
        context=redact_text(shown["context"]),
        judgments=tuple(DimensionJudgment(j.dimension, j.verdict, j.score,
                                          None if j.rationale is None else redact_text(j.rationale))
                        for j in stored.judgments),
        labels=stored.labels, latest=latest_labels(stored.labels), history=redact_text(shown["history"]),
        trajectory=redact_text(shown["trajectory"]))


def judged_input(content: Content, definition: str | None) -> dict[str, str]:
    """What the item's judge was shown (`material.judged_sample`, the sample judging built, under the bounds its
    evaluator's registered definition records), not redacted again; `graded` is the graded text: the answer, or
    for a conversation unit the transcript (its stored response is only the last answer)."""
    sample = judged_sample(content.query, content.response, content.context, content.history,
                           None if definition is None else json.loads(definition))
    return sample | {"graded": sample["conversation"] or sample["response"]}


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
    if "\n" in text or "\r" in text:
        raise ValueError("critique must be one line")
    if not text and "FAIL" in labels.values():  # a PASS needs no why; a FAIL does (it tells what went wrong)
        raise ValueError("critique must be one non-empty line when a label is FAIL (optional when all are PASS)")
    if len(text) > MAX_CRITIQUE:
        raise ValueError(f"critique must be at most {MAX_CRITIQUE} characters, got {len(text)}")
    return redact_text(text)


def record_labels(store: StateStore, tenant: TenantId, item_id: str, labels: Mapping[str, str], *, critique: str,
                  reviewer: str, now: datetime | None = None) -> list[LabelRecord]:
    """Record a reviewer's PASS/FAIL on dimensions of an item, one new record per dimension (all or
    none are written). Dimensions must be ones the judge gave a PASS/FAIL-style verdict on."""
    stored_critique = validate_label_input(labels, critique, reviewer)
    repository = ReviewRepository(store)
    if not repository.exists():
        raise item_not_found(tenant, item_id)
    at = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    return repository.append_labels(tenant, item_id, labels, critique=stored_critique, reviewer=reviewer, at=at)
