"""`verdict sql`'s output formats (table, CSV, JSON), written batch by batch: Python holds one batch of rows
at a time, whatever the size of the result.

JSON output is an array with one object per line and strict JSON: NaN and ±Infinity are the strings "NaN", "Infinity" and "-Infinity"; UUIDs and
other values without a JSON type are their text. The table's column widths are those of the first batch
(a later, wider cell shifts the rest of its line); a cell is cut at TABLE_CELL_CHARS.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
from collections.abc import Iterable, Iterator
from typing import TextIO

TABLE_CELL_CHARS = 120
WRITE_CHUNK = 1 << 16  # one huge write() to a pipe whose reader left can end without BrokenPipeError

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


def _json(columns: list[str], batches: Iterator[list[tuple]]) -> Iterator[str]:
    """A JSON array with one object per line (json's C encoder: no indent)."""
    first = True
    for rows in batches:
        text = ",\n".join(json.dumps({c: _plain(v) for c, v in zip(columns, row, strict=True)}, allow_nan=False)
                          for row in rows)
        if text:
            yield ("[\n" if first else ",\n") + text
            first = False
    yield "[]\n" if first else "\n]\n"


def _csv(columns: list[str], batches: Iterator[list[tuple]]) -> Iterator[str]:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(columns)
    for rows in batches:
        for row in rows:
            writer.writerow([json.dumps(_plain(v)) if isinstance(v, list | dict) else _plain(v) for v in row])
        yield text.getvalue()
        text.seek(0)
        text.truncate()
    yield text.getvalue()


def _table(columns: list[str], batches: Counted) -> Iterator[str]:
    widths: list[int] | None = None
    for rows in batches:
        cells = [[_cell(v) for v in row] for row in rows]
        head = ""
        if widths is None:
            widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
            head = _head(columns, widths)
        yield head + "".join(_line(r, widths) for r in cells)
    shown = f"{batches.rows} row{'s' if batches.rows != 1 else ''}"
    footer = f"({shown}; more not shown: --max-rows {batches.limit})\n" if batches.more else f"({shown})\n"
    yield (_head(columns, [len(c) for c in columns]) if widths is None else "") + footer


def _head(columns: list[str], widths: list[int]) -> str:
    return _line(columns, widths) + "  ".join("-" * w for w in widths) + "\n"


def _line(cells: Iterable[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() + "\n"


class Counted:
    """The batches of a result, at most `limit` rows: `rows` counts the rows passed on, `written` those
    whose text `write` has written; `more` tells whether the result held rows past the limit (one more
    batch is fetched to know)."""

    def __init__(self, batches: Iterator[list[tuple]], limit: int | None) -> None:
        self._batches = batches
        self.limit = limit
        self.rows = 0
        self.written = 0
        self.more = False

    def __iter__(self) -> Iterator[list[tuple]]:
        for rows in self._batches:
            if self.limit is not None and self.rows + len(rows) > self.limit:
                rows = rows[: self.limit - self.rows]
                self.more = True
            self.rows += len(rows)
            if rows:
                yield rows
            if self.more or self.rows == self.limit:
                self.more = self.more or next(self._batches, None) is not None
                return


def write(columns: list[str], batches: Counted, fmt: str, out: TextIO) -> None:
    """Write the result to `out` in `fmt`, batch by batch: each format yields a batch's text only after
    reading it, so nothing is written before the first batch is ready."""
    if fmt == "json":
        parts = _json(columns, iter(batches))
    elif fmt == "csv":
        parts = _csv(columns, iter(batches))
    else:
        parts = _table(columns, batches)
    for text in parts:
        emit(text, out)
        batches.written = batches.rows


def emit(text: str, out: TextIO) -> None:
    """Write `text` in chunks, flushing each: a reader that goes away (`| head`) is noticed (exit 141)."""
    for start in range(0, len(text), WRITE_CHUNK):
        out.write(text[start:start + WRITE_CHUNK])
        out.flush()
