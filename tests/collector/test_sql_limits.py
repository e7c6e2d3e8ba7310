"""`verdict sql` is bounded (issue 28, item 6): a statement timeout, DuckDB's memory limit, a streamed writer
(bounded Python memory for any result size), --max-rows; UPDATE EXTENSIONS, out of memory and a damaged
state.duckdb are closed errors. Real DuckDB, the real CLI in a subprocess."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time

import pytest

from collector import lake
from collector.loadgen import export_request
from tests.collector.conftest import land_request
from tests.collector.test_sql import verdict


@pytest.fixture
def data_dir(tmp_path):
    """A lake holding a few spans of the tenant the queries run as (an empty tenant adds a warning on stderr)."""
    path = tmp_path / "data"
    lake.prepare(path)
    land_request(path, export_request(random.Random(0), 3, time.time_ns()))
    return path


def _error(out: subprocess.CompletedProcess, exit_code: int, code: str) -> dict:
    assert out.returncode == exit_code, (out.stdout[-300:], out.stderr)
    assert "Traceback" not in out.stderr
    error = json.loads(out.stderr.splitlines()[-1])["error"]
    assert error["code"] == code, error
    return error


@pytest.mark.parametrize("query", [
    "SELECT count(*) FROM range(1000000000000)",
    "SELECT count(*) FROM range(1000000) a, range(1000000) b",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
])
def test_a_query_past_the_timeout_is_cancelled(data_dir, query):
    out = verdict("sql", query, "--data-dir", str(data_dir), "--timeout-s", "1")  # verdict(): killed after 60 s
    error = _error(out, 5, "query_error")
    assert error["message"] == "the query ran longer than --timeout-s 1 s and was cancelled"
    assert out.stdout == ""


def test_a_timeout_while_rows_stream_says_how_many_were_written(data_dir):
    out = verdict("sql", "SELECT * FROM range(1000000000000)", "--data-dir", str(data_dir), "--timeout-s", "1",
                  "--format", "csv")
    error = _error(out, 5, "query_error")
    written = int(error["message"].split("stdout holds the first ")[1].split()[0])
    lines = out.stdout.splitlines()
    assert lines[0] == "range" and len(lines) - 1 == written > 0


# A child's peak RSS includes its parent's at the fork (Linux keeps the high-water mark across exec), so
# the command runs under a small wrapper that reports its one child's peak (RUSAGE_CHILDREN) as stderr's last line.
_MEASURED = """\
import resource, subprocess, sys
code = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", *sys.argv[1:]]).returncode
sys.stderr.write(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n")
sys.exit(code)
"""


def _peak_rss_mb(argv: list[str], stdout) -> tuple[int, float, str]:
    """Exit code, peak RSS (MB) and stderr of `verdict ARGV`."""
    proc = subprocess.run([sys.executable, "-c", _MEASURED, *argv], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=300)
    *stderr, peak_kb = proc.stderr.splitlines()
    return proc.returncode, int(peak_kb) / 1024, "".join(f"{line}\n" for line in stderr)


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_a_large_result_streams_in_bounded_memory(data_dir, tmp_path, fmt):
    """2M rows: fetchall-then-render peaked at ~600 MB (csv) to ~1 GB (json, table) on this machine; streamed,
    the process stays near its ~100 MB baseline whatever the row count."""
    rows = 2_000_000
    with open(tmp_path / "out", "wb") as out:
        code, peak_mb, stderr = _peak_rss_mb(
            ["sql", f"SELECT i, i * 2 AS j, 'row ' || i AS s FROM range({rows}) t(i)", "--data-dir",
             str(data_dir), "--format", fmt], out)
    assert (code, stderr) == (0, "")
    assert peak_mb < 300, peak_mb
    with open(tmp_path / "out") as text:
        lines = sum(1 for _ in text)
    assert lines == {"csv": rows + 1, "json": rows + 2, "table": rows + 3}[fmt]
    if fmt == "json":  # the last object's line, not the whole array: this process stays small too
        last = (tmp_path / "out").read_text().splitlines()[-2]
        assert json.loads(last) == {"i": rows - 1, "j": 2 * rows - 2, "s": f"row {rows - 1}"}


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_max_rows_writes_the_first_rows_and_says_there_were_more(data_dir, fmt):
    out = verdict("sql", "SELECT * FROM range(1000000000000)", "--data-dir", str(data_dir), "--max-rows", "3",
                  "--format", fmt)
    assert out.returncode == 0, out.stderr
    assert out.stderr == "verdict sql: warning: the result has more rows than the 3 written (--max-rows 3)\n"
    if fmt == "json":
        assert json.loads(out.stdout) == [{"range": 0}, {"range": 1}, {"range": 2}]
    elif fmt == "csv":
        assert out.stdout.splitlines() == ["range", "0", "1", "2"]
    else:
        assert out.stdout.splitlines()[-1] == "(3 rows; more not shown: --max-rows 3)"
    exact = verdict("sql", "SELECT * FROM range(3)", "--data-dir", str(data_dir), "--max-rows", "3", "--json")
    assert (exact.returncode, exact.stderr, len(json.loads(exact.stdout))) == (0, "", 3)


@pytest.mark.parametrize("argv", [["--max-rows", "0"], ["--timeout-s", "-1"], ["--timeout-s", "inf"],
                                  ["--memory-limit", "lots"], ["--memory-limit", "150%"], ["--spill-limit", "10%"],
                                  ["--spill-limit", "-1GB"]])
def test_bad_limits_are_usage_errors(data_dir, argv):
    out = verdict("sql", "SELECT 1", "--data-dir", str(data_dir), *argv)
    assert argv[0] in _error(out, 2, "invalid_config")["message"]


def test_update_extensions_is_refused_as_a_statement(data_dir):
    out = verdict("sql", "UPDATE EXTENSIONS", "--data-dir", str(data_dir))
    error = _error(out, 6, "access_denied")
    assert error["message"] == "verdict sql runs SELECT queries only; refused: UPDATE EXTENSIONS"


_DISTINCT = "SELECT count(DISTINCT i::VARCHAR || 'padding-padding-padding') FROM range({rows}) t(i)"


def test_duckdb_out_of_memory_is_query_error(data_dir):
    out = verdict("sql", _DISTINCT.format(rows=30_000_000), "--data-dir", str(data_dir), "--memory-limit", "100MB",
                  "--spill-limit", "0")
    message = _error(out, 5, "query_error")["message"]
    assert message.startswith("out of memory (DuckDB; --memory-limit 100MB, --spill-limit 0): Out of Memory Error"), message
    assert message.endswith("raise --memory-limit or --spill-limit"), message


def test_a_query_past_the_memory_limit_spills_to_a_private_directory_removed_after(data_dir, tmp_path):
    """Past --memory-limit DuckDB spills (the identity rule over a lake where every call is described twice needs
    ~2 GB per million spans): into a directory of this query's own under $TMPDIR, gone when the query ends, and
    only up to --spill-limit. The same query without spilling runs out of memory."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    query, tmp = _DISTINCT.format(rows=10_000_000), {"TMPDIR": str(tmpdir)}
    spilled = verdict("sql", query, "--data-dir", str(data_dir), "--memory-limit", "100MB", "--json", env=tmp)
    assert spilled.returncode == 0, spilled.stderr
    assert json.loads(spilled.stdout) == [{"count(DISTINCT (CAST(i AS VARCHAR) || 'padding-padding-padding'))": 10_000_000}]
    assert list(tmpdir.iterdir()) == []
    unspilled = verdict("sql", query, "--data-dir", str(data_dir), "--memory-limit", "100MB", "--spill-limit", "0", env=tmp)
    assert _error(unspilled, 5, "query_error")["message"].startswith("out of memory (DuckDB; --memory-limit 100MB, --spill-limit 0)")
    bounded = verdict("sql", query, "--data-dir", str(data_dir), "--memory-limit", "100MB", "--spill-limit", "1MB", env=tmp)
    message = _error(bounded, 5, "query_error")["message"]
    assert message.startswith("out of memory (DuckDB; --memory-limit 100MB, --spill-limit 1MB)"), message
    assert list(tmpdir.iterdir()) == []


_LIMITED = """\
import resource, runpy, sys
import duckdb  # loaded before the limit: the limit is for the query's result
vm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), vm + (1 << 30)))
sys.argv = ["verdict", *sys.argv[1:]]
runpy.run_module("verdict_daemon.cli", run_name="__main__")
"""


def test_python_running_out_of_memory_is_query_error(data_dir):
    """One row too large for Python: DuckDB holds a 50M-element list in ~400 MB, Python's list of ints needs
    ~2 GB, past the 1 GB of address space this child may add (RLIMIT_AS)."""
    out = subprocess.run([sys.executable, "-c", _LIMITED, "sql", "SELECT list(i) FROM range(50000000) t(i)",
                          "--data-dir", str(data_dir), "--memory-limit", "600MB"],
                         capture_output=True, text=True, timeout=120)
    message = _error(out, 5, "query_error")["message"]
    assert message.startswith("out of memory ("), message


def test_a_damaged_state_file_is_named_not_the_lake(data_dir):
    """A state.duckdb whose block fails its checksum attaches fine and fails when read; one cut short fails
    when attached. Either is storage_error naming the file, never "cannot read the span lake"."""
    import duckdb

    from verdict_daemon.store.state import MIGRATIONS, STATE_FILE

    state = data_dir / STATE_FILE
    con = duckdb.connect(str(state))
    for step in MIGRATIONS:
        for statement in step:
            con.execute(statement)
    con.execute("INSERT INTO sampled_traces SELECT 'acme', 't' || i, 's' || i, 'k', 'x', now(), now(), "
                "md5(i::VARCHAR) || repeat('q', 100), NULL, NULL, now(), NULL, 'turn' FROM range(200000) t(i)")
    con.execute("INSERT INTO judgment_attempts SELECT 'acme', 'a' || i, 't' || i, 'fp', 1, 'OK', NULL, NULL, now(), "
                "1, 1, 0.1, 'r', 1 FROM range(200000) t(i)")
    con.close()
    whole = state.read_bytes()
    damaged = bytearray(whole)
    damaged[1 << 20:3 << 20] = b"\x55" * (2 << 20)  # data blocks, not the header or the metadata at the end
    for content, why in ((bytes(damaged), "is damaged (corrupt or truncated): Corrupt database file"),
                         (whole[:len(whole) // 3], "(damaged, truncated or unreadable): IO Error")):
        state.write_bytes(content)
        out = verdict("sql", "SELECT count(*) FROM judgments", "--data-dir", str(data_dir), "--tenant", "acme")
        message = _error(out, 2, "storage_error")["message"]
        assert str(state) in message and why in message, message
