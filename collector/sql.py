"""`verdict sql`: run SQL over one tenant's span lake, or the union of its lakes (local data dirs and object
stores, read as collector.lake_union reads them: each segment once); table, CSV or JSON output. The command
(verdict_daemon.cli.sql) builds the union from --data-dir, --lake-dir and --lake-url.

Exit codes: 0 ok; 2 usage (and invalid_config: a bad --lake-url or a missing --lake-dir; storage_error: the
object store cannot be read); 3 invalid_tenant; 4 no_data_dir; 5 query_error; 6 access_denied (verdict.cli_errors.EXIT_CODES). Errors are the one envelope {"error": {"code": ..., "message": ...}} on
stderr; stdout then stays empty (the output is rendered in full before its first byte is written). JSON output is strict JSON: NaN and ±Infinity
are the strings "NaN", "Infinity" and "-Infinity"; UUIDs and other values without a JSON type are
their text.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import io
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from collector.lake_source import LakeSource
from collector.lake_union import LakeUnion, read_errors
from collector.views import open_scoped, view_statements
from verdict.cli_errors import CliError, ErrorCode
from verdict.cli_runner import add_data_dir, add_tenant
from verdict.tenancy import LOCAL_TENANT, InvalidTenantError, TenantId, validate_tenant_id

SQL_ERROR_CODES: tuple[ErrorCode, ...] = ("invalid_tenant", "no_data_dir", "query_error", "access_denied")  # exits 3-6
TABLE_CELL_CHARS = 120
WRITE_CHUNK = 1 << 16  # one huge write() to a pipe whose reader left can end without BrokenPipeError


class SqlCommandError(CliError):
    """A `verdict sql` failure: a code of SQL_ERROR_CODES (all in the one closed set) and its message."""


_EPILOG = """\
views: spans (every span once; schema in docs/collector.md) and llm_calls (GenAI inference spans
with typed columns: request_model, input_tokens, intent_key, latency_ms, ...), scoped to --tenant.
Only SELECT statements run; files outside the tenant's partition directories (in every lake read)
cannot be read. --lake-dir and --lake-url add lakes: the query sees their union, each span once.
example: verdict sql "SELECT intent_key, count(*) FROM llm_calls GROUP BY 1" --tenant acme
exit codes: 0 ok, 2 usage (also a bad --lake-url or missing --lake-dir, or an object store that cannot be
read), 3 invalid_tenant, 4 no_data_dir (the data dir, read alone, does not exist), 5 query_error,
6 access_denied (error: one line {"error": {"code", "message"}} on stderr).
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
    parser.add_argument("--print-views", action="store_true",
                        help="print the CREATE VIEW statements (for plain DuckDB) and exit")


_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _plain(value):
    """A JSON-ready value: every DuckDB result type maps to a JSON type (strict JSON: no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else _NON_FINITE[value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return _plain(float(value))
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_key(_plain(k)): _plain(v) for k, v in value.items()}
    return str(value)  # UUID and anything else without a JSON type: its text


def _key(plain) -> str:
    """A JSON object key for a MAP key of any type (its text; JSON text for numbers, lists, ...)."""
    return plain if isinstance(plain, str) else json.dumps(plain)


def _cell(value) -> str:
    if value is None:
        return "NULL"
    value = _plain(value)
    text = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return text if len(text) <= TABLE_CELL_CHARS else text[: TABLE_CELL_CHARS - 1] + "…"


def render(columns: list[str], rows: list[tuple], fmt: str, out) -> None:
    if fmt == "json":
        json.dump([{c: _plain(v) for c, v in zip(columns, row, strict=True)} for row in rows], out, indent=1,
                  allow_nan=False)
        out.write("\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([json.dumps(_plain(v)) if isinstance(v, list | dict) else _plain(v) for v in row])
    else:
        cells = [[_cell(v) for v in row] for row in rows]
        widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
        out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n")
        out.write("  ".join("-" * w for w in widths) + "\n")
        for r in cells:
            out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
        out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


def _require_read_only(con, query: str) -> None:
    """Only SELECT statements: COPY ... TO the tenant's own (readable) directory would write into the lake."""
    import duckdb

    refused = sorted({s.type.name for s in con.extract_statements(query)} - {duckdb.StatementType.SELECT.name})
    if refused:
        raise SqlCommandError("access_denied", f"verdict sql runs SELECT queries only; refused: {', '.join(refused)}")


def valid_tenant(tenant: str) -> TenantId:
    try:
        return validate_tenant_id(tenant)
    except InvalidTenantError as exc:
        raise SqlCommandError("invalid_tenant", str(exc)) from None


def require_data_dir(data_dir: Path) -> None:
    """no_data_dir when the data dir, read alone, does not exist (a typo more often than an empty lake)."""
    try:
        exists = data_dir.is_dir()
    except OSError as exc:  # e.g. a name too long
        raise _lake_error(exc) from None
    if not exists:
        raise SqlCommandError("no_data_dir", f"data directory {data_dir} does not exist")


def execute(lake: LakeUnion | LakeSource | Path, tenant: str, query: str,
            prepare: Callable[[Any], None] | None = None) -> tuple[list[str], list[tuple]]:
    """Run `query` over the tenant's views of `lake` (a data dir must exist: require_data_dir)."""
    import duckdb

    valid = valid_tenant(tenant)
    if isinstance(lake, Path):
        require_data_dir(lake)
    source = LakeUnion.of(lake)
    try:
        con = open_scoped(source, valid, prepare=prepare)
    except _unreadable() as exc:
        raise _read_error(exc, source) from None
    try:
        _require_read_only(con, query)
        cursor = con.execute(query)
        columns = [d[0] for d in cursor.description or []]
        return columns, cursor.fetchall() if columns else []
    except duckdb.PermissionException as exc:
        raise SqlCommandError(
            "access_denied", "queries may read only the views (and this tenant's span files): "
            + str(exc).splitlines()[0][:300]) from None
    except duckdb.Error as exc:
        raise SqlCommandError("query_error", str(exc).splitlines()[0][:500]) from None
    finally:
        con.close()


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
    valid = valid_tenant(tenant)
    try:
        return ";\n\n".join(view_statements(lake, valid)) + ";\n"
    except _unreadable() as exc:
        raise _read_error(exc, lake) from None


def _output(args: argparse.Namespace, lake: LakeUnion, prepare: Callable[[Any], None] | None) -> str:
    """Everything stdout gets, complete, or a SqlCommandError."""
    if args.print_views:
        return _view_text(lake, args.tenant)
    if not args.query:
        raise SqlCommandError("query_error", "no query given (or use --print-views)")
    columns, rows = execute(lake, args.tenant, args.query, prepare)
    text = io.StringIO()
    render(columns, rows, args.format, text)
    return text.getvalue()


def run(args: argparse.Namespace, lake: LakeUnion, prepare: Callable[[Any], None] | None = None) -> int:
    """Write the output of the query over `lake`; a failure is a SqlCommandError (nothing written)."""
    text = _output(args, lake, prepare)
    out = sys.stdout  # resolved per call, not at import: the process's streams may have been replaced since
    for start in range(0, len(text), WRITE_CHUNK):  # a reader that goes away (`| head`) is noticed: exit 141
        out.write(text[start:start + WRITE_CHUNK])
        out.flush()
    return 0
