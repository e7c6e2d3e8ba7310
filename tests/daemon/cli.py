"""Run the daemon's console scripts as real processes (the repo root on PYTHONPATH for test judges)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def closed_error(stderr: str) -> dict:
    """The `verdict` CLI's one error shape, {"error": {"code", "message", ...}}, from stderr's last line
    (a command's progress lines come first): its inner object, the code checked against ERROR_CODES."""
    from verdict_daemon.errors import ERROR_CODES

    document = json.loads(stderr.strip().splitlines()[-1])
    assert set(document) == {"error"} and {"code", "message"} <= set(document["error"]), document
    assert document["error"]["code"] in ERROR_CODES, document
    return document["error"]


def pipeline(*args: str, timeout: float = 120) -> tuple[int, dict, str]:
    """(exit code, document, stderr) of `verdict-pipeline --json ...`: the summary on stdout, or on exit 2
    nothing on stdout and the error envelope {"error": {...}} from stderr (low_coverage: the summary with it)."""
    proc = subprocess.run([sys.executable, "-m", "verdict_daemon.cli.pipeline", "--json", *args],
                          capture_output=True, text=True, env=env(), timeout=timeout)
    if proc.returncode in (2, 3):  # 3: invalid_tenant
        error = closed_error(proc.stderr)
        if error["code"] == "low_coverage":  # the one error printed after the summary (docs/cli.md)
            return proc.returncode, {**json.loads(proc.stdout), "error": error}, proc.stderr
        assert proc.stdout == "", proc.stdout
        return proc.returncode, {"error": error}, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def write_config(path: Path, data_dir: Path, extra: str = "", tenant: str = "acme") -> Path:
    path.write_text(f"""
data_dir = "{data_dir}"
state_lock_timeout_seconds = 1

[[tenants]]
id = "{tenant}"

[sampling]
per_cluster_per_window = 40

[[evaluators]]
name = "quality"
kind = "rubric"
model = "tests.daemon.lakes:scripted_judge_model"
{extra}
""")
    return path
