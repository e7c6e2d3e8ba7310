"""One tenant's monitoring progress at a glance, across the aggregates (what `make demo` polls while the
daemon works through its days)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from verdict.tenancy import TenantId
from verdict_daemon.store.state import StateStore

_COUNTS = """
SELECT (SELECT count(*) FROM sampled_traces WHERE tenant_id = $t),
       (SELECT count(DISTINCT trace_id) FROM judgment_attempts WHERE tenant_id = $t),
       (SELECT count(DISTINCT trace_id) FROM judgment_attempts WHERE tenant_id = $t AND status = 'OK'),
       (SELECT arg_max('[' || error_code || '] ' || coalesce(error_message, ''), judged_at)
          FROM judgment_attempts WHERE tenant_id = $t AND error_code IS NOT NULL),
       (SELECT count(*) FROM cluster_assignments WHERE tenant_id = $t),
       (SELECT max(judged_at) FROM judgment_attempts WHERE tenant_id = $t),
       (SELECT count(*) FROM drift_runs WHERE tenant_id = $t),
       (SELECT max(completed_at) FROM drift_runs WHERE tenant_id = $t),
       (SELECT arg_max(judgments, completed_at) FROM drift_runs WHERE tenant_id = $t),
       (SELECT count(*) FILTER (WHERE attempts > 0) FROM alert_deliveries WHERE tenant_id = $t),
       (SELECT count(*) FILTER (WHERE attempts = 0) FROM alert_deliveries WHERE tenant_id = $t)"""


@dataclass(frozen=True)
class StateCounts:
    sampled: int
    judged: int  # sampled traces with at least one attempt
    usable: int  # sampled traces with a usable (OK) judgment
    last_error: str | None  # "[code] message" of the newest failed judge attempt
    assigned: int
    last_judged: datetime | None
    drift_runs: int
    last_run: datetime | None  # completion time of the latest drift run
    last_run_judgments: int | None  # how many judgments that run read
    alerts: int  # deliveries tried at least once
    unalerted: int  # signals raised but not yet through the alert job


def state_counts(store: StateStore, tenant: TenantId) -> StateCounts:
    with store.transaction() as con:
        return StateCounts(*con.execute(_COUNTS, {"t": tenant}).fetchall()[0])
