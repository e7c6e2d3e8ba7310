"""Alerts: a log line and a JSON webhook POST per new signal, at least once, deduplicated per signal id.

A delivery row is created with the drift run that first raised the signal (same transaction), so a
signal raised again by later runs is not alerted again. Each alert tick posts the deliveries that
are due; a 2xx marks one delivered, anything else schedules a retry with exponential backoff
(1 s, 2 s, 4 s, … capped at 5 min) until `max_attempts`, then it is `failed` (logged as
`webhook_failed`). A crash between the POST and the commit re-sends it: receivers dedupe on the
`signal_id` field (also sent as the `Idempotency-Key` header). `alpha` is the level of the drift run
that raised it: the closing decision of an alert period or a (much smaller) early look, see drift_runs.

A POST goes to the configured URL only (no redirect is followed: a 3xx is a failed attempt) and
`timeout_seconds` bounds the whole request (service/webhook.py). An attempt that runs out of time ends
the tenant's turn: its other due alerts wait, still due, for the next tick, so a receiver that stalls
costs one deadline per tick; the daemon runs tenants side by side, so it never delays another tenant.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import cast

from verdict.tenancy import TenantId
from verdict_daemon.config import Alerts
from verdict_daemon.service import webhook
from verdict_daemon.store.drift_runs import due_alerts, record_delivery
from verdict_daemon.store.state import StateStore

log = logging.getLogger("verdict.daemon")

MAX_BACKOFF_SECONDS = 300


@dataclass(frozen=True)
class AlertReport:
    delivered: int
    retrying: int
    failed: int


def _post(config: Alerts, payload: dict, token: str | None) -> webhook.Attempt:
    headers = {"Content-Type": "application/json", "Idempotency-Key": payload["signal_id"],
               "User-Agent": "verdict-daemon"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    url = cast(str, config.webhook_url)  # deliver() posts only when one is set
    return webhook.post(url, json.dumps(payload).encode(), headers, config.timeout_seconds)


def deliver(store: StateStore, tenant: TenantId, config: Alerts,
            should_stop: Callable[[], bool] = lambda: False) -> AlertReport:
    """Post the due deliveries; on a stop request the rest wait (still pending) for the next start."""
    now = datetime.now(UTC).replace(tzinfo=None)
    due = [asdict(alert) for alert in due_alerts(store, tenant, now)]
    token = config.token() if config.webhook_url else None
    delivered = retrying = failed = 0
    for alert in due:
        if should_stop():
            break
        attempts = alert.pop("attempts")
        if attempts == 0:
            log.warning("signal tenant=%s kind=%s cluster=%s dimension=%s level=%s->%s adjusted_p=%s signal_id=%s",
                        tenant, alert["kind"], alert["cluster"], alert["dimension"], alert["baseline_level"],
                        alert["current_level"], alert["adjusted_p"], alert["signal_id"])
        payload = {"tenant_id": tenant, **alert, "examples": json.loads(alert["examples"] or "[]"),
                   "as_of": alert["as_of"].isoformat() + "Z", "current_start": alert["current_start"].isoformat() + "Z"}
        attempt = _post(config, payload, token) if config.webhook_url else webhook.Attempt(None)
        error = attempt.error
        attempts += 1
        if error is None:
            status, next_at, delivered = "delivered", None, delivered + 1
        elif attempts >= config.max_attempts:
            status, next_at, failed = "failed", None, failed + 1
            log.error("alert error=webhook_failed tenant=%s signal_id=%s attempts=%d last=%s",
                      tenant, alert["signal_id"], attempts, error)
        else:
            status, retrying = "pending", retrying + 1
            next_at = now + timedelta(seconds=min(2 ** (attempts - 1), MAX_BACKOFF_SECONDS))
        record_delivery(store, tenant, alert["signal_id"], status, attempts, error, next_at)
        if attempt.timed_out:
            break  # the receiver stalls: the rest stay due for the next tick
    return AlertReport(delivered, retrying, failed)
