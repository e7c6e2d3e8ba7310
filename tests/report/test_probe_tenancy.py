"""Probe runs are tenant-scoped end to end: `verdict probes run --data-dir D --tenant T` (a real process)
writes under D/probes/tenant=T/, and each tenant's `verdict report` (a real process) shows its own runs only.
Runs left un-scoped directly in D/probes/ (written before runs were tenant-scoped) are shown in no report,
which says once how to assign them; a bad tenant id is a closed error that runs and writes nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.cli import closed_error, env
from tests.probes.scripted import MINI_YAML
from verdict.cli_errors import EXIT_CODES
from verdict.probes.artifact import load_artifact
from verdict_daemon.errors import DaemonError
from verdict_daemon.report.panels import probe_panel

SCRIPTED = "tests.probes.scripted"
# The target model names tell the two tenants' runs apart on a page.
ACME_TARGET, UMBRELLA_TARGET = "scripted/target", "scripted/bad-target"
UNASSIGNED_NOTE = "probe-run artifact(s) directly in probes/ of the data dir belong to no tenant"


def verdict(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verdict_daemon.cli", *map(str, args)], capture_output=True,
                          text=True, env=env(), timeout=120)


def probes_run(suite: Path, target: str, *args: str | Path) -> subprocess.CompletedProcess:
    return verdict("probes", "run", "--suite", suite, "--target-model", f"{SCRIPTED}:{target}",
                   "--judge-model", f"{SCRIPTED}:JUDGE_MODEL", *args)


def written(done: subprocess.CompletedProcess) -> Path:
    """The artifact `verdict probes run --data-dir` reports on stderr."""
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("probes: wrote ")]
    return Path(line.removeprefix("probes: wrote "))


def shown(data: Path, tenant: str, given=()) -> list[str]:
    """The artifact names on `tenant`'s probe panel (the report's own panel builder, in process: fast)."""
    return [row[0].split(",")[0] for row in probe_panel(list(given), data / "probes", tenant).rows]


def report_page(data: Path, tenant: str, out: Path) -> str:
    done = verdict("report", "--data-dir", data, "--tenant", tenant, "--out", out, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tenant"] == tenant
    return out.read_text()


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("suite") / "mini.yaml"
    path.write_text(MINI_YAML)
    return path


@pytest.fixture(scope="module")
def runs(lake, suite, tmp_path_factory):
    """A copy of the report lake with one CLI run per tenant: acme's target passes (also written with --out,
    next to the data dir), umbrella's caves."""
    data = tmp_path_factory.mktemp("tenancy") / "data"
    shutil.copytree(lake.data_dir, data)
    acme = probes_run(suite, "GOOD_TARGET", "--data-dir", data, "--tenant", "acme", "--out", data.parent / "ci.json")
    umbrella = probes_run(suite, "BAD_TARGET", "--data-dir", data, "--tenant", "umbrella")
    assert (acme.returncode, umbrella.returncode) == (0, 1), (acme.stderr, umbrella.stderr)
    return data, written(acme), written(umbrella)


@pytest.fixture
def data(runs, tmp_path) -> Path:
    """A private copy of `runs`' data dir, for tests that add or move files."""
    copy = tmp_path / "data"
    shutil.copytree(runs[0], copy)
    return copy


def test_the_cli_writes_each_tenants_run_stamped_under_its_own_directory(runs):
    data, acme, umbrella = runs
    assert acme.parent == data / "probes" / "tenant=acme" and umbrella.parent == data / "probes" / "tenant=umbrella"
    assert sorted(p.name for p in (data / "probes").iterdir()) == ["tenant=acme", "tenant=umbrella"]
    assert (load_artifact(acme).tenant, load_artifact(acme).target_model) == ("acme", ACME_TARGET)
    assert (load_artifact(umbrella).tenant, load_artifact(umbrella).target_model) == ("umbrella", UMBRELLA_TARGET)
    ci = load_artifact(data.parent / "ci.json")  # --tenant stamps the --out copy of the same run too
    assert (ci.tenant, ci.run_id) == ("acme", load_artifact(acme).run_id)


def test_each_tenants_report_shows_only_its_own_runs(runs, tmp_path):
    data, acme, umbrella = runs
    acme_page = report_page(data, "acme", tmp_path / "acme.html")
    umbrella_page = report_page(data, "umbrella", tmp_path / "umbrella.html")
    assert f"{ACME_TARGET} / scripted/judge" in acme_page and UMBRELLA_TARGET not in acme_page
    assert f"{UMBRELLA_TARGET} / scripted/judge" in umbrella_page and ACME_TARGET not in umbrella_page
    assert UNASSIGNED_NOTE not in acme_page + umbrella_page
    assert (shown(data, "acme"), shown(data, "umbrella"), shown(data, "globex")) == ([acme.name], [umbrella.name], [])
    globex = probe_panel([], data / "probes", "globex")
    assert globex.empty_reason is not None
    assert globex.empty_reason.startswith("No probe results:") and "probes/tenant=globex/" in globex.empty_reason


def test_an_unscoped_run_is_shown_in_no_report_and_the_note_says_how_to_assign_it(data, runs, tmp_path):
    document = json.loads(runs[1].read_text())
    del document["tenant"]  # as written before runs were tenant-scoped
    document["target_model"] = "legacy/target"
    (data / "probes" / "old-run.json").write_text(json.dumps(document))
    page = report_page(data, "acme", tmp_path / "acme.html")
    assert "legacy/target" not in page and f"{ACME_TARGET} / scripted/judge" in page
    assert page.count(UNASSIGNED_NOTE) == 1 and "mv DATA_DIR/probes/*.json DATA_DIR/probes/tenant=acme/" in page
    for tenant, runs_shown in (("acme", [runs[1].name]), ("umbrella", [runs[2].name]), ("globex", [])):
        panel = probe_panel([], data / "probes", tenant)
        assert shown(data, tenant) == runs_shown  # never old-run.json
        assert (panel.note or panel.empty_reason or "").count(UNASSIGNED_NOTE) == 1
        assert f"mv DATA_DIR/probes/*.json DATA_DIR/probes/tenant={tenant}/`." in (panel.note or panel.empty_reason or "")
    # Following the note assigns the run to acme, and to acme only.
    shutil.move(data / "probes" / "old-run.json", data / "probes" / "tenant=acme" / "old-run.json")
    # (it started after acme's own run of the same series, so it is now acme's latest)
    assert (shown(data, "acme"), shown(data, "umbrella")) == (["old-run.json"], [runs[2].name])
    assert probe_panel([], data / "probes", "acme").note is None


@pytest.mark.parametrize(("tenant_args", "code", "message"), [
    (["--tenant", "Acme Corp"], "invalid_tenant", "--tenant: invalid tenant id 'Acme Corp'"),
    (["--tenant", "../umbrella"], "invalid_tenant", "--tenant: invalid tenant id '../umbrella'"),
    (["--tenant", ""], "tenant_required", "--data-dir needs --tenant"),
    ([], "tenant_required", "--data-dir needs --tenant"),
])
def test_a_bad_or_missing_tenant_is_a_tenant_error_and_nothing_runs_or_is_written(suite, tmp_path, tenant_args,
                                                                                   code, message):
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "ci.json"
    done = probes_run(suite, "GOOD_TARGET", "--data-dir", data, "--out", out, *tenant_args)
    assert (done.returncode, done.stdout) == (EXIT_CODES[code], ""), done.stderr  # no table: no probe ran
    error = closed_error(done.stderr)
    assert error["code"] == code and message in error["message"], error
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert list(data.iterdir()) == [] and not out.exists()


def test_an_out_file_stays_the_callers_own_without_a_tenant(suite, tmp_path):
    out = tmp_path / "ci.json"
    done = probes_run(suite, "GOOD_TARGET", "--out", out)
    assert done.returncode == 0, done.stderr
    assert load_artifact(out).tenant is None and json.loads(out.read_text())["tenant"] is None
    assert [p.name for p in tmp_path.iterdir()] == ["ci.json"]


def test_another_tenants_run_given_explicitly_is_refused(runs, tmp_path):
    data, acme, umbrella = runs
    store = data / "probes"
    for given, message in ((store / "tenant=umbrella", "only probes/tenant=acme/ belongs to tenant 'acme'"),
                           (umbrella, "only probes/tenant=acme/ belongs to tenant 'acme'"),
                           (store, "only probes/tenant=acme/ belongs to tenant 'acme'")):
        with pytest.raises(DaemonError) as error:
            shown(data, "acme", [given])
        assert error.value.code == "invalid_config" and message in error.value.message
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    copied = shutil.copy(umbrella, elsewhere / "u.json")  # stamped umbrella, outside the store
    with pytest.raises(DaemonError, match=r"u.json: the run belongs to tenant 'umbrella', not 'acme'"):
        shown(data, "acme", [copied])
    panel = probe_panel([elsewhere], store, "acme")
    assert panel.rows == () and "1 run(s) in the probe directory belong to another tenant" in (panel.empty_reason or "")
    shutil.copy(umbrella, store / "tenant=acme" / "planted.json")  # a stamped copy in the wrong directory
    try:
        panel = probe_panel([], store, "acme")
    finally:
        (store / "tenant=acme" / "planted.json").unlink()
    assert [row[0].split(",")[0] for row in panel.rows] == [acme.name]
    assert panel.note == "1 run(s) in the probe directory belong to another tenant and are not shown."
    assert shown(data, "acme", [store / "tenant=acme"]) == [acme.name]


def test_a_data_dir_whose_probe_store_cannot_be_written_is_a_storage_error(suite, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "probes").write_text("not a directory")
    done = probes_run(suite, "GOOD_TARGET", "--data-dir", data, "--tenant", "acme")
    error = closed_error(done.stderr)
    assert done.returncode == 2 and error["code"] == "storage_error", done.stderr
    assert error["message"].startswith(f"--data-dir {data}: cannot write the run (")
    assert [p.name for p in data.iterdir()] == ["probes"] and "Traceback" not in done.stderr
