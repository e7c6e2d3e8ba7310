"""`verdict report` as a real process: success, closed errors with exit code 2, JSON errors, no
traceback, and no partial (or clobbered) output file on failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.daemon.cli import closed_error, env
from verdict.cli_errors import EXIT_CODES


def report(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`verdict report …` as a real process."""
    return subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "report", *args], capture_output=True,
                          text=True, env=env(), timeout=timeout)


def report_here(capsys, *args: str) -> subprocess.CompletedProcess:
    """The same entry point (verdict_daemon.cli.main) in this process: the error matrix stays fast."""
    from verdict_daemon.cli import main

    try:
        code = main(["report", *args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)  # exit()'s rule
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def test_writes_the_report_and_prints_a_json_summary(lake, tmp_path):
    out = tmp_path / "report.html"
    done = report("--data-dir", str(lake.data_dir), "--tenant", "acme", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary == {"report": str(out), "tenant": "acme", "evaluators": 2, "signals": 2, "sampled_traces": 1440,
                       "bytes": out.stat().st_size}
    assert out.read_text().startswith("<!DOCTYPE html>") and out.read_text().endswith("</html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left behind


def test_text_mode_names_the_file(lake, tmp_path, capsys):
    done = report_here(capsys, "--data-dir", str(lake.data_dir), "--tenant", "globex", "--out", str(tmp_path / "g.html"))
    assert done.returncode == 0 and done.stdout.startswith(f"wrote {tmp_path / 'g.html'} (tenant globex: 0 evaluator")


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--data-dir", "{missing}", "--tenant", "acme"], "invalid_config", "is not an existing directory"),
    (["--data-dir", "{data}"], "tenant_required", "give --tenant"),
    (["--data-dir", "{data}", "--tenant", "Acme Corp"], "invalid_tenant", "--tenant: invalid tenant id"),
    (["--data-dir", "{data}", "--tenant", "initech"], "unknown_tenant", "has no spans and no state"),
    (["--data-dir", "{data}", "--tenant", "acme", "--probes", "{missing}"], "invalid_config", "cannot read the artifact"),
    (["--data-dir", "{data}", "--tenant", "acme", "--lock-timeout", "nan"], "invalid_config",
     "--lock-timeout must be a finite number of seconds >= 0, got nan"),
    (["--data-dir", "{data}", "--tenant", "acme", "--lock-timeout", "-1"], "invalid_config", "got -1.0"),
])
def test_bad_input_is_a_closed_json_error_with_exit_2_and_no_output(lake, tmp_path, capsys, args, code, message):
    out = tmp_path / "report.html"
    out.write_text("the previous report")
    values = {"data": str(lake.data_dir), "missing": str(tmp_path / "nope")}
    done = report_here(capsys, *(a.format(**values) for a in args), "--out", str(out), "--json")
    assert (done.returncode, done.stdout, done.stderr.count("\n")) == (EXIT_CODES[code], "", 1), done.stderr
    error = closed_error(done.stderr)
    assert error["code"] == code and message in error["message"]
    assert out.read_text() == "the previous report" and [p.name for p in tmp_path.iterdir()] == ["report.html"]
    assert "Traceback" not in done.stderr


def test_errors_without_json_are_the_same_envelope_on_stderr(lake, tmp_path, capsys):
    """--json changes the success output only: an error is the one envelope either way (issue 18)."""
    out = tmp_path / "missing-dir" / "report.html"
    done = report_here(capsys, "--data-dir", str(lake.data_dir), "--tenant", "acme", "--out", str(out))
    assert done.returncode == 2 and done.stdout == ""
    assert json.loads(done.stderr) == {"error": {"code": "invalid_config",
                                                 "message": f"--out: directory {out.parent} does not exist"}}
    assert not out.parent.exists()


@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_a_usage_error_in_a_real_process_is_the_json_error_with_or_without_json(lake, mode):
    """Usage errors are the `verdict` dispatcher's JSON line in both modes (docs/report.md)."""
    done = report("--data-dir", str(lake.data_dir), "--tenant", "acme", "--lock-timeout", "soon", *mode)
    assert (done.returncode, done.stdout) == (2, "")
    assert json.loads(done.stderr) == {"error": {
        "code": "invalid_config", "message": "verdict report: argument --lock-timeout: invalid float value: 'soon'"}}


def test_a_state_file_held_by_another_process_is_storage_locked(lake, tmp_path, capsys):
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time\n"
                               f"con = duckdb.connect({str(lake.data_dir / 'state.duckdb')!r})\n"
                               "print('held', flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None  # piped
        assert holder.stdout.readline().strip() == "held"
        done = report_here(capsys, "--data-dir", str(lake.data_dir), "--tenant", "acme", "--out",
                           str(tmp_path / "r.html"), "--lock-timeout", "0.5", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert (done.returncode, done.stdout) == (2, "") and closed_error(done.stderr)["code"] == "storage_locked"
    assert not (tmp_path / "r.html").exists()


def unprivileged() -> list[str]:
    """A command prefix under which file permissions apply: root reads anything, so drop the capabilities
    that let it (setpriv, util-linux); other users need nothing."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


@pytest.mark.parametrize(("locked", "message"), [
    ("", "--data-dir: {data} is not readable (permission denied)"),
    ("spans", "cannot read {data}/spans/tenant=acme (Permission denied)"),
])
def test_an_unreadable_data_dir_is_a_storage_error(lake, tmp_path, locked, message):
    data = tmp_path / "data"
    shutil.copytree(lake.data_dir, data)
    (data / locked).chmod(0)
    try:
        done = subprocess.run([*unprivileged(), sys.executable, "-m", "verdict_daemon.cli", "report", "--data-dir",
                               str(data), "--tenant", "acme", "--out", str(tmp_path / "r.html"), "--json"],
                              capture_output=True, text=True, env=env(), timeout=120)
    finally:
        (data / locked).chmod(0o755)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert json.loads(done.stderr) == {"error": {"code": "storage_error", "message": message.format(data=data)}}
    assert not (tmp_path / "r.html").exists()


def test_help_documents_every_option_and_the_exit_codes(capsys):
    done = report_here(capsys, "--help")
    assert done.returncode == 0
    for text in ("--data-dir", "--tenant", "VERDICT_TENANT", "--out", "--probes", "--lock-timeout", "--json",
                 "exit codes: 0 written; 2 error", "unknown_tenant", "storage_locked", "no network", "VERDICT_DEBUG=1",
                 "--data-dir DIR        required"):
        assert text in done.stdout, text


def test_write_report_is_the_library_entry_point(lake, tmp_path):
    from verdict_daemon.report import write_report

    path = write_report(lake.data_dir, "acme", tmp_path / "r.html")
    assert path == (tmp_path / "r.html").resolve() and "Drift signals" in path.read_text()
    (tmp_path / "plain").touch()
    assert path.stat().st_mode == (tmp_path / "plain").stat().st_mode  # the umask's mode, like any new file
