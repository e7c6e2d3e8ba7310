"""Test lakes for the cluster registry: real Parquet segments written with the collector's writer.

Per tenant: `INTENTS` x `PER_DAY` keyed traces a day over `DAYS` days before `NOW`, plus traces the
registry must report rather than cluster: keyless ones (`missing_intent_key`), ones the collector
refused a key for (`intent_key_error` set, key NULL), and calls that are never candidates (judge
workload, failed calls).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.daemon.lakes import span_row, write_rows

NOW = datetime(2026, 11, 20, tzinfo=UTC)
CUTOFF = "2026-11-19T00:00:00+00:00"  # fit on all but the last day
INTENTS = ("billing.v1", "search.v1", "returns.v1", "account.v1")
PER_DAY, DAYS = 6, 4
MISSING_PER_DAY, INVALID_PER_DAY = 2, 1
INVALID_REASON = "intent key looks like an e-mail address; use a feature name such as 'billing.v1'"
QUERIES = {"billing.v1": "Why was my card charged twice this month?",
           "search.v1": "Find me hiking boots under 100 dollars",
           "returns.v1": "How do I send back a jacket that does not fit?",
           "account.v1": "I forgot my password and cannot log in"}


def rows_for(tenant: str, *, intents: tuple[str, ...] = INTENTS, per_day: int = PER_DAY, days: int = DAYS,
             seed: int = 0) -> list[dict]:
    rng = random.Random(f"{tenant}:{seed}")
    rows = []

    def add(day: int, intent: str | None, query: str, **extra) -> None:
        start = NOW - timedelta(days=days - day) + timedelta(seconds=rng.uniform(60, 86_000))
        row = span_row(f"{rng.getrandbits(128):032x}", start, intent=intent, query=query, answer="Done.",
                       workload=extra.pop("workload", None), status=extra.pop("status", "UNSET"))
        row.update(extra)
        rows.append(row)

    for day in range(days):
        for intent in intents:
            for i in range(per_day):
                add(day, intent, f"{QUERIES.get(intent, intent)} (#{i})")
        for i in range(MISSING_PER_DAY):
            add(day, None, f"Something without a key (#{i})")
        for i in range(INVALID_PER_DAY):
            add(day, None, f"A call whose key was refused (#{i})", intent_key_error=INVALID_REASON,
                attributes=json.dumps({"verdict.intent_key": "<EMAIL>"}))
        add(day, "billing.v1", "a judge call", workload="judge")  # the daemon's own calls: never candidates
        add(day, "search.v1", "a failed call", status="ERROR")  # failed calls are not graded either
    return rows


def build(data_dir: Path, tenants: tuple[str, ...] = ("acme", "globex"), **kwargs) -> Path:
    for tenant in tenants:
        write_rows(data_dir, tenant, rows_for(tenant, **kwargs))
    return data_dir


def expected_keys(data_dir: Path, tenant: str, before: datetime) -> Counter:
    """Independent reference: traces per intent key straight from the Parquet files (pyarrow, no SQL)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    counts: Counter = Counter()
    for path in sorted((data_dir / "spans" / f"tenant={tenant}").rglob("*.parquet")):
        table = pq.read_table(path, columns=["start_time", "workload", "status_code", "intent_key", "intent_key_error"])
        table = table.set_column(0, "start_time", table.column("start_time").cast(pa.int64()))
        for row in table.to_pylist():
            started = datetime.fromtimestamp(row["start_time"] / 1e9, UTC)
            if row["workload"] == "judge" or row["status_code"] == "ERROR" or started >= before:
                continue
            key = row["intent_key"] or ("<invalid>" if row["intent_key_error"] else "<missing>")
            counts[key] += 1
    return counts
