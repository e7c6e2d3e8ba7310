"""Routing judged traces into the tenant's review queue.

An item is one usable judgment: the latest OK attempt of an evaluator on a trace (`item_id` is its
attempt id). It is queued, once, for every reason that applies:

- `unclear`: a dimension's verdict is UNCLEAR (a single judge, or an ensemble's tie);
- `ensemble_disagreement`: an ensemble's components voted differently on a dimension: its stored
  tally, `dimension_verdicts.votes` ({"FAIL": 1, "PASS": 2}, one entry per verdict that got a vote;
  NULL for anything but an ensemble), has more than one entry;
- `inconsistent`: a dimension's verdict is INCONSISTENT (a pairwise judge whose preference followed
  the position);
- `audit`: none of the above, but the judgment falls in the seeded random audit sample
  (`[review] audit_rate`, `seed`), so the queue also holds confident judgments to check.

The audit draw hashes (seed, tenant, attempt id): the same state and seed always queue the same
items, whatever the order or the number of routing runs, and routing twice queues nothing twice.

Each run looks only at judgments finished since the previous run's newest one (cursor
`review.routed_through`), less RECHECK_MARGIN for attempts another process was still writing, so
a tick costs what was judged since the last tick, not the whole history. A changed audit rate or
seed therefore applies to judgments made after the change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from verdict.tenancy import TenantId
from verdict_daemon.config import Review
from verdict_daemon.store.review import NewItem, ReviewRepository
from verdict_daemon.store.state import StateStore

REASONS = ("unclear", "ensemble_disagreement", "inconsistent", "audit")
ROUTING_CURSOR = "review.routed_through"
RECHECK_MARGIN = timedelta(hours=1)


@dataclass(frozen=True)
class RoutingReport:
    considered: int  # usable judgments not queued before this run
    queued: int
    by_reason: dict[str, int]


def audit_draw(seed: int, tenant: str, item_id: str) -> float:
    """A uniform number in [0, 1) fixed by (seed, tenant, item): the item is audited when it is < the rate."""
    digest = hashlib.sha256(f"{seed}\0{tenant}\0{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def route(store: StateStore, tenant: TenantId, config: Review, now: datetime | None = None) -> RoutingReport:
    """Queue every usable judgment not queued yet that needs a human (see the module docstring)."""
    repository = ReviewRepository(store)
    queued_at = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    through = store.cursor(tenant, ROUTING_CURSOR)
    since = datetime.fromisoformat(through) - RECHECK_MARGIN if through else datetime.min
    candidates = repository.routing_candidates(tenant, since)
    by_reason = dict.fromkeys(REASONS, 0)
    queue = []
    for candidate in candidates:
        reasons = sorted(set(candidate.flagged.values()), key=REASONS.index)
        if not reasons and audit_draw(config.seed, tenant, candidate.attempt_id) < config.audit_rate:
            reasons = ["audit"]
        for why in reasons:
            by_reason[why] += 1
        if reasons:
            queue.append(NewItem(candidate.attempt_id, candidate.trace_id, candidate.fingerprint, tuple(reasons),
                                 dict(sorted(candidate.flagged.items())), queued_at))
    repository.queue(tenant, queue)
    if candidates:  # after the items: a crash in between re-examines these judgments, never skips them
        newest = max(c.judged_at for c in candidates)
        if through is None or newest > datetime.fromisoformat(through):
            store.set_cursor(tenant, ROUTING_CURSOR, newest.isoformat())
    return RoutingReport(considered=len(candidates), queued=len(queue), by_reason=by_reason)
