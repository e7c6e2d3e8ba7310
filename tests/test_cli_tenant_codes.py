"""An invalid tenant id is the same error in every command (issue 30 item 2): `invalid_tenant`, exit 3, the
message naming --tenant; a missing one is `tenant_required` (exit 2). Real `verdict` processes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.daemon.cli import env

COMMANDS = {
    "sql": ["sql", "SELECT 1", "--data-dir", "{data}"],
    "report": ["report", "--data-dir", "{data}", "--out", "{data}/r.html"],
    "pipeline": ["pipeline", "--data-dir", "{data}", "--judge-model", "openai/gpt-4o-mini"],
    "review": ["review", "list", "--data-dir", "{data}"],
    "cluster": ["cluster", "--data-dir", "{data}", "--actor", "alice", "TENANT", "inspect"],  # a global flag
    "probes": ["probes", "run", "--suite", "{data}/none.yaml", "--target-model", "openai/gpt-4o-mini",
               "--judge-model", "openai/gpt-4o-mini", "--data-dir", "{data}"],
    "ui": ["ui", "--data-dir", "{data}", "--port", "0"],
}


def verdict(args: list[str], data: str, tenant: str) -> tuple[int, dict, str]:
    """`verdict ARGS --tenant TENANT` (where the args say TENANT, or at the end)."""
    argv = [a.replace("{data}", data) for a in (args if "TENANT" in args else [*args, "TENANT"])]
    at = argv.index("TENANT")
    argv[at:at + 1] = ["--tenant", tenant]
    done = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", *argv], capture_output=True,
                          text=True, env={k: v for k, v in env().items() if k != "VERDICT_TENANT"}, timeout=120)
    return done.returncode, json.loads(done.stderr.strip().splitlines()[-1])["error"], done.stdout


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_invalid_tenant_is_invalid_tenant_exit_3_in_every_command(tmp_path, command):
    code, error, stdout = verdict(COMMANDS[command], str(tmp_path), "Acme Corp")
    assert (code, error["code"], stdout) == (3, "invalid_tenant", ""), error
    assert error["message"].startswith("--tenant: invalid tenant id 'Acme Corp': use 1-63 characters")
    assert [p.name for p in tmp_path.iterdir()] == []  # nothing written
