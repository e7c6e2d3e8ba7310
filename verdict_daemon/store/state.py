"""state.duckdb: sampled work, judgment attempts, verdicts, evaluators, drift runs, alerts, cursors.

DuckDB lets one process hold a database file at a time, so the store never keeps it open: every
operation is one short transaction (connect, work, commit, close), and no transaction spans a model
call. A file locked by another process is retried with backoff until `lock_timeout`, then
`DaemonError("storage_locked")`. Every table has `tenant_id` and every read takes a tenant.

A broken file is `StateFileBroken` (`state_corrupt`), never retried and never mended: one that does not
open, fails a checksum, lacks the schema, or (once this store has opened it) was deleted or replaced.
The store creates the file only on its first open, so a file deleted under a running process is not
silently recreated empty over the history the rest of the data dir still refers to.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError

log = logging.getLogger("verdict.daemon")

STATE_FILE = "state.duckdb"

# Forward migrations: MIGRATIONS[i] takes the schema from version i to i + 1. Never edit a released
# step; append a new one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE evaluators (
            tenant_id VARCHAR NOT NULL, fingerprint VARCHAR NOT NULL, name VARCHAR NOT NULL,
            definition JSON NOT NULL, registered_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, fingerprint))""",
        """CREATE TABLE sampled_traces (
            tenant_id VARCHAR NOT NULL, trace_id VARCHAR NOT NULL, span_id VARCHAR NOT NULL,
            intent_key VARCHAR, stratum VARCHAR NOT NULL, window_start TIMESTAMP NOT NULL,
            started_at TIMESTAMP NOT NULL, query VARCHAR, response VARCHAR, context VARCHAR,
            sampled_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, trace_id))""",
        """CREATE TABLE judgment_attempts (
            tenant_id VARCHAR NOT NULL, attempt_id VARCHAR NOT NULL, trace_id VARCHAR NOT NULL,
            fingerprint VARCHAR NOT NULL, attempt_no INTEGER NOT NULL, status VARCHAR NOT NULL,
            error_code VARCHAR, error_message VARCHAR, judged_at TIMESTAMP NOT NULL,
            input_tokens BIGINT, output_tokens BIGINT, cost_usd DOUBLE, judge_run_id VARCHAR NOT NULL,
            PRIMARY KEY (tenant_id, attempt_id))""",
        """CREATE TABLE dimension_verdicts (
            tenant_id VARCHAR NOT NULL, attempt_id VARCHAR NOT NULL, dimension VARCHAR NOT NULL,
            value VARCHAR, score DOUBLE, reason VARCHAR,
            PRIMARY KEY (tenant_id, attempt_id, dimension))""",
        """CREATE TABLE cluster_assignments (
            tenant_id VARCHAR NOT NULL, trace_id VARCHAR NOT NULL, cluster VARCHAR NOT NULL,
            method VARCHAR NOT NULL, reason VARCHAR, assigned_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, trace_id))""",
        """CREATE TABLE drift_runs (
            tenant_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, fingerprint VARCHAR NOT NULL,
            as_of TIMESTAMP NOT NULL, current_start TIMESTAMP NOT NULL, baseline_start TIMESTAMP NOT NULL,
            baseline_end TIMESTAMP NOT NULL, alpha DOUBLE NOT NULL, effect_gate DOUBLE NOT NULL,
            min_usable INTEGER NOT NULL, judgments BIGINT NOT NULL, cells INTEGER NOT NULL,
            tested INTEGER NOT NULL, signals INTEGER NOT NULL, input_digest VARCHAR NOT NULL,
            completed_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, run_id))""",
        """CREATE TABLE drift_signals (
            tenant_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, signal_id VARCHAR NOT NULL,
            fingerprint VARCHAR NOT NULL, cluster VARCHAR NOT NULL, dimension VARCHAR NOT NULL,
            kind VARCHAR NOT NULL, baseline_level DOUBLE, current_level DOUBLE,
            baseline_n BIGINT, current_n BIGINT, delta DOUBLE, delta_low DOUBLE, delta_high DOUBLE,
            p_value DOUBLE, adjusted_p DOUBLE, examples JSON,
            PRIMARY KEY (tenant_id, run_id, signal_id))""",
        """CREATE TABLE alert_deliveries (
            tenant_id VARCHAR NOT NULL, signal_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL,
            status VARCHAR NOT NULL, attempts INTEGER NOT NULL, last_error VARCHAR,
            next_attempt_at TIMESTAMP, delivered_at TIMESTAMP,
            PRIMARY KEY (tenant_id, signal_id))""",
        """CREATE TABLE cursors (
            tenant_id VARCHAR NOT NULL, name VARCHAR NOT NULL, value VARCHAR NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, name))""",
    ),
    (
        """CREATE TABLE sentinel_health (
            tenant_id VARCHAR NOT NULL, check_id VARCHAR NOT NULL, evaluator VARCHAR NOT NULL,
            fingerprint VARCHAR NOT NULL, sentinel_fingerprint VARCHAR NOT NULL, sentinel_file VARCHAR NOT NULL,
            status VARCHAR NOT NULL, reason VARCHAR NOT NULL, examples INTEGER NOT NULL, usable INTEGER NOT NULL,
            errors INTEGER NOT NULL, passed INTEGER NOT NULL, pass_rate DOUBLE, pass_rate_low DOUBLE,
            pass_rate_high DOUBLE, threshold DOUBLE NOT NULL, minimum_examples INTEGER NOT NULL,
            dimensions JSON NOT NULL, results JSON NOT NULL, checked_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, check_id))""",
    ),
    # -- cluster registry migration (issue 7) goes here --
    (  # cluster registry (verdict_daemon.clustering): analysis index, immutable versions, active pointer
        """CREATE TABLE analysis_index (
            tenant_id VARCHAR NOT NULL, trace_id VARCHAR NOT NULL, span_id VARCHAR NOT NULL,
            started_at TIMESTAMP NOT NULL, workload VARCHAR, intent_key VARCHAR, key_status VARCHAR NOT NULL,
            key_reason VARCHAR, first_user_message VARCHAR, content_hash VARCHAR, indexed_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, trace_id))""",
        """CREATE TABLE cluster_versions (
            tenant_id VARCHAR NOT NULL, version_id VARCHAR NOT NULL, strategy VARCHAR NOT NULL,
            experimental BOOLEAN NOT NULL, status VARCHAR NOT NULL, cutoff TIMESTAMP NOT NULL,
            target_workload VARCHAR, params JSON NOT NULL, definition JSON NOT NULL,
            definition_fingerprint VARCHAR NOT NULL, preview JSON NOT NULL, gate JSON, validation JSON,
            created_by VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, version_id))""",
        """CREATE TABLE registry_clusters (
            tenant_id VARCHAR NOT NULL, version_id VARCHAR NOT NULL, cluster_id VARCHAR NOT NULL,
            kind VARCHAR NOT NULL, intent_key VARCHAR, size BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, version_id, cluster_id))""",
        """CREATE TABLE registry_assignments (
            tenant_id VARCHAR NOT NULL, version_id VARCHAR NOT NULL, trace_id VARCHAR NOT NULL,
            started_at TIMESTAMP NOT NULL, cluster_id VARCHAR NOT NULL, method VARCHAR NOT NULL, reason VARCHAR,
            assigned_at TIMESTAMP NOT NULL)""",
        # No key on registry_assignments: an index costs ~4x on bulk assignment; writers add only rows the
        # version lacks (ANTI JOIN) inside one transaction, and DuckDB's file lock serialises writers.
        """CREATE TABLE registry_pointer (
            tenant_id VARCHAR NOT NULL, version_id VARCHAR NOT NULL, generation BIGINT NOT NULL,
            updated_by VARCHAR NOT NULL, updated_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id))""",
        """CREATE TABLE registry_events (
            tenant_id VARCHAR NOT NULL, seq BIGINT NOT NULL, version_id VARCHAR, action VARCHAR NOT NULL,
            actor VARCHAR NOT NULL, generation BIGINT, detail JSON NOT NULL, recorded_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, seq))""",
        """CREATE TABLE cluster_display_names (
            tenant_id VARCHAR NOT NULL, cluster_id VARCHAR NOT NULL, display_name VARCHAR NOT NULL,
            updated_by VARCHAR NOT NULL, updated_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, cluster_id))""",
    ),
    # -- review queue migration (issue 8) goes here --
    (  # the human review queue (verdict_daemon.review): routed items and immutable reviewer labels
        """CREATE TABLE review_items (
            tenant_id VARCHAR NOT NULL, item_id VARCHAR NOT NULL, trace_id VARCHAR NOT NULL,
            fingerprint VARCHAR NOT NULL, reasons JSON NOT NULL, flagged JSON NOT NULL,
            queued_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, item_id))""",
        """CREATE TABLE review_labels (
            tenant_id VARCHAR NOT NULL, item_id VARCHAR NOT NULL, dimension VARCHAR NOT NULL,
            revision INTEGER NOT NULL, label VARCHAR NOT NULL, critique VARCHAR NOT NULL,
            reviewer VARCHAR NOT NULL, labelled_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, item_id, dimension, revision))""",
    ),
    (  # an ensemble verdict's tally as data, {"FAIL": 2, "PASS": 1} (review routing reads it), back-filled
        # once from the tally text earlier versions stored as the reason of ensemble verdicts
        "ALTER TABLE dimension_verdicts ADD COLUMN votes JSON",
        r"""UPDATE dimension_verdicts SET votes = to_json(map(
                regexp_extract_all(reason, '(\w+)=\d+', 1), regexp_extract_all(reason, '\w+=(\d+)', 1)::INTEGER[]))
            WHERE regexp_full_match(reason, 'votes \w+=\d+(, \w+=\d+)*') AND EXISTS (
                SELECT 1 FROM judgment_attempts a JOIN evaluators e USING (tenant_id, fingerprint)
                WHERE a.tenant_id = dimension_verdicts.tenant_id AND a.attempt_id = dimension_verdicts.attempt_id
                  AND e.definition->>'kind' = 'ensemble')""",
    ),
    (  # the detector's own MDE per signal (DriftCell.mde_adjusted); NULL for signals stored before it and for
        # coverage drops, whose MDE the report recomputes or leaves out (verdict_daemon.report.gather.mde)
        "ALTER TABLE drift_signals ADD COLUMN mde DOUBLE",
    ),
    (  # small cells (drift.small_cell_weeks): the start of the longer current window a run tested them over
        # (NULL: none), and per signal whether its cell was one of them (NULL for signals stored before)
        "ALTER TABLE drift_runs ADD COLUMN small_cell_start TIMESTAMP",
        "ALTER TABLE drift_signals ADD COLUMN small_cell BOOLEAN",
    ),
    (  # the model requests an attempt sent (retries and re-asked replies included); NULL for attempts stored
        # before it (the report's spend shows requests per attempt from the attempts that have it)
        "ALTER TABLE judgment_attempts ADD COLUMN requests BIGINT",
    ),
    (  # the attempts whose gen_ai.evaluation.result records an OTLP endpoint acknowledged ([export.evaluations]):
        # an attempt without a row here is sent (again) by the next export run
        """CREATE TABLE evaluation_exports (
            tenant_id VARCHAR NOT NULL, attempt_id VARCHAR NOT NULL, records INTEGER NOT NULL,
            exported_at TIMESTAMP NOT NULL,
            PRIMARY KEY (tenant_id, attempt_id))""",
    ),
    (  # a sampled turn's conversation so far (service/history.py, JSON), stored so that a judge run after a
        # restart reads the same history; NULL: in no conversation, history off, or sampled before it
        "ALTER TABLE sampled_traces ADD COLUMN history JSON",
    ),
    (  # every cell a drift run saw (issue 27): its n, tested or why not (with the current window that would test
        # it), and for a tested cell the detector's own MDE (DriftCell.mde_adjusted), so the report shows the power
        # of stable cells too; runs stored before have no rows (the report then infers "not tested" from counts)
        """CREATE TABLE drift_cells (
            tenant_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, fingerprint VARCHAR NOT NULL,
            cluster VARCHAR NOT NULL, dimension VARCHAR NOT NULL, kind VARCHAR NOT NULL, status VARCHAR NOT NULL,
            baseline_n BIGINT NOT NULL, current_n BIGINT NOT NULL, not_tested VARCHAR, window_to_test_days INTEGER,
            mde DOUBLE, small_cell BOOLEAN NOT NULL,
            PRIMARY KEY (tenant_id, run_id, cluster, dimension))""",
    ),
    (  # what a sampled row is (issue 29, item 3): a trace ('turn', every row stored before) or a closed conversation
        # judged as a whole ('conversation', its trace_id `conversation:<first trace id>`); an evaluator judges the
        # rows of its own unit
        "ALTER TABLE sampled_traces ADD COLUMN unit VARCHAR DEFAULT 'turn'",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)
TABLES = frozenset({"schema_version", *re.findall(r"CREATE TABLE (\w+)", " ".join(s for m in MIGRATIONS for s in m))})

# What DuckDB says when a file's bytes are not what it wrote (header, block checksums, length).
_CORRUPTION = ("Corrupt database file", "not a valid DuckDB database file", "Could not read enough bytes")

# DuckDB resolves concurrent in-process transactions optimistically (a conflicting INSERT OR IGNORE
# fails instead of waiting), so transactions on one file are serialised within the process.
_file_locks: dict[Path, threading.Lock] = {}
_file_locks_guard = threading.Lock()


def _file_lock(path: Path) -> threading.Lock:
    with _file_locks_guard:
        return _file_locks.setdefault(path.resolve(), threading.Lock())


def is_lock_conflict(exc: Exception) -> bool:
    text = str(exc)
    return "Could not set lock" in text or "Conflicting lock" in text


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


class StateFileBroken(DaemonError):
    """The state file is corrupt, not Verdict's, or gone: no retry mends it (the daemon stops)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__("state_corrupt", f"state file {path} {reason}", {"file": str(path)})


# A DuckDB file is three 4 KiB headers, then its blocks: one cut short lacks blocks its header counts
_FILE_HEADERS = 3 * 4096

_MEND = "nothing was recreated: restore it from a backup, or move it away to start with an empty state"


class StateStore:
    """Short transactions over `<data_dir>/state.duckdb`; see the module docstring."""

    def __init__(self, data_dir: Path, *, lock_timeout: float = 10.0) -> None:
        self.path = Path(data_dir) / STATE_FILE
        self.lock_timeout = lock_timeout
        self._migrated = False
        # A descriptor held on the file this store opened: it keeps the inode alive, so a file created at the
        # path later can never reuse its number and pass for it (comparing (device, inode) alone did, under load)
        self._pin: int | None = None

    def _pin_file(self) -> None:
        if self._pin is not None:
            return
        try:
            self._pin = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            raise StateFileBroken(self.path, "does not exist (the daemon creates it when it first starts)") from None
        weakref.finalize(self, os.close, self._pin)

    def _require_same_file(self) -> None:
        """Once opened, the file must stay: connecting to a deleted one would create it empty."""
        if self._pin is None:
            return
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            raise StateFileBroken(self.path, f"was deleted while in use; {_MEND}") from None
        except OSError as exc:
            raise StateFileBroken(self.path, f"cannot be examined ({exc.strerror})") from None
        pinned = os.fstat(self._pin)
        if (stat.st_dev, stat.st_ino) != (pinned.st_dev, pinned.st_ino):
            if pinned.st_nlink == 0:
                raise StateFileBroken(self.path, f"was deleted while in use; {_MEND}")
            raise StateFileBroken(self.path, "was replaced by another file while in use; restart to use the new one")

    def _connect(self, *, read_only: bool = False):
        import duckdb

        self._require_same_file()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.02
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only)
            except duckdb.Error as exc:
                if not is_lock_conflict(exc):  # nothing else that keeps a file from opening goes away by itself
                    raise StateFileBroken(self.path, f"cannot be opened ({_first_line(exc)}); {_MEND}") from None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DaemonError(
                        "storage_locked",
                        f"{self.path} is held by another process (still locked after {self.lock_timeout:g} s)",
                    ) from None
                time.sleep(min(left, delay * (0.5 + random.random())))  # jitter: waiters do not retry in step
                delay = min(delay * 2, 0.5)
                continue
            try:
                self._require_same_file()  # deleted between the check above and the connect
            except StateFileBroken:
                con.close()
                raise
            return con

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """A connection inside BEGIN … COMMIT (rolled back on error), closed on exit."""
        with _file_lock(self.path), self._connection() as con:
            yield con

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        import duckdb

        con = self._connect()
        try:
            if not self._migrated:
                self._migrate(con)
                self._migrated = True
                self._pin_file()
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        except duckdb.Error as exc:
            raise self._storage_error(exc) from None
        finally:
            con.close()

    def _storage_error(self, exc: Exception) -> DaemonError:
        if any(marker in str(exc) for marker in _CORRUPTION):
            return StateFileBroken(self.path, f"is corrupt ({_first_line(exc)}); {_MEND}")
        return DaemonError("storage_error", f"{self.path}: {_first_line(exc)}")

    def _migrate(self, con) -> None:
        con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TIMESTAMP NOT NULL)")
        current = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]
        if current > SCHEMA_VERSION:
            raise DaemonError("storage_error", f"{self.path} has schema version {current}; this verdict "
                              f"understands up to {SCHEMA_VERSION} (upgrade verdict)")
        for version in range(current, SCHEMA_VERSION):
            con.execute("BEGIN TRANSACTION")
            for statement in MIGRATIONS[version]:
                con.execute(statement)
            con.execute("INSERT INTO schema_version VALUES (?, now()::TIMESTAMP)", [version + 1])
            con.execute("COMMIT")
            log.info("state: migrated %s to schema version %d", self.path, version + 1)

    def check(self) -> int:
        """The integrity check each daemon job starts with, cheap (no table is read): the file this store
        opened is still there, it opens (DuckDB verifies its header and catalog checksums), and it holds
        this version's schema with every table. A bad block in a table shows when it is read, as
        StateFileBroken too. Returns the schema version."""
        with self.transaction() as con:
            return self._schema(con)

    def verify(self) -> int:
        """check(), then every table read in full (every block's checksum), on a read-only connection: the
        daemon's start and `verdict daemon --check`. It never creates or migrates the file."""
        import duckdb

        self._pin_file()  # from now on this is the file: deleted or replaced later, it is not ours
        with _file_lock(self.path):
            con = self._connect(read_only=True)
        try:
            version = self._schema(con)
            for table in sorted(TABLES):
                con.execute(f"SELECT bit_xor(hash({table})) FROM {table}").fetchall()
            return version
        except duckdb.Error as exc:
            raise self._storage_error(exc) from None
        finally:
            con.close()

    def _schema(self, con) -> int:
        tables = {name for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall()}
        self._require_whole(con, tables)
        if "schema_version" not in tables:
            raise StateFileBroken(self.path, f"is not a Verdict state file (no schema_version table); {_MEND}")
        version = cast(int, con.execute("SELECT max(version) FROM schema_version").fetchone()[0])
        if version != SCHEMA_VERSION:
            raise StateFileBroken(self.path, f"has schema version {version}; this verdict expects {SCHEMA_VERSION}")
        if missing := TABLES - tables:
            raise StateFileBroken(self.path, f"lacks the table(s) {', '.join(sorted(missing))}; {_MEND}")
        return version

    def _require_whole(self, con, tables: set[str]) -> None:
        """A file cut short can still open and answer from its first blocks. Every block the catalog or a
        table points at must lie inside the file (their positions, not their data: no table is read); the
        header's block count is no bound, as trailing free blocks are cut off the file."""
        blocks = " UNION ALL ".join(
            ["SELECT block_id FROM pragma_metadata_info()"]
            + [f"SELECT greatest(block_id, list_max(additional_block_ids)) FROM pragma_storage_info('{table}')"
               for table in sorted(tables)])
        block_size, last = con.execute(
            f"SELECT (SELECT block_size FROM pragma_database_size() WHERE database_name = current_database()), "
            f"max(block_id) FROM ({blocks}) AS b(block_id)").fetchone()
        size = os.fstat(self._pin).st_size if self._pin is not None else os.stat(self.path).st_size
        if last is not None and size < (needed := _FILE_HEADERS + (last + 1) * block_size):
            raise StateFileBroken(self.path, f"is truncated ({size} bytes; its block {last} ends at {needed}); {_MEND}")

    def schema_version(self) -> int:
        with self.transaction() as con:
            return cast(int, con.execute("SELECT max(version) FROM schema_version").fetchone()[0])  # an aggregate: one row

    # --- cursors --------------------------------------------------------------------------------
    def cursor(self, tenant: TenantId, name: str) -> str | None:
        with self.transaction() as con:
            row = con.execute("SELECT value FROM cursors WHERE tenant_id = ? AND name = ?",
                              [tenant, name]).fetchone()
        return row[0] if row else None

    def set_cursor(self, tenant: TenantId, name: str, value: str) -> None:
        with self.transaction() as con:
            con.execute("INSERT OR REPLACE INTO cursors VALUES (?, ?, ?, now()::TIMESTAMP)",
                        [tenant, name, value])


def insert_rows(con, table: str, columns: tuple[str, ...], rows: list[tuple], where: str = "",
                params: list | None = None) -> None:
    """Bulk `INSERT OR IGNORE` through one Arrow batch (executemany is one statement per row).

    Every column is given; `now()` is not used so that callers choose the timestamps they mean.
    `where` (with `params`) filters the incoming rows, which the SQL calls `_incoming`."""
    import pyarrow as pa

    if not rows:
        return
    batch = pa.table({name: pa.array(list(values)) for name, values in zip(columns, zip(*rows, strict=True), strict=True)})
    con.register("_incoming", batch)
    try:
        con.execute(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) SELECT {', '.join(columns)} FROM _incoming "
                    f"{'WHERE ' + where if where else ''}", params or [])
    finally:
        con.unregister("_incoming")
