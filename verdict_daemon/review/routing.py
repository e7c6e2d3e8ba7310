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
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from verdict.tenancy import validate_tenant_id
from verdict_daemon.config import Review
from verdict_daemon.store.state import StateStore, insert_rows

REASONS = ("unclear", "ensemble_disagreement", "inconsistent", "audit")
ROUTING_CURSOR = "review.routed_through"
RECHECK_MARGIN = timedelta(hours=1)
_ITEM_COLUMNS = ("tenant_id", "item_id", "trace_id", "fingerprint", "reasons", "flagged", "queued_at")

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


@dataclass(frozen=True)
class RoutingReport:
    considered: int  # usable judgments not queued before this run
    queued: int
    by_reason: dict[str, int]


def audit_draw(seed: int, tenant: str, item_id: str) -> float:
    """A uniform number in [0, 1) fixed by (seed, tenant, item): the item is audited when it is < the rate."""
    digest = hashlib.sha256(f"{seed}\0{tenant}\0{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def route(store: StateStore, tenant: str, config: Review, now: datetime | None = None) -> RoutingReport:
    """Queue every usable judgment not queued yet that needs a human (see the module docstring)."""
    tenant = validate_tenant_id(tenant)
    queued_at = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    through = store.cursor(tenant, ROUTING_CURSOR)
    since = datetime.fromisoformat(through) - RECHECK_MARGIN if through else datetime.min
    with store.transaction() as con:
        rows = con.execute(_CANDIDATES, {"t": tenant, "since": since}).fetchall()
    by_reason = dict.fromkeys(REASONS, 0)
    queue = []
    for attempt, trace, fingerprint, _, pairs in rows:
        flagged = dict(pairs)
        reasons = sorted(set(flagged.values()), key=REASONS.index)
        if not reasons and audit_draw(config.seed, tenant, attempt) < config.audit_rate:
            reasons = ["audit"]
        for why in reasons:
            by_reason[why] += 1
        if reasons:
            queue.append((tenant, attempt, trace, fingerprint, json.dumps(reasons),
                          json.dumps(dict(sorted(flagged.items()))), queued_at))
    if queue:
        with store.transaction() as con:
            insert_rows(con, "review_items", _ITEM_COLUMNS, queue)
    if rows:  # after the items: a crash in between re-examines these judgments, never skips them
        newest = max(row[3] for row in rows)
        if through is None or newest > datetime.fromisoformat(through):
            store.set_cursor(tenant, ROUTING_CURSOR, newest.isoformat())
    return RoutingReport(considered=len(rows), queued=len(queue), by_reason=by_reason)
