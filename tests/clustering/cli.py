"""Run `verdict-cluster` in-process (fast: flag checks) or as a real process (locks, concurrency)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

from tests.daemon.cli import env
from verdict.cli_errors import ERROR_CODES
from verdict_daemon.cli.cluster import SCHEMA, main


def run(data_dir: Path, *args: str, tenant: str = "acme", actor: str = "alice") -> tuple[int, dict]:
    """(exit code, document): the result document, or for a failure the error envelope's inner object."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--data-dir", str(data_dir), "--tenant", tenant, "--actor", actor, *args])
    return code, one_object(code, out.getvalue(), err.getvalue())


def one_object(code: int, stdout: str, stderr: str) -> dict:
    """Exit 0: exactly one result document on stdout. Exit 2: nothing on stdout and the one error envelope
    {"error": {"code", "message", ...}} as the last line of stderr; its inner object is returned."""
    if code == 0:
        document = json.loads(stdout)
        assert document["schema"] == SCHEMA and set(document) == {"schema", "result"}
        return document
    assert code == 2 and stdout == "", (code, stdout)
    envelope = json.loads(stderr.strip().splitlines()[-1])
    assert set(envelope) == {"error"} and envelope["error"]["code"] in ERROR_CODES, envelope
    return envelope["error"]


def ok(data_dir: Path, *args: str, **kwargs) -> dict:
    code, document = run(data_dir, *args, **kwargs)
    assert code == 0, document
    return document["result"]


def spawn(data_dir: Path, *args: str, tenant: str = "acme", actor: str = "alice") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "verdict_daemon.cli.cluster", "--data-dir", str(data_dir),
                             "--tenant", tenant, "--actor", actor, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, dict, str]:
    stdout, stderr = proc.communicate(timeout=timeout)
    assert "Traceback" not in stderr, stderr
    return proc.returncode, one_object(proc.returncode, stdout, stderr), stderr


def normalized(data_dir: Path, tenant: str = "acme") -> None:
    while not ok(data_dir, "normalize", "--limit", "50000", tenant=tenant)["complete"]:
        pass


def lifecycle(data_dir: Path, strategy: str = "explicit", cutoff: str = "2026-11-19T00:00:00+00:00",
              through: str = "2026-11-20T00:00:00+00:00", tenant: str = "acme", generation: int | None = 0,
              extra: tuple[str, ...] = ()) -> str:
    """normalize -> fit -> assign -> validate (-> activate at `generation`); returns the version id."""
    normalized(data_dir, tenant)
    version = ok(data_dir, "fit", "--strategy", strategy, "--cutoff", cutoff, *extra, tenant=tenant)["version_id"]
    ok(data_dir, "assign", "--version", version, "--through-cutoff", through, tenant=tenant)
    assert ok(data_dir, "validate", "--version", version, tenant=tenant)["status"] == "validated"
    if generation is not None:
        ok(data_dir, "activate", "--version", version, "--expected-generation", str(generation), tenant=tenant)
    return version
