"""User-signal correlation over a data directory: the daemon's judgments against user signals.

Judge side: the latest attempt of one evaluator per trace from state.duckdb; the trace's verdict is a
chosen dimension's, or the overall verdict (verdict.correlate.overall_verdict). Signal side: span
events named verdict.correlate.SIGNAL_EVENT in the tenant's span lake (any span of the trace), plus
the rows of an optional JSONL side file. The statistics are verdict.correlate.correlate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from verdict.correlate import (
    SIGNAL_EVENT,
    SIGNAL_KIND_ATTRIBUTE,
    Correlation,
    JudgeVerdict,
    UserSignal,
    correlate,
    overall_verdict,
)
from verdict.tenancy import validate_tenant_id
from verdict_daemon.errors import DaemonError
from verdict_daemon.review.labelled import choose_fingerprint
from verdict_daemon.store.state import StateStore

_JUDGMENTS = """
WITH latest AS (
    SELECT attempt_id, trace_id, fingerprint, status FROM judgment_attempts WHERE tenant_id = $t
    QUALIFY row_number() OVER (PARTITION BY trace_id, fingerprint ORDER BY attempt_no DESC) = 1)
SELECT l.trace_id, l.fingerprint, e.name, l.status, v.dimension, v.value
FROM latest l
LEFT JOIN dimension_verdicts v ON v.tenant_id = $t AND v.attempt_id = l.attempt_id
LEFT JOIN evaluators e ON e.tenant_id = $t AND e.fingerprint = l.fingerprint
ORDER BY l.trace_id, v.dimension
"""


def judge_verdicts(store: StateStore, tenant: str, *, evaluator: str | None = None, fingerprint: str | None = None,
                   dimension: str | None = None) -> tuple[str, list[JudgeVerdict]]:
    """(chosen fingerprint, one verdict per judged trace); ERROR for a latest attempt that failed."""
    tenant = validate_tenant_id(tenant)
    rows = []
    if store.path.exists():
        with store.transaction() as con:
            rows = con.execute(_JUDGMENTS, {"t": tenant}).fetchall()
    if not rows:
        raise DaemonError("storage_error", f"tenant {tenant!r} has no judgments yet (run `verdict pipeline` or the daemon)")
    chosen = choose_fingerprint({fp: name for _, fp, name, *_ in rows}, evaluator, fingerprint)
    per_trace: dict[str, tuple[str, dict[str, str | None]]] = {}
    for trace, fp, _name, status, dim, value in rows:
        if fp == chosen:
            per_trace.setdefault(trace, (status, {}))[1][dim] = value
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


def lake_signals(data_dir: Path, tenant: str) -> list[UserSignal]:
    """Every SIGNAL_EVENT span event in the tenant's lake; a kind that is not a string is kept as
    its text and counted as unknown by `correlate`."""
    import duckdb

    from collector.views import open_scoped

    try:
        con = open_scoped(Path(data_dir), validate_tenant_id(tenant))
        try:
            rows = con.execute("SELECT trace_id, events FROM spans WHERE contains(events, $name)",
                               {"name": SIGNAL_EVENT}).fetchall()
        finally:
            con.close()
    except duckdb.Error as exc:
        raise DaemonError("storage_error", f"cannot read the span lake: {str(exc).splitlines()[0][:300]}") from None
    signals = []
    for trace, events in rows:
        for event in json.loads(events):
            if event.get("name") == SIGNAL_EVENT:
                kind = (event.get("attributes") or {}).get(SIGNAL_KIND_ATTRIBUTE)
                at = event.get("time_unix_nano")
                stamp = datetime.fromtimestamp(at / 1e9, UTC).isoformat() if isinstance(at, int) else None
                signals.append(UserSignal(trace, str(kind), stamp))
    return signals


def correlate_tenant(store: StateStore, data_dir: Path, tenant: str, *, extra_signals: Sequence[UserSignal] = (),
                     evaluator: str | None = None, fingerprint: str | None = None, dimension: str | None = None,
                     **options) -> Correlation:
    """verdict.correlate.correlate over the tenant's judgments and signals (lake events + `extra_signals`)."""
    chosen, verdicts = judge_verdicts(store, tenant, evaluator=evaluator, fingerprint=fingerprint,
                                      dimension=dimension)
    return correlate(verdicts, [*lake_signals(data_dir, tenant), *extra_signals], fingerprint=chosen, **options)
