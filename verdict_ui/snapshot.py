"""A tenant's read-only snapshot: the same in-memory DuckDB `verdict sql` opens.

`collector.views.open_scoped` gives the span views (`spans`, `llm_calls`) locked to the tenant's
partition directory; `verdict_daemon.store.views.add_state_views` copies the tenant's `judgments`,
`drift_runs`, `drift_signals`, … from state.duckdb (attached read-only, detached again), and one
more extract here, `attempts`, holds the tenant's judgment attempts (the trace page lists every one).
A snapshot is reused for `ttl` seconds, so a page costs queries, not a state copy. Its tables are
TEMP tables, visible on its one connection only, so requests take turns on it (queries take
milliseconds). The daemon's file is never held beyond the copy.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.store import views
from verdict_daemon.store.state import STATE_FILE

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

    from collector.lake_union import LakeUnion

_A = views.STATE_ALIAS
STALE = "stale"  # in a snapshot's memo: a query met a segment purged since it was taken; take a new one
ATTEMPTS = f"""
CREATE TEMP TABLE attempts AS
SELECT a.trace_id, a.attempt_id, a.attempt_no, a.fingerprint, e.name AS evaluator, a.status, a.error_code,
       a.error_message, a.judged_at, a.input_tokens, a.output_tokens, a.cost_usd
FROM {_A}.judgment_attempts a
LEFT JOIN {_A}.evaluators e ON e.tenant_id = a.tenant_id AND e.fingerprint = a.fingerprint
WHERE a.tenant_id = $tenant
"""
EMPTY_ATTEMPTS = """
CREATE TEMP TABLE attempts (trace_id VARCHAR, attempt_id VARCHAR, attempt_no INTEGER, fingerprint VARCHAR,
    evaluator VARCHAR, status VARCHAR, error_code VARCHAR, error_message VARCHAR, judged_at TIMESTAMP,
    input_tokens BIGINT, output_tokens BIGINT, cost_usd DOUBLE)
"""


@dataclass(frozen=True)
class Snapshot:
    tenant: TenantId
    taken: float  # time.monotonic() when taken
    con: DuckDBPyConnection  # the scoped connection
    source: LakeUnion  # the listing its views name
    days: tuple[date, ...]  # the tenant's span date partitions, newest first (pages read the newest first)
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False)
    memo: dict[str, object] = field(default_factory=dict, compare=False)  # values derived once per snapshot

    @contextlib.contextmanager
    def reading(self) -> Iterator[DuckDBPyConnection]:
        """The connection, one request at a time. A query that met a segment this snapshot listed, purged since
        (a page read after the delete grace), marks the snapshot stale and raises Stale: the page is served again
        from a new snapshot (verdict_ui.app)."""
        from collector.lake_reads import Stale, may_be_purged, vanished

        with self.lock:
            try:
                yield self.con
            except Exception as exc:
                if not (may_be_purged(exc) and vanished(self.source)):
                    raise
                self.memo[STALE] = True
                raise Stale(str(exc)) from exc


def take(data_dir: Path, tenant: TenantId, lock_timeout: float) -> Snapshot:
    from collector.lake_reads import LakeChanged, read_fresh
    from collector.lake_union import LakeUnion
    from collector.views import open_scoped, tenant_dir

    def prepare(con) -> None:
        views.add_state_views(con, data_dir, tenant, lock_timeout=lock_timeout)
        state = Path(data_dir).resolve() / STATE_FILE
        if not state.exists():
            con.execute(EMPTY_ATTEMPTS)
            return
        views.attach_state(con, state, lock_timeout)
        try:
            con.execute(ATTEMPTS, {"tenant": tenant})
        finally:
            con.execute(f"DETACH {_A}")

    taken = time.monotonic()  # before the files are listed: compaction's delete grace runs from then
    try:  # the views read the footers of the files they name: a purge since is read again (collector.lake_reads)
        source, con = read_fresh(LakeUnion.of(Path(data_dir)), lambda lake: (lake, open_scoped(lake, tenant, prepare=prepare)))
    except LakeChanged as exc:
        raise DaemonError("storage_error", f"span lake of tenant {tenant}: {exc}") from None
    days = sorted((date.fromisoformat(p.name.removeprefix("date=")) for p in tenant_dir(Path(data_dir), tenant).glob("date=*")
                   if p.is_dir()), reverse=True)
    return Snapshot(tenant, taken, con, source, tuple(days))


class Snapshots:
    """The latest snapshot per tenant, retaken when older than `ttl` seconds or after a write."""

    def __init__(self, data_dir: Path, *, ttl: float, lock_timeout: float) -> None:
        self.data_dir, self.ttl, self.lock_timeout = data_dir, ttl, lock_timeout
        self._latest: dict[TenantId, Snapshot] = {}
        self._lock = threading.Lock()

    def get(self, tenant: TenantId) -> Snapshot:
        with self._lock:  # one copy of the state at a time; concurrent requests wait for it
            current = self._latest.get(tenant)
            if current is None or STALE in current.memo or time.monotonic() - current.taken > self.ttl:
                current = self._latest[tenant] = take(self.data_dir, tenant, self.lock_timeout)
            return current

    def invalidate(self, tenant: TenantId) -> None:
        with self._lock:
            self._latest.pop(tenant, None)
