"""The human review queue: items the daemon cannot trust, reviewer labels, and what labels feed.

Read API for reports and dashboards: `queue_summary(store, tenant)`, `list_items(store, tenant, ...)`,
`get_item(store, tenant, item_id)`. Writing: `route(...)` (the daemon, after judging) and
`record_labels(...)` (reviewers). See docs/review.md.
"""

from verdict_daemon.review.labelled import export_sentinel, review_agreement
from verdict_daemon.review.queue import (
    DimensionJudgment,
    ItemDetail,
    ItemPage,
    ItemSummary,
    LabelRecord,
    get_item,
    list_items,
    queue_summary,
    record_labels,
)
from verdict_daemon.review.routing import REASONS, RoutingReport, route

__all__ = [
    "REASONS",
    "DimensionJudgment",
    "ItemDetail",
    "ItemPage",
    "ItemSummary",
    "LabelRecord",
    "RoutingReport",
    "export_sentinel",
    "get_item",
    "list_items",
    "queue_summary",
    "record_labels",
    "review_agreement",
    "route",
]
