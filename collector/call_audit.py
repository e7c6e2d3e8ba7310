"""Why spans are not `llm_calls` rows, counted: rows merged as duplicates per identity rule and spans left out as
non-inference per operation (the `llm_calls_audit` view, collector.views). The daemon's sampler reads it over its
lookback; the collector computes it for /stats over today's date partition after a periodic compaction pass."""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from collector import lake
from collector.lake_union import LakeUnion
from verdict.tenancy import InvalidTenantError, TenantId, validate_tenant_id

log = logging.getLogger("verdict.collector")

MAX_TENANTS = 64  # tenants audited per pass for /stats (those written to most recently first)


@dataclass(frozen=True)
class CallAudit:
    duplicates: tuple[tuple[str, int], ...] = ()  # (identity rule, rows merged into another row)
    not_inference: tuple[tuple[str, int], ...] = ()  # (operation, spans), `(none)`: a recognised span without one

    def as_json(self) -> dict[str, dict[str, int]]:
        return {"duplicates": dict(self.duplicates), "not_inference": dict(self.not_inference)}


def read_call_audit(con, first: date, last: date) -> CallAudit:
    """The audit of the date partitions [first, last] from a connection holding the views (collector.views)."""
    rows = con.execute(
        "SELECT outcome, reason, sum(spans)::BIGINT AS n FROM llm_calls_audit WHERE date BETWEEN $first AND $last "
        "GROUP BY ALL ORDER BY n DESC, reason", {"first": first, "last": last}).fetchall()
    return CallAudit(tuple((reason, n) for outcome, reason, n in rows if outcome == "duplicate"),
                     tuple((reason, n) for outcome, reason, n in rows if outcome == "not_inference"))


@dataclass(frozen=True)
class RecentAudit:
    """What /stats shows as `llm_calls_audit`."""

    as_of: str  # when it was computed (UTC, ISO 8601)
    date: str  # the date partition audited
    seconds: float  # how long it took
    tenants: dict[str, dict[str, dict[str, int]]]  # tenant -> CallAudit.as_json()
    tenants_not_audited: int  # tenants with spans that day beyond MAX_TENANTS

    def as_json(self) -> dict:
        return {"as_of": self.as_of, "date": self.date, "seconds": self.seconds, "tenants": self.tenants,
                "tenants_not_audited": self.tenants_not_audited}


def _tenants_of(data_dir: Path, day: str) -> list[TenantId]:
    """Tenants with a `day` partition on this collector's disk, the most recently written first."""
    found = []
    for tenant_dir in lake.spans_root(data_dir).glob(f"tenant=*/date={day}"):
        try:
            found.append((tenant_dir.stat().st_mtime, validate_tenant_id(tenant_dir.parent.name[len("tenant="):])))
        except (OSError, InvalidTenantError):  # gone meanwhile, or a directory that is not ours
            continue
    return [tenant for _mtime, tenant in sorted(found, reverse=True)]


def audit_recent(data_dir: Path, snapshot: LakeUnion | None = None) -> RecentAudit:
    """The call audit of today's (UTC) date partition of each tenant on this collector's local disk (`snapshot`: a
    listing of it taken already; a fresh one by default). One DuckDB thread under a memory cap (spilling to a private
    directory): it runs beside ingest. Read again from a fresh listing if a purge (the daemon's `compact_retain` on a
    shared data dir) deleted a listed segment first (collector.lake_reads)."""
    from collector.lake_reads import read_fresh
    from collector.views import view_statements

    started = time.monotonic()
    today = datetime.now(UTC).date()
    tenants = _tenants_of(data_dir, today.isoformat())

    def audit(source: LakeUnion) -> dict[str, dict[str, dict[str, int]]]:
        audited: dict[str, dict[str, dict[str, int]]] = {}
        with tempfile.TemporaryDirectory(prefix="verdict-audit-") as spill:
            con = source.connect({"threads": 1, "memory_limit": "512MB", "temp_directory": spill})
            try:
                for tenant in tenants[:MAX_TENANTS]:
                    for statement in view_statements(source, tenant, [today]):
                        con.execute(statement)
                    audited[tenant] = read_call_audit(con, today, today).as_json()
            finally:
                con.close()
        return audited

    audited = read_fresh(LakeUnion.of(data_dir) if snapshot is None else snapshot, audit)
    return RecentAudit(datetime.now(UTC).isoformat(timespec="seconds"), today.isoformat(),
                       round(time.monotonic() - started, 3), audited, max(len(tenants) - MAX_TENANTS, 0))
