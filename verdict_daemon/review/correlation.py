"""User-signal correlation over a data directory and the tenant's lakes: the daemon's judgments against user
signals.

Judge side: the latest attempt of one evaluator per trace from state.duckdb; the trace's verdict is a
chosen dimension's, or the overall verdict (verdict.correlate.overall_verdict). Signal side: span
events named verdict.correlate.SIGNAL_EVENT in the union of the tenant's lakes (any span of the trace), plus
the rows of an optional JSONL side file. The statistics are verdict.correlate.correlate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from collector.lake_union import LakeUnion, read_errors
from verdict.correlate import (
    SIGNAL_EVENT,
    SIGNAL_KIND_ATTRIBUTE,
    Correlation,
    JudgeVerdict,
    UserSignal,
    correlate,
    overall_verdict,
)
from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.review.labelled import choose_fingerprint
from verdict_daemon.store.review import ReviewRepository
from verdict_daemon.store.state import StateStore


def judge_verdicts(store: StateStore, tenant: TenantId, *, evaluator: str | None = None, fingerprint: str | None = None,
                   dimension: str | None = None) -> tuple[str, list[JudgeVerdict]]:
    """(chosen fingerprint, one verdict per judged trace); ERROR for a latest attempt that failed."""
    rows = ReviewRepository(store).latest_judgments(tenant)
    if not rows:
        raise DaemonError("storage_error", f"tenant {tenant!r} has no judgments yet (run `verdict pipeline` or the daemon)")
    chosen = choose_fingerprint({r.fingerprint: r.evaluator for r in rows}, evaluator, fingerprint)
    per_trace: dict[str, tuple[str, dict[str | None, str | None]]] = {}
    for r in rows:
        if r.fingerprint == chosen:
            per_trace.setdefault(r.trace_id, (r.status, {}))[1][r.dimension] = r.verdict
    verdicts = []
    for trace, (status, values) in per_trace.items():
        if status == "ERROR":
            verdicts.append(JudgeVerdict(trace, chosen, "ERROR"))
        elif dimension is None:
            verdicts.append(JudgeVerdict(trace, chosen, overall_verdict(values.values())))
        elif (value := values.get(dimension)) is not None:
            verdicts.append(JudgeVerdict(trace, chosen, value if value in ("PASS", "FAIL") else "UNCLEAR"))
    if dimension is not None and not verdicts:
        raise DaemonError("invalid_config", f"--dimension: evaluator {chosen} gave no verdict on {dimension!r}")
    return chosen, verdicts


def lake_signals(lake: LakeUnion | Path, tenant: TenantId) -> list[UserSignal]:
    """Every SIGNAL_EVENT span event in the tenant's lake (a data dir, or the union of its lakes); a kind
    that is not a string is kept as its text and counted as unknown by `correlate`."""
    import duckdb

    from collector.lake_reads import LakeChanged, read_fresh
    from collector.views import open_scoped

    def read(snapshot: LakeUnion) -> list[tuple]:
        con = open_scoped(snapshot, tenant)
        try:
            rows: list[tuple] = con.execute("SELECT trace_id, events FROM spans WHERE contains(events, $name)",
                                            {"name": SIGNAL_EVENT}).fetchall()
            return rows
        finally:
            con.close()

    try:  # a segment purged after the listing is read again from a fresh one
        rows = read_fresh(LakeUnion.of(lake), read)
    except LakeChanged as exc:
        raise DaemonError("storage_error", f"cannot read the span lake: {exc}") from None
    except duckdb.Error as exc:  # a truncated segment
        raise _unreadable(exc) from None
    except read_errors() as exc:  # a directory without permission; no such bucket, store unreachable
        raise _unreadable(exc) from None
    signals = []
    for trace, events in rows:
        for event in json.loads(events):
            if event.get("name") == SIGNAL_EVENT:
                kind = (event.get("attributes") or {}).get(SIGNAL_KIND_ATTRIBUTE)
                at = event.get("time_unix_nano")
                stamp = datetime.fromtimestamp(at / 1e9, UTC).isoformat() if isinstance(at, int) else None
                signals.append(UserSignal(trace, str(kind), stamp))
    return signals


def _unreadable(exc: Exception) -> DaemonError:
    return DaemonError("storage_error", f"cannot read the span lake: {type(exc).__name__}: "
                       + (str(exc).splitlines() or [""])[0][:300])


def correlate_tenant(store: StateStore, lake: LakeUnion | Path, tenant: TenantId, *,
                     extra_signals: Sequence[UserSignal] = (),
                     evaluator: str | None = None, fingerprint: str | None = None, dimension: str | None = None,
                     **options) -> Correlation:
    """verdict.correlate.correlate over the tenant's judgments and signals (lake events + `extra_signals`)."""
    chosen, verdicts = judge_verdicts(store, tenant, evaluator=evaluator, fingerprint=fingerprint,
                                      dimension=dimension)
    return correlate(verdicts, [*lake_signals(lake, tenant), *extra_signals], fingerprint=chosen, **options)
