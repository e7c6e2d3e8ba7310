"""Routing judged traces into the tenant's review queue.

An item is one usable judgment: the latest OK attempt of an evaluator on a trace (`item_id` is its
attempt id). It is queued, once, for every reason that applies:

- `unclear`: a dimension's verdict is UNCLEAR (a single judge, or an ensemble's tie);
- `ensemble_disagreement`: an ensemble's components voted differently on a dimension (the stored
  reason of an ensemble verdict is its tally, "votes FAIL=1, PASS=2", written by
  verdict_daemon.judge_evaluators);
- `inconsistent`: a dimension's verdict is INCONSISTENT (a pairwise judge whose preference followed
  the position);
- `audit`: none of the above, but the judgment falls in the seeded random audit sample
  (`[review] audit_rate`, `seed`), so the queue also holds confident judgments to check.

The audit draw hashes (seed, tenant, attempt id): the same state and seed always queue the same
items, whatever the order or the number of routing runs, and routing twice queues nothing twice.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from verdict.tenancy import validate_tenant_id
from verdict_daemon.config import Review
from verdict_daemon.state import StateStore, insert_rows

REASONS = ("unclear", "ensemble_disagreement", "inconsistent", "audit")
_ITEM_COLUMNS = ("tenant_id", "item_id", "trace_id", "fingerprint", "reasons", "flagged", "queued_at")

# Latest attempt per (trace, evaluator) that is OK and not queued yet, with every dimension verdict.
_CANDIDATES = """
WITH latest AS (
    SELECT attempt_id, trace_id, fingerprint, status FROM judgment_attempts WHERE tenant_id = $t
    QUALIFY row_number() OVER (PARTITION BY trace_id, fingerprint ORDER BY attempt_no DESC) = 1)
SELECT l.attempt_id, l.trace_id, l.fingerprint, e.definition->>'kind' AS kind, v.dimension, v.value, v.reason
FROM latest l
JOIN sampled_traces s ON s.tenant_id = $t AND s.trace_id = l.trace_id
JOIN dimension_verdicts v ON v.tenant_id = $t AND v.attempt_id = l.attempt_id
LEFT JOIN evaluators e ON e.tenant_id = $t AND e.fingerprint = l.fingerprint
WHERE l.status = 'OK' AND l.attempt_id NOT IN (SELECT item_id FROM review_items WHERE tenant_id = $t)
ORDER BY l.attempt_id, v.dimension
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


def _dimension_reason(kind: str | None, value: str | None, reason: str | None) -> str | None:
    if value == "UNCLEAR":
        return "unclear"
    if value == "INCONSISTENT":
        return "inconsistent"
    # An ensemble's tally lists one entry per verdict its components gave: more than one is a split.
    if kind == "ensemble" and reason is not None and reason.startswith("votes ") and "," in reason:
        return "ensemble_disagreement"
    return None


def route(store: StateStore, tenant: str, config: Review, now: datetime | None = None) -> RoutingReport:
    """Queue every usable judgment not queued yet that needs a human (see the module docstring)."""
    tenant = validate_tenant_id(tenant)
    queued_at = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    with store.transaction() as con:
        rows = con.execute(_CANDIDATES, {"t": tenant}).fetchall()
    items: dict[str, tuple[str, str, dict[str, str]]] = {}
    for attempt, trace, fingerprint, kind, dimension, value, reason in rows:
        flagged = items.setdefault(attempt, (trace, fingerprint, {}))[2]
        why = _dimension_reason(kind, value, reason)
        if why is not None:
            flagged[dimension] = why
    by_reason = dict.fromkeys(REASONS, 0)
    queue = []
    for attempt, (trace, fingerprint, flagged) in items.items():
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
    return RoutingReport(considered=len(items), queued=len(queue), by_reason=by_reason)
