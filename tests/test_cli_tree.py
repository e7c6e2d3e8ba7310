"""One command tree (issue 18): every subcommand under `verdict`, the old scripts as deprecated aliases, the
old flag and variable spellings still working with one warning, one documented table of variables."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.cli import env
from verdict import semconv
from verdict.environment import VARIABLES

BIN = Path(sys.executable).parent
DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
TREE = ["collector", "daemon", "pipeline", "cluster", "sql", "report", "review", "probes", "gate", "demo", "ui"]


def run(*argv: str, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in env(**extra).items() if not k.startswith("VERDICT_") or k in extra}
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, env=environ, timeout=60,
                          cwd=cwd)


def test_the_tree_has_every_tool():
    from verdict_daemon.cli import commands

    assert list(commands()) == TREE  # the demo through its entry point (verdict.commands)
    listed = run("verdict", "--help")
    assert listed.returncode == 0, listed.stderr
    assert re.findall(r"^    ([a-z]+)\b", listed.stdout, flags=re.MULTILINE) == TREE, listed.stdout


def test_version_is_the_installed_distributions():
    from importlib.metadata import version

    done = run("verdict", "--version")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"verdict {version('verdict-monitor')}\n"


@pytest.mark.parametrize("name", TREE)
def test_every_subcommand_has_its_own_help(name):
    done = run("verdict", name, "--help")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"usage: verdict {name} "), done.stdout[:200]
    assert re.search(r"^(examples?|Example):", done.stdout, flags=re.MULTILINE), done.stdout


@pytest.mark.parametrize(("alias", "name"), [("verdict-collector", "collector"), ("verdict-daemon", "daemon"),
                                             ("verdict-pipeline", "pipeline"), ("verdict-cluster", "cluster")])
def test_the_old_scripts_are_deprecated_aliases_that_say_so(alias, name):
    done = run(alias, "--help")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"usage: {alias} ")
    assert f"Deprecated alias of `verdict {name}`" in " ".join(done.stdout.split()), done.stdout


def _tenant_error(done: subprocess.CompletedProcess) -> dict:
    assert (done.returncode, done.stdout) == (3, ""), done.stderr  # invalid_tenant
    return json.loads(done.stderr.splitlines()[-1])["error"]


def test_the_old_tenant_flag_still_works_and_warns_once(tmp_path):
    """`--tenant-id` reaches the same check as `--tenant` (here: an invalid id), after one warning line."""
    argv = ["verdict", "pipeline", "--data-dir", str(tmp_path), "--judge-model", "openai/x"]
    new = run(*argv, "--tenant", "Bad Tenant")
    old = run(*argv, "--tenant-id", "Bad Tenant", "--tenant-id", "Bad Tenant")
    assert _tenant_error(old) == _tenant_error(new) and _tenant_error(new)["code"] == "invalid_tenant"
    assert new.stderr.count("\n") == 1
    assert old.stderr.splitlines()[:-1] == ["verdict: warning: --tenant-id is deprecated and will be removed; "
                                            "use --tenant"]


def test_verdict_tenant_is_read_by_every_command_and_the_old_variable_still_works(tmp_path):
    argv = ["verdict", "pipeline", "--data-dir", str(tmp_path), "--judge-model", "openai/x"]
    assert "Bad Tenant" in _tenant_error(run(*argv, VERDICT_TENANT="Bad Tenant"))["message"]
    old = run(*argv, VERDICT_TENANT_ID="Bad Tenant")
    assert "Bad Tenant" in _tenant_error(old)["message"]
    assert old.stderr.startswith("verdict: warning: VERDICT_TENANT_ID is deprecated and will be removed; use "
                                 "VERDICT_TENANT\n")


def test_the_sdk_reads_verdict_tenant_and_still_the_old_name(monkeypatch, capsys):
    from verdict import environment

    monkeypatch.delenv("VERDICT_TENANT", raising=False)
    monkeypatch.setattr(environment, "_warned", set())
    monkeypatch.setenv("VERDICT_TENANT_ID", "old-name")
    assert environment.get("VERDICT_TENANT") == "old-name"
    assert environment.get("VERDICT_TENANT") == "old-name"
    assert capsys.readouterr().err.count("VERDICT_TENANT_ID is deprecated") == 1  # once per process
    monkeypatch.setenv("VERDICT_TENANT", "new-name")
    assert environment.get("VERDICT_TENANT") == "new-name"


def test_the_collector_reads_verdict_data_dir(tmp_path):
    """`verdict collector --maintenance-once` on the data dir the variable names (the old name: a warning)."""
    for variable in ("VERDICT_DATA_DIR", "VERDICT_COLLECTOR_DATA_DIR"):
        data = tmp_path / variable
        done = run("verdict", "collector", "--maintenance-once", cwd=tmp_path, **{variable: str(data)})
        assert done.returncode == 0, done.stderr
        assert (data / "spans").is_dir()
        assert ("VERDICT_COLLECTOR_DATA_DIR is deprecated" in done.stderr) == (variable != "VERDICT_DATA_DIR")


def test_every_environment_variable_is_in_the_one_docs_table_and_in_the_code():
    section = DOC.read_text().split("### Environment variables", 1)[1].split("\n#", 1)[0]
    documented = re.findall(r"^\| `([A-Z_<>]+)` \|", section, flags=re.MULTILINE)
    assert documented == [v.name for v in VARIABLES]
    code = "".join(p.read_text() for root in ("verdict", "collector", "verdict_daemon", "verdict_demo")
                   for p in Path(root).rglob("*.py"))
    used = set(re.findall(r"\b((?:VERDICT|OTEL|OPENAI|ANTHROPIC)_[A-Z_]+)\b", code))
    names = {v.name for v in VARIABLES} | {v.replaces for v in VARIABLES if v.replaces}
    not_variables = {"VERDICT_SCOPE", "VERDICT_COLUMNS", "VERDICT_COLLECTOR_", "OTEL_", "ANTHROPIC_OPEN_TELEMETRY"}
    not_variables |= {name for name in vars(semconv) if name.isupper()}  # attribute names (OPENAI_..., ANTHROPIC_...)
    collector_options = {u for u in used if u.startswith("VERDICT_COLLECTOR_")} - names
    assert used - names - not_variables - collector_options == set()


def test_verdict_debug_is_read_in_one_place():
    """Only verdict.environment.debug() (through get()): run_command and the demo's report step."""
    readers = [str(p) for root in ("verdict", "collector", "verdict_daemon", "verdict_demo")
               for p in Path(root).rglob("*.py") if re.search(r"environ(\.get)?\W+\"VERDICT_DEBUG\"", p.read_text())]
    assert readers == [], readers


def test_verdict_daemon_leaves_like_the_old_entry_point_with_threads_still_running(tmp_path):
    """`verdict daemon` keeps `verdict-daemon`'s process semantics: a failed start with a thread that never
    ends (abandoned judge calls stand in) still ends the process, through os._exit."""
    config = tmp_path / "verdict.toml"
    config.write_text(f'data_dir = "{tmp_path}"\n[[tenants]]\nid = "acme"\n[judging]\nstop_grace_seconds = -1\n')
    script = ("import sys, threading\n"
              "threading.Thread(target=threading.Event().wait).start()  # never ends, not a daemon thread\n"
              "from verdict_daemon.cli import run\n"
              "run(['daemon', '--config', sys.argv[1]])\n")
    done = subprocess.run([sys.executable, "-c", script, str(config)], capture_output=True, text=True, env=env(),
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stderr.splitlines()[-1])["error"]["code"] == "invalid_config"
