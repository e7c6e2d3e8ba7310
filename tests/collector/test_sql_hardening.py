"""`verdict sql` never tracebacks and never half-writes stdout (issue 16, item 8): a truncated segment under
--print-views, a lake path the file system refuses, values without a JSON type, NaN and ±Infinity."""

from __future__ import annotations

import json
import random
import time

import pytest

from collector.loadgen import export_request
from tests.collector.conftest import land_request
from tests.collector.test_sql import verdict


@pytest.fixture
def lake(tmp_path):
    from collector import lake

    data_dir = tmp_path / "data"
    lake.prepare(data_dir)
    land_request(data_dir, export_request(random.Random(3), 10, time.time_ns()), "acme")
    return data_dir


def _refused(out, exit_code: int, code: str) -> dict:
    assert (out.returncode, out.stdout) == (exit_code, ""), (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr
    error = json.loads(out.stderr)["error"]
    assert error["code"] == code, error
    return error


def test_print_views_over_a_truncated_segment_is_query_error(lake):
    (segment,) = (lake / "spans" / "tenant=acme").glob("date=*/[0-9]*.parquet")
    segment.write_bytes(segment.read_bytes()[:100])  # a torn copy, e.g. from a backup tool
    for argv in (["--print-views"], ["SELECT count(*) FROM spans"]):
        out = verdict("sql", *argv, "--data-dir", str(lake), "--tenant", "acme", "--format", "json")
        error = _refused(out, 5, "query_error")
        assert error["message"].startswith("cannot read the span lake: "), error
    table = verdict("sql", "--print-views", "--data-dir", str(lake), "--tenant", "acme")  # without --format json
    assert _refused(table, 5, "query_error")["message"].startswith("cannot read the span lake: ")


def test_a_lake_path_the_file_system_refuses_is_query_error(tmp_path):
    """An OSError from the file system (here ENAMETOOLONG; an unreadable directory, which root - and so this
    test - cannot produce, raises PermissionError on the same paths) is a closed error on every path."""
    refused = tmp_path / ("x" * 300)
    for argv in (["SELECT 1"], ["--print-views"]):
        out = verdict("sql", *argv, "--data-dir", str(refused), "--tenant", "acme", "--format", "json")
        error = _refused(out, 5, "query_error")
        assert "File name too long" in error["message"], error


def test_json_output_serialises_every_type_and_is_strict_json(lake):
    query = ("SELECT uuid() AS id, 'nan'::DOUBLE AS nan, 'inf'::DOUBLE AS inf, '-inf'::FLOAT AS ninf, "
             "MAP {[1, 2]: 'pair'} AS by_list, MAP {DATE '2026-01-02': 1, DATE '2026-01-03': 2} AS by_date, {'at': TIME '12:30:00', 'n': 1.5::DECIMAL(4, 2)} AS s, "
             "'\\xAA'::BLOB AS b, INTERVAL 90 MINUTE AS d")
    out = verdict("sql", query, "--data-dir", str(lake), "--tenant", "acme", "--format", "json")
    assert out.returncode == 0 and out.stderr == "", out.stderr

    def no_constants(name):
        raise AssertionError(f"{name} is not JSON")

    (row,) = json.loads(out.stdout, parse_constant=no_constants)
    assert len(row["id"]) == 36 and row["id"].count("-") == 4
    assert (row["nan"], row["inf"], row["ninf"]) == ("NaN", "Infinity", "-Infinity")
    assert row["by_list"] == {"key": [[1, 2]], "value": ["pair"]}  # DuckDB's shape for unhashable keys
    assert row["by_date"] == {"2026-01-02": 1, "2026-01-03": 2}
    assert row["s"] == {"at": "12:30:00", "n": 1.5} and row["b"] == "aa" and row["d"] == 5400.0
    for fmt in ("csv", "table"):  # the same values, as text
        out = verdict("sql", query, "--data-dir", str(lake), "--tenant", "acme", "--format", fmt)
        assert out.returncode == 0 and "NaN" in out.stdout and "-Infinity" in out.stdout, out.stderr
