"""Retention: drop whole date partitions (spans and logs) older than N days (UTC), per tenant."""

from __future__ import annotations

import datetime as dt
import logging
import shutil
from pathlib import Path

from collector import lake

log = logging.getLogger("verdict.collector")


def expire(data_dir: Path, retention_days: int, today: dt.date | None = None) -> list[str]:
    """Delete partitions whose date is more than `retention_days` before today; returns them."""
    if retention_days <= 0:
        return []
    today = today or dt.datetime.now(dt.UTC).date()
    cutoff = today - dt.timedelta(days=retention_days)
    removed = []
    for table, tenant, date, directory in [(t, *p) for t in lake.TABLES for p in lake.partitions(data_dir, t)]:
        try:
            day = dt.date.fromisoformat(date)
        except ValueError:
            log.warning("ignoring unexpected partition directory %s", directory)
            continue
        if day < cutoff:
            shutil.rmtree(directory)
            lake.fsync_dir(directory.parent)
            removed.append(f"{'' if table == 'spans' else table + '/'}tenant={tenant}/date={date}")
            log.info("retention: removed %s", directory)
    return removed
