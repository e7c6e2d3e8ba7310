"""`verdict sql`: run SQL over one tenant's span lake, or the union of its lakes (local data dirs and object
stores, read as collector.lake_union reads them: each segment once); table, CSV or JSON output, streamed
(collector.sql_output), within the limits of collector.sql_limits. The command (verdict_daemon.cli.sql) builds
the union from --data-dir, --lake-dir and --lake-url.

Exit codes: 0 ok; 2 usage (and invalid_config: a bad --lake-url or a missing --lake-dir; storage_error: the
object store or the state file cannot be read); 3 invalid_tenant; 4 no_data_dir; 5 query_error (also the
timeout and running out of memory); 6 access_denied (verdict.cli_errors.EXIT_CODES). Errors are the one
envelope {"error": {"code": ..., "message": ...}} on stderr. Nothing is written before the query's first
batch of rows is ready, so a query that fails to plan, bind or run to its first rows leaves stdout empty; a
failure while later batches stream (the timeout, memory) leaves the rows before it, and the message says so.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collector import sql_output
from collector.lake_reads import LakeChanged, may_be_purged, read_fresh, vanished
from collector.lake_source import LakeSource
from collector.lake_union import LakeUnion, read_errors
from collector.sql_limits import (
    DEFAULT_MEMORY_LIMIT,
    DEFAULT_SPILL_LIMIT,
    DEFAULT_TIMEOUT_S,
    QueryLimits,
    Watchdog,
    max_rows,
    memory_limit,
    spill_limit,
    timeout_seconds,
)
from collector.views import open_scoped, view_statements
from verdict.cli_errors import CliError, ErrorCode
from verdict.cli_runner import add_data_dir, add_tenant, checked_tenant
from verdict.tenancy import LOCAL_TENANT, TenantId

SQL_ERROR_CODES: tuple[ErrorCode, ...] = ("invalid_tenant", "no_data_dir", "query_error", "access_denied")  # exits 3-6
BATCH_ROWS = 1024  # rows Python holds at a time
DEFAULT_LIMITS = QueryLimits()


class SqlCommandError(CliError):
    """A `verdict sql` failure: a code of SQL_ERROR_CODES (all in the one closed set) and its message."""


_EPILOG = f"""\
views: spans (every span once; schema in docs/collector.md), llm_calls (GenAI inference spans
with typed columns: request_model, input_tokens, intent_key, latency_ms, ...), conversation_turns and
conversations (docs/conversations.md; macros conversations_at(as_of, inactivity_minutes) and
conversation_turns_within(inactivity_minutes); one key's: span_conversation_keys, conversation_turns_of,
conversations_among), evaluations (gen_ai.evaluation.result log records,
each once; docs/evaluations.md), scoped to --tenant.
Only SELECT statements run; files outside the tenant's partition directories (in every lake read)
cannot be read. --lake-dir and --lake-url add lakes: the query sees their union, each span once.
Limits: the query is cancelled after --timeout-s (default {DEFAULT_TIMEOUT_S:g}), DuckDB may use
--memory-limit (default {DEFAULT_MEMORY_LIMIT} of RAM) and past it spill up to --spill-limit (default
{DEFAULT_SPILL_LIMIT}) to a private directory under $TMPDIR, removed when the query ends; the output streams, so
Python's memory stays small for any result; --max-rows N writes the first N rows and says on stderr
(and in the table's last line) when there were more.
example: verdict sql "SELECT intent_key, count(*) FROM llm_calls GROUP BY 1" --tenant acme
exit codes: 0 ok, 2 usage (also a bad --lake-url or missing --lake-dir, or an object store or the state
file that cannot be read), 3 invalid_tenant, 4 no_data_dir (the data dir, read alone, does not exist),
5 query_error (also past --timeout-s, out of memory or past --spill-limit), 6 access_denied (error: one line
{{"error": {{"code", "message"}}}} on stderr).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("query", nargs="?", help="SQL over the views `spans` and `llm_calls`")
    add_data_dir(parser, "span lake directory (default: ./verdict-data)", default="./verdict-data")
    add_tenant(parser, f"tenant whose spans are visible (default: {LOCAL_TENANT})", default=LOCAL_TENANT)
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table",
                        help="output format (default: table)")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="--format json")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--timeout-s", type=timeout_seconds, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                        help=f"cancel the query after this many seconds, output included "
                             f"(default: {DEFAULT_TIMEOUT_S:g}): query_error")
    limits.add_argument("--memory-limit", type=memory_limit, default=DEFAULT_MEMORY_LIMIT, metavar="SIZE",
                        help=f"DuckDB's memory limit, e.g. 4GB or 25%% of RAM (default: {DEFAULT_MEMORY_LIMIT.replace('%', '%%')}); "
                             "past it DuckDB spills to disk (--spill-limit)")
    limits.add_argument("--spill-limit", type=spill_limit, default=DEFAULT_SPILL_LIMIT, metavar="SIZE",
                        help=f"most DuckDB may spill to a private directory under $TMPDIR (default: {DEFAULT_SPILL_LIMIT}; "
                             "0: nothing); a query that needs more memory than both is query_error")
    limits.add_argument("--max-rows", type=max_rows, default=None, metavar="N",
                        help="write at most N rows (default: all); stderr says when the result had more")
    parser.add_argument("--print-views", action="store_true",
                        help="print the CREATE VIEW statements (for plain DuckDB) and exit")


@dataclass(frozen=True)
class Result:
    """A query's column names and its rows, fetched batch by batch as they are read."""

    columns: list[str]
    batches: Iterator[list[tuple]]


def _statement_kind(statement) -> str:
    try:
        return str(statement.type.name)
    except ValueError:  # a type DuckDB's Python API cannot name (UPDATE EXTENSIONS): its first words
        return " ".join(statement.query.split()[:2]).upper()


def _require_read_only(con, query: str) -> None:
    """Only SELECT statements: COPY ... TO the tenant's own (readable) directory would write into the lake."""
    import duckdb

    refused = sorted({_statement_kind(s) for s in con.extract_statements(query)} - {duckdb.StatementType.SELECT.name})
    if refused:
        raise SqlCommandError("access_denied", f"verdict sql runs SELECT queries only; refused: {', '.join(refused)}")


def require_data_dir(data_dir: Path) -> None:
    """no_data_dir when the data dir, read alone, does not exist (a typo more often than an empty lake)."""
    try:
        exists = data_dir.is_dir()
    except OSError as exc:  # e.g. a name too long
        raise _lake_error(exc) from None
    if not exists:
        raise SqlCommandError("no_data_dir", f"data directory {data_dir} does not exist")


def execute(lake: LakeUnion | LakeSource | Path, tenant: str, query: str,
            prepare: Callable[[Any], None] | None = None,
            limits: QueryLimits = DEFAULT_LIMITS) -> tuple[list[str], list[tuple]]:
    """Every row of `query` over the tenant's views of `lake` at once (in-process callers; the command
    streams: query_result). Nothing is emitted before the end, so a read that meets a purged segment at any row
    is retried whole."""
    opened = _run(lake, tenant, query, prepare, limits, lambda cursor: [r for rows in _batches(cursor) for r in rows])
    opened.close()
    return opened.columns, opened.rows


@contextmanager
def query_result(lake: LakeUnion | LakeSource | Path, tenant: str, query: str,
                 prepare: Callable[[Any], None] | None = None,
                 limits: QueryLimits = DEFAULT_LIMITS) -> Iterator[Result]:
    """`query` over the tenant's views of `lake` (a data dir must exist: require_data_dir), its rows read
    while the block runs and within `limits` (timeout, memory). Any failure in the block, the query's or
    Python running out of memory while writing, is a SqlCommandError. The first batch is read before the block
    starts, so a read that meets a purged segment up to then (an aggregate reads every file by then) is retried
    from a fresh listing; one met by a later batch, with rows already written, is a query_error that says so."""
    opened = _run(lake, tenant, query, prepare, limits, lambda cursor: cursor.fetchmany(BATCH_ROWS))
    try:
        with _query_errors(lambda: opened.watchdog.fired, limits, opened.snapshot):
            yield Result(opened.columns, opened.batches())
    finally:
        opened.close()


@dataclass(frozen=True)
class _Open:
    """A query running over one snapshot of the lake: its connection and watchdog, its columns, the rows fetched."""

    con: Any
    watchdog: Watchdog
    cursor: Any
    columns: list[str]
    rows: list[tuple]
    snapshot: LakeUnion
    spill: Path | None  # the query's spill directory, removed on close

    def batches(self) -> Iterator[list[tuple]]:
        if not self.columns:
            return
        if self.rows:
            yield self.rows
        yield from _batches(self.cursor)

    def close(self) -> None:
        self.watchdog.stop()  # before close: no interrupt reaches a closed connection
        self.con.close()
        _remove(self.spill)


def _remove(spill: Path | None) -> None:
    if spill is not None:
        shutil.rmtree(spill, ignore_errors=True)


def _run(lake: LakeUnion | LakeSource | Path, tenant: str, query: str, prepare: Callable[[Any], None] | None,
         limits: QueryLimits, fetch: Callable[[Any], list[tuple]]) -> _Open:
    """`query` run and its first rows `fetch`ed over a snapshot of the lake, again over a fresh one when a segment
    the snapshot listed was purged before it was read (collector.lake_reads); the timeout counts from the start."""
    valid = checked_tenant(tenant)
    if isinstance(lake, Path):
        require_data_dir(lake)
    source = LakeUnion.of(lake)
    deadline = time.monotonic() + limits.timeout_s

    watchdogs: list[Watchdog] = []  # one per attempt
    connected = [False]  # whether the last attempt's views were made (else a failure is the lake's)

    def attempt(snapshot: LakeUnion) -> _Open:
        connected[0] = False
        spill = None if limits.spill_limit is None else Path(tempfile.mkdtemp(prefix="verdict-sql-spill-"))
        try:
            con = _connect(snapshot, valid, prepare, limits, spill)
        except BaseException:
            _remove(spill)
            raise
        connected[0] = True
        watchdog = Watchdog(con, max(deadline - time.monotonic(), 0.0))
        watchdogs.append(watchdog)
        try:
            _require_read_only(con, query)
            cursor = con.execute(query)
            columns = [d[0] for d in cursor.description or []]
            return _Open(con, watchdog, cursor, columns, fetch(cursor) if columns else [], snapshot, spill)
        except BaseException:
            watchdog.stop()
            con.close()
            _remove(spill)
            raise

    with _query_errors(lambda: any(w.fired for w in watchdogs), limits):
        try:
            return read_fresh(source, attempt)
        except LakeChanged as exc:
            raise SqlCommandError("query_error", str(exc)) from None
        except _unreadable() as exc:
            if not connected[0]:  # nothing purged: a truncated segment, a directory without permission, the store
                raise _read_error(exc, source) from None
            raise


def _connect(snapshot: LakeUnion, tenant: TenantId, prepare: Callable[[Any], None] | None, limits: QueryLimits,
             spill: Path | None):
    """The tenant's scoped connection with DuckDB's memory and spill limits set (before its configuration is
    locked), spilling to `spill` (a private directory, 0700: tempfile.mkdtemp) if given."""
    import duckdb

    def bounded(con) -> None:
        con.execute(f"SET memory_limit = '{limits.memory_limit}'")  # validated: digits and a unit
        if limits.spill_limit is not None:
            con.execute(f"SET max_temp_directory_size = '{limits.spill_limit}'")  # validated likewise
        if prepare is not None:
            prepare(con)

    try:
        return open_scoped(snapshot, tenant, prepare=bounded, spill=spill)
    except (duckdb.OutOfMemoryException, MemoryError) as exc:
        raise _out_of_memory(exc, limits) from None


def _batches(cursor) -> Iterator[list[tuple]]:
    while True:
        try:
            rows = cursor.fetchmany(BATCH_ROWS)
        except (OverflowError, ValueError) as exc:  # a value Python cannot hold (an INTERVAL of 10^8 years)
            raise SqlCommandError("query_error", f"a result value has no Python equivalent: {_first_line(exc)}") from None
        if not rows:
            return
        yield rows


@contextmanager
def _query_errors(fired: Callable[[], bool], limits: QueryLimits, snapshot: LakeUnion | None = None) -> Iterator[None]:
    """DuckDB's error classes (and Python's MemoryError) as closed errors: PermissionException is
    access_denied; the watchdog's interrupt (`fired`: it was the watchdog's), running out of memory and every other
    error are query_error, a segment of `snapshot` purged while the rows streamed too (with a message that says so)."""
    import duckdb

    try:
        yield
    except duckdb.InterruptException:
        if not fired():
            raise SqlCommandError("query_error", "the query was interrupted") from None
        raise SqlCommandError("query_error", f"the query ran longer than --timeout-s {limits.timeout_s:g} s and "
                                             "was cancelled") from None
    except (duckdb.OutOfMemoryException, MemoryError) as exc:
        raise _out_of_memory(exc, limits) from None
    except duckdb.PermissionException as exc:
        raise SqlCommandError(
            "access_denied", "queries may read only the views (and this tenant's span files): "
            + _first_line(exc)[:300]) from None
    except _unreadable() as exc:
        if snapshot is not None and may_be_purged(exc) and vanished(snapshot):  # rows are out already: no retry
            raise SqlCommandError("query_error", f"{LakeChanged(1, exc)}; the rows already written are "
                                                 "incomplete") from None
        if isinstance(exc, duckdb.Error):
            raise SqlCommandError("query_error", _first_line(exc)[:500]) from None
        raise


def _out_of_memory(exc: BaseException, limits: QueryLimits) -> SqlCommandError:
    where = "Python" if isinstance(exc, MemoryError) else "DuckDB"
    spilled = "" if where == "Python" else f", --spill-limit {limits.spill_limit or 0}"
    return SqlCommandError("query_error", f"out of memory ({where}; --memory-limit {limits.memory_limit}{spilled}): "
                           f"{_first_line(exc)[:300] or 'MemoryError'}; aggregate more, select fewer columns, or "
                           f"raise --memory-limit{' or --spill-limit' if spilled else ''}")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0]


def _lake_error(exc: Exception) -> SqlCommandError:
    """A span lake that cannot be read (a truncated segment, a directory without permission)."""
    return SqlCommandError("query_error", "cannot read the span lake: " + (str(exc).splitlines() or [""])[0][:300])


def _unreadable() -> tuple[type[Exception], ...]:
    """What reading a lake raises: DuckDB's errors (a truncated segment), the file system's and the store's."""
    import duckdb

    return (duckdb.Error, *read_errors())


def _read_error(exc: Exception, lake: LakeUnion) -> SqlCommandError:
    """What reading `lake` raised, as a closed error: a local file or directory that cannot be read is
    query_error; over an object store (no such bucket, unreachable, credentials refused) storage_error."""
    import duckdb

    local = all(m.remote is None for m in lake.members)
    if isinstance(exc, duckdb.Error) or (isinstance(exc, OSError) and local):
        return _lake_error(exc)
    return SqlCommandError("storage_error", f"cannot read the lake: {type(exc).__name__}: "
                           + (str(exc).splitlines() or [""])[0][:300])


def _view_text(lake: LakeUnion, tenant: str) -> str:
    valid = checked_tenant(tenant)
    try:  # the views name the files of a listing and read their footers: a purge since is read again
        return read_fresh(lake, lambda snapshot: ";\n\n".join(view_statements(snapshot, valid)) + ";\n")
    except LakeChanged as exc:
        raise SqlCommandError("query_error", str(exc)) from None
    except _unreadable() as exc:
        raise _read_error(exc, lake) from None


def run(args: argparse.Namespace, lake: LakeUnion, prepare: Callable[[Any], None] | None = None) -> int:
    """Write the output of the query over `lake`, batch by batch; a failure is a SqlCommandError (with the
    number of rows already written, if any)."""
    out = sys.stdout  # resolved per call, not at import: the process's streams may have been replaced since
    if args.print_views:
        sql_output.emit(_view_text(lake, args.tenant), out)
        return 0
    if not args.query:
        raise SqlCommandError("query_error", "no query given (or use --print-views)")
    limits = QueryLimits(args.timeout_s, args.memory_limit, args.spill_limit, args.max_rows)
    counted: sql_output.Counted | None = None
    try:
        with query_result(lake, args.tenant, args.query, prepare, limits) as result:
            counted = sql_output.Counted(result.batches, limits.max_rows)
            sql_output.write(result.columns, counted, args.format, out)
    except SqlCommandError as exc:
        if counted is None or not counted.written:
            raise
        raise SqlCommandError(exc.code, f"{exc.message} (stdout holds the first {counted.written} rows only)") from None
    if counted.more:
        sys.stderr.write(f"verdict sql: warning: the result has more rows than the {counted.rows} written "
                         f"(--max-rows {limits.max_rows})\n")
    return 0
