"""Retention: drop whole date partitions (spans and logs) older than N days (UTC), per tenant.

A partition is retired (collector.retire): hidden from readers at once, deleted after the grace period."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

from collector import lake, retire

log = logging.getLogger("verdict.collector")


def expire(data_dir: Path, retention_days: int, today: dt.date | None = None) -> list[str]:
    """Retire partitions whose date is more than `retention_days` before today; returns those newly retired."""
    if retention_days <= 0:
        return []
    today = today or dt.datetime.now(dt.UTC).date()
    cutoff = today - dt.timedelta(days=retention_days)
    removed = []
    retired = retire.read(data_dir)
    due = []
    for table, tenant, date, directory in [(t, *p) for t in lake.TABLES for p in lake.partitions(data_dir, t)]:
        try:
            day = dt.date.fromisoformat(date)
        except ValueError:
            log.warning("ignoring unexpected partition directory %s", directory)
            continue
        if day < cutoff and not retired.hides(directory.relative_to(data_dir).as_posix()):
            due.append(directory)
            removed.append(f"{'' if table == 'spans' else table + '/'}tenant={tenant}/date={date}")
            log.info("retention: expired %s (hidden now, deleted after the grace period)", directory)
    retire.retire(data_dir, due)
    return removed
