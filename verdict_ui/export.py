"""Any list as CSV or JSON (`?format=csv` or `?format=json`): the rows the page shows, as plain values.

Strings are redacted again (as `safe` does for HTML). A CSV cell that a spreadsheet would run as a formula
(starting with = + - @, a tab or CR) is prefixed with a quote. A list that pages says where its next page
is: `next` in the JSON object, a `Link: <…>; rel="next"` header on the CSV.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime

from starlette.responses import Response

from verdict.redact import redact_text
from verdict_ui import params

FORMATS = ("html", "csv", "json")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def wanted(query: Mapping[str, str]) -> str:
    return params.choice(query, "format", FORMATS, "html") or "html"


def _plain(value: object) -> object:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _cell(value: object) -> object:
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, str) and value.startswith(_FORMULA):
        return "'" + value
    return value


def respond(name: str, rows: Sequence[object], fmt: str, next_url: str | None = None) -> Response:
    """`rows` (dataclasses) as `fmt` ("csv" or "json"), offered for download as `name`.csv / .json."""
    records = [{k: _plain(v) for k, v in dataclasses.asdict(r).items()} for r in rows]  # type: ignore[call-overload]
    disposition = {"Content-Disposition": f'attachment; filename="{name}.{fmt}"'}
    if fmt == "json":
        body = json.dumps({"rows": records, "next": next_url}, ensure_ascii=False, indent=1)
        return Response(body, media_type="application/json", headers=disposition)
    out = io.StringIO()
    columns = [f.name for f in dataclasses.fields(rows[0])] if rows else []  # type: ignore[arg-type]
    writer = csv.DictWriter(out, columns, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in r.items()} for r in records)
    headers = {**disposition, **({"Link": f'<{next_url}>; rel="next"'} if next_url else {})}
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)
