"""The demo's result, read back from what the components wrote: the span lake and `state.duckdb`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from verdict.tenancy import TenantId
from verdict_daemon.service.cycle import ADVERSE_KINDS, not_tested
from verdict_daemon.service.judging import coverage
from verdict_daemon.store.drift_runs import DriftRunReport, Signal, attempted_alerts, fingerprints
from verdict_daemon.store.state import StateStore
from verdict_demo.scenario import Regression


@dataclass(frozen=True)
class Injected:
    intent: str
    kind: str
    day: int  # 1-based, as printed
    share: float
    corrupted_answers: int


@dataclass(frozen=True)
class DemoSummary:
    data_dir: str
    tenant_id: str
    judge_model: str
    offline_judge: bool
    days: int
    per_day: int
    seed: int
    injected: Injected
    traces: int  # distinct traces in the span lake
    sampled: int
    judged: int  # sampled traces with a usable (latest OK) judgment
    judge_errors: int
    coverage_rate: float
    drift_run_id: str | None  # the closing decision of the last simulated (UTC) day
    drift_as_of: str | None
    drift_alpha: float | None
    cells: int
    tested: int
    not_tested: str | None  # why the other cells were not tested (verdict_daemon.service.cycle.not_tested)
    signals: tuple[Signal, ...]
    alerts: int  # signals the daemon's alert job logged (and posted, with a webhook) during the run
    report: str | None
    report_note: str | None  # why there is no report
    elapsed_seconds: float

    @property
    def adverse(self) -> list[Signal]:
        return [s for s in self.signals if s.kind in ADVERSE_KINDS]

    @property
    def injected_found(self) -> bool:
        return any(s.cluster == self.injected.intent for s in self.adverse)

    @property
    def unexpected(self) -> list[Signal]:
        return [s for s in self.adverse if s.cluster != self.injected.intent]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["signals"] = [{**asdict(s), "examples": list(s.examples)} for s in self.signals]
        out["adverse_signals"] = len(self.adverse)
        out["injected_found"] = self.injected_found
        out["unexpected_signals"] = len(self.unexpected)
        return out


def lake_traces(data_dir: Path, tenant: TenantId) -> int:
    import duckdb

    from collector.views import tenant_dir

    root = tenant_dir(data_dir, tenant)
    if not any(root.glob("date=*/*.parquet")):
        return 0
    pattern = str(root / "date=*" / "*.parquet")
    with duckdb.connect() as con:
        return cast(int, con.execute(  # a count: one row
            "SELECT count(DISTINCT trace_id) FROM read_parquet(?, hive_partitioning = false)",
            [pattern]).fetchone()[0])  # type: ignore[index]  # a count: one row


def read_summary(store: StateStore, data_dir: Path, tenant: TenantId, *, judge_model: str, offline: bool,
                 closing: Sequence[DriftRunReport], days: int,
                 per_day: int, seed: int, regression: Regression, corrupted: int, report: str | None,
                 report_note: str | None, elapsed: float) -> DemoSummary:
    found = fingerprints(store, tenant)
    fingerprint = found[0] if found else None
    cov: dict[str, Any] = coverage(store, tenant, fingerprint) if fingerprint else {"sampled_traces": 0, "usable": 0, "error": 0,
                                                                   "rate": 0.0}
    # The closing decision, not the daemon's latest early look (a tiny share of alpha, on a window that
    # straddles the last simulated day and today).
    run = next((r for r in closing if r.fingerprint == fingerprint), None)
    alerts = attempted_alerts(store, tenant)
    return DemoSummary(
        data_dir=str(data_dir), tenant_id=tenant, judge_model=judge_model, offline_judge=offline, days=days,
        per_day=per_day, seed=seed,
        injected=Injected(regression.intent, str(regression.kind), regression.day + 1, regression.share, corrupted),
        traces=lake_traces(data_dir, tenant), sampled=cov["sampled_traces"], judged=cov["usable"],
        judge_errors=cov["error"], coverage_rate=cov["rate"], drift_run_id=run.run_id if run else None,
        drift_as_of=run.as_of.isoformat() if run else None, drift_alpha=run.alpha if run else None,
        cells=run.cells if run else 0, tested=run.tested if run else 0,
        not_tested=not_tested(run.cells, run.tested, run.min_usable) if run else None, signals=run.signals if run else (),
        alerts=alerts,
        report=report, report_note=report_note, elapsed_seconds=round(elapsed, 1))
