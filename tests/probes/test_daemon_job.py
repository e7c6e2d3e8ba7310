"""Probes in the daemon: the [probes] section (validated at start, paths relative to verdict.toml) and the
scheduled `probes` job writing one copy of each run per configured tenant under probes/tenant=<id>/, through
`Daemon.run()` with a real scheduler."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest

from tests.probes.scripted import MINI_YAML
from verdict.probes.artifact import load_artifact, load_history
from verdict_daemon.config import Schedules, load_config, parse_config
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.daemon import Daemon

SCRIPTED = "tests.probes.scripted"


def toml_value(value) -> str:
    return json.dumps(value) if not isinstance(value, dict) else \
        "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"


def write_config(tmp_path, tenants=("acme",), **probes) -> tuple:
    """verdict.toml with every built-in job disabled and a [probes] section; returns (config, data dir)."""
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "mini.yaml").write_text(MINI_YAML)
    section = {"suite": "suites/mini.yaml", "target_model": f"{SCRIPTED}:GOOD_TARGET",
               "judge_model": f"{SCRIPTED}:JUDGE_MODEL", "schedule": {"interval_seconds": 3600}, **probes}
    lines = ['data_dir = "data"', *(line for t in tenants for line in ("[[tenants]]", f'id = "{t}"')),
             "[[evaluators]]", 'name = "quality"', 'kind = "rubric"', f'model = "{SCRIPTED}:JUDGE_MODEL"', "[schedules]"]
    lines += [f"{name} = {{ interval_seconds = 3600, enabled = false }}" for name in Schedules.model_fields]
    lines += ["[probes]"] + [f"{key} = {toml_value(value)}" for key, value in section.items()]
    path = tmp_path / "verdict.toml"
    path.write_text("\n".join(lines) + "\n")
    return load_config(path), data


def test_the_probes_job_writes_one_stamped_copy_per_tenant_under_its_tenant_directory(tmp_path):
    config, data = write_config(tmp_path, tenants=("acme", "umbrella"))
    assert config.probes.suite == str(tmp_path / "suites" / "mini.yaml")  # relative to verdict.toml
    Daemon(config).probes()
    store = data / "probes"
    assert sorted(p.name for p in store.iterdir()) == ["tenant=acme", "tenant=umbrella"]  # nothing un-scoped
    for tenant in ("acme", "umbrella"):
        (artifact,) = (store / f"tenant={tenant}").glob("mini-1.0-*.json")
        run = load_artifact(artifact)
        assert run.tenant == tenant and run.gate.passed and run.score.pass_rate == 1.0
        assert run.target_model == "scripted/target"


def test_the_scheduler_runs_the_probes_job(tmp_path):
    config, _ = write_config(tmp_path, out_dir="probe-runs", min_pass_rate=0.5)
    daemon = Daemon(config)
    thread = threading.Thread(target=daemon.run)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "probe-runs" / "tenant=acme").glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        daemon.request_stop()
        thread.join(timeout=60)
    history = load_history(tmp_path / "probe-runs" / "tenant=acme")
    assert len(history.runs) == 1 and history.runs[0].min_pass_rate == 0.5 and not thread.is_alive()
    assert history.runs[0].tenant == "acme" and list((tmp_path / "probe-runs").glob("*.json")) == []


def test_a_run_with_execution_errors_is_logged_with_probe_error_and_kept(tmp_path, caplog):
    config, data = write_config(tmp_path, target_model=f"{SCRIPTED}:FLAKY_TARGET")
    with caplog.at_level(logging.INFO, logger="verdict.daemon"):
        Daemon(config).probes()
    assert "job=probes tenant=acme error=probe_error: 1 of 4 probe(s) could not be executed or judged" in caplog.text
    (artifact,) = (data / "probes" / "tenant=acme").glob("*.json")
    assert load_artifact(artifact).errors == 1


@pytest.mark.parametrize(("probes", "code", "message"), [
    ({"suite": "nonesuch"}, "invalid_suite", "unknown suite 'nonesuch'"),
    ({"suite": "suites/missing.yaml"}, "invalid_suite", "cannot read the suite"),
    ({"target_model": "llama3"}, "invalid_config", "probes.target_model 'llama3': unknown model"),
])
def test_a_bad_probes_section_stops_the_daemon_at_start(tmp_path, probes, code, message):
    config, _ = write_config(tmp_path, **probes)
    with pytest.raises(DaemonError) as error:
        Daemon(config)
    assert error.value.code == code and message in error.value.message


def test_the_probes_section_is_validated_with_the_config(tmp_path):
    base = {"data_dir": str(tmp_path), "tenants": [{"id": "acme"}],
            "evaluators": [{"name": "q", "kind": "rubric", "model": f"{SCRIPTED}:JUDGE_MODEL"}]}
    with pytest.raises(DaemonError, match=r"probes.min_pass_rate: Input should be less than or equal to 1"):
        parse_config({**base, "probes": {"target_model": "m", "judge_model": "j", "min_pass_rate": 2}})
    with pytest.raises(DaemonError, match=r"probes.judge_model: Field required"):
        parse_config({**base, "probes": {"target_model": "m"}})
    assert parse_config(base).probes is None


def test_a_tenant_whose_directory_cannot_be_written_does_not_stop_the_others(tmp_path, caplog):
    config, data = write_config(tmp_path, tenants=("acme", "umbrella"))
    (data / "probes").mkdir()
    (data / "probes" / "tenant=acme").write_text("not a directory")
    with caplog.at_level(logging.INFO, logger="verdict.daemon"):
        Daemon(config).probes()
    assert "job=probes tenant=acme error=storage_error: cannot write to" in caplog.text
    (artifact,) = (data / "probes" / "tenant=umbrella").glob("*.json")
    assert load_artifact(artifact).tenant == "umbrella"
    assert sorted(p.name for p in (data / "probes").iterdir()) == ["tenant=acme", "tenant=umbrella"]


def test_the_probes_job_refuses_an_invalid_tenant_id(tmp_path):
    from verdict_daemon.service.probe_job import ProbeJob

    config, data = write_config(tmp_path)
    with pytest.raises(DaemonError) as error:
        ProbeJob(config.probes, data, ("acme", "../umbrella"))
    assert error.value.code == "tenant_required" and "invalid tenant id '../umbrella'" in error.value.message
