"""A read of the lake that meets a segment purged after it listed it starts again from a fresh listing.

A reader's snapshot (collector.lake_source) names files that compaction, retention, shipping or the lake
compactor may retire meanwhile; they stay for the grace period (`--delete-grace-s`, `--lake-delete-grace-s`), so a
read slower than that (a loaded machine, a long lookback, a slow store) can open a file after its purge. Such a
read is repeated whole over a fresh snapshot, which no longer lists what was retired and names the replacements
(each span once: every attempt reads one consistent snapshot, and a failed attempt's rows are dropped). Only a
failure after which a listed segment is really gone is retried, so a missing lake (nothing listed), a permission
error or a corrupt segment (still there) fails at once, as before. After ATTEMPTS such failures the read stops with
LakeChanged, which says to raise the grace. A reader that keeps its connection across calls (the UI's snapshot)
raises Stale itself when a query meets such a purge, and is run again by retry_stale.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from collector.lake_union import LakeUnion, read_errors

ATTEMPTS = 3  # a retry fails again only if it too outlasts the grace: then the grace is too short for this read
T = TypeVar("T")
log = logging.getLogger(__name__)


class LakeChanged(Exception):
    """Every attempt of a read met a segment its snapshot listed deleted before it was read."""

    def __init__(self, attempts: int, cause: BaseException) -> None:
        first = (str(cause).splitlines() or [""])[0][:200]
        self.attempts = attempts
        super().__init__(
            f"the lake changed under the read: segments it listed were deleted before it read them, in {attempts} "
            f"attempt(s) ({first}); the read outlasts their delete grace after compaction, retention or shipping: "
            "raise --delete-grace-s (and --lake-delete-grace-s, [retention] delete_grace_seconds) above the "
            "longest read")


class Stale(Exception):
    """A read met a segment its snapshot listed, deleted since (the cause says how it failed); read it again."""


def may_be_purged(exc: BaseException) -> bool:
    """Whether `exc` is how opening a purged segment fails: DuckDB's IO error (a local file), the plain duckdb.Error
    DuckDB raises for an exception of a Python filesystem (the store's, whose object is gone), the file system's
    and the store's own errors. Whether a segment really vanished is then asked of the listing (vanished)."""
    import duckdb

    return isinstance(exc, (duckdb.IOException, *read_errors())) or type(exc) is duckdb.Error


def retry_stale(read: Callable[[], T], attempts: int = ATTEMPTS) -> T:
    """`read()`, again each time it raises Stale (it takes a new snapshot itself), LakeChanged after `attempts`."""
    for attempt in range(1, attempts + 1):
        try:
            return read()
        except Stale as exc:
            if attempt == attempts:
                raise LakeChanged(attempts, exc.__cause__ or exc) from exc
            log.warning("a segment was deleted while a read used it (the read outlasted the delete grace); "
                        "reading again from a fresh listing (attempt %d of %d)", attempt + 1, attempts)
    raise AssertionError("unreachable")  # the loop returns or raises


def read_fresh(lake: LakeUnion, read: Callable[[LakeUnion], T], attempts: int = ATTEMPTS) -> T:
    """`read(snapshot)`, the first over `lake` (its listings, if taken, are kept), again over a fresh snapshot
    when it failed because a segment it listed has vanished since; LakeChanged after `attempts` such failures."""
    snapshots = [lake]

    def attempt() -> T:
        snapshot = snapshots[-1]
        try:
            return read(snapshot)
        except Exception as exc:
            if not (may_be_purged(exc) and vanished(snapshot)):
                raise
            snapshots.append(snapshot.fresh())
            raise Stale(str(exc)) from exc

    return retry_stale(attempt, attempts)


def vanished(lake: LakeUnion) -> bool:
    """LakeUnion.vanished, False when the lake cannot even be listed now (the original error says why)."""
    try:
        return lake.vanished()
    except read_errors():
        return False
