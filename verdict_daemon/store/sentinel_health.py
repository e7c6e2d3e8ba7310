"""Sentinel health checks in state.duckdb (`sentinel_health`): the only SQL that writes them (insert-only;
the report still reads them in report/gather.py)."""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields
from datetime import datetime

from verdict_daemon.store.state import StateStore, insert_rows


@dataclass(frozen=True)
class HealthCheck:
    """One stored check of an evaluator on a sentinel set (the table's columns, in order)."""

    tenant_id: str
    check_id: str
    evaluator: str
    fingerprint: str  # the evaluator's
    sentinel_fingerprint: str
    sentinel_file: str
    status: str  # healthy, unhealthy, insufficient_data, ...
    reason: str
    examples: int
    usable: int
    errors: int
    passed: int
    pass_rate: float | None
    pass_rate_low: float | None
    pass_rate_high: float | None
    threshold: float
    minimum_examples: int
    dimensions: str  # JSON
    results: str  # JSON
    checked_at: datetime  # naive UTC


_COLUMNS = tuple(f.name for f in fields(HealthCheck))


def insert_check(store: StateStore, check: HealthCheck) -> None:
    with store.transaction() as con:
        insert_rows(con, "sentinel_health", _COLUMNS, [astuple(check)])
