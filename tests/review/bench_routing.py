"""Routing cost: `.venv/bin/python -m tests.review.bench_routing` (not collected by pytest).

A state with 100,000 judged traces (4 dimensions each, judged 3 s apart over ~3.5 days, 2 % UNCLEAR):
the first routing run examines all of them, later runs only what was judged since (the cursor).
Prints the first run's time and the median of 5 later runs."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from verdict.tenancy import TenantId
from verdict_daemon.config import Review
from verdict_daemon.review import route
from verdict_daemon.store.state import StateStore, insert_rows

N = 100_000
DIMENSIONS = ("relevance", "safety", "completeness", "instruction_following")


def build(store: StateStore) -> None:
    start = datetime(2026, 11, 20)
    traces = [f"{i:032x}" for i in range(N)]
    with store.transaction() as con:
        insert_rows(con, "evaluators", ("tenant_id", "fingerprint", "name", "definition", "registered_at"),
                    [("acme", "fp", "quality", json.dumps({"kind": "rubric"}), start)])
        insert_rows(con, "sampled_traces", ("tenant_id", "trace_id", "span_id", "intent_key", "stratum",
                                            "window_start", "started_at", "query", "response", "context", "sampled_at"),
                    [("acme", t, t[:16], "k", "k", start, start, "q", "r", "", start) for t in traces])
        insert_rows(con, "judgment_attempts", ("tenant_id", "attempt_id", "trace_id", "fingerprint", "attempt_no",
                                               "status", "error_code", "error_message", "judged_at", "input_tokens",
                                               "output_tokens", "cost_usd", "judge_run_id"),
                    [("acme", f"a{t}", t, "fp", 1, "OK", None, None, start + timedelta(seconds=3 * i), 1, 1, 0.0, "r")
                     for i, t in enumerate(traces)])
        insert_rows(con, "dimension_verdicts", ("tenant_id", "attempt_id", "dimension", "value", "score", "reason"),
                    [("acme", f"a{t}", d, "UNCLEAR" if i % 50 == 0 and d == "relevance" else "PASS", None, "ok")
                     for i, t in enumerate(traces) for d in DIMENSIONS])


def main() -> None:
    store = StateStore(Path(tempfile.mkdtemp()))
    build(store)
    config = Review(audit_rate=0.02)
    started = time.perf_counter()
    first = route(store, TenantId("acme"), config)
    first_s = time.perf_counter() - started
    later = []
    for _ in range(5):
        started = time.perf_counter()
        route(store, TenantId("acme"), config)
        later.append(time.perf_counter() - started)
    print(f"first run: {first_s:.2f} s ({first.considered} judgments, {first.queued} queued); "
          f"later runs: median {statistics.median(later):.2f} s")


if __name__ == "__main__":
    main()
