"""verdict.toml validation: precise field paths and reasons, secrets only from the environment."""

from __future__ import annotations

import pytest

from verdict_daemon.config import load_config, parse_config
from verdict_daemon.errors import DaemonError

BASE = {"data_dir": "data", "tenants": [{"id": "acme"}],
        "evaluators": [{"name": "quality", "kind": "rubric", "model": "openai/gpt-4o-mini"}]}


def _error(doc: dict) -> str:
    with pytest.raises(DaemonError) as err:
        parse_config(doc)
    assert err.value.code == "invalid_config"
    return err.value.message


@pytest.mark.parametrize(("patch", "message"), [
    ({"tenants": [{"id": "Bad Tenant"}]}, "tenants[0].id: invalid tenant id 'Bad Tenant'"),
    ({"tenants": []}, "tenants: Tuple should have at least 1 item"),
    ({"drift": {"alpha": 1.5}}, "drift.alpha: Input should be less than 1"),
    ({"drift": {"current_window_hours": 168}},
     "drift: small_cell_weeks (1) must span more than the alert period (current_window_hours = 168); 0 turns it off"),
    ({"judging": {"concurrency": 0}}, "judging.concurrency: Input should be greater than or equal to 1"),
    ({"schedules": {"drift": {"cron": "61 * * * *"}}}, "schedules.drift: invalid cron expression '61 * * * *'"),
    ({"schedules": {"judge": {"interval_seconds": 5, "cron": "* * * * *"}}},
     "schedules.judge: give exactly one of interval_seconds or cron"),
    ({"evaluators": [{"name": "q", "kind": "graph"}]}, "evaluators[0]: kind 'graph' needs 'graph'"),
    ({"evaluators": [{"name": "q", "kind": "graph", "graph": "not a target"}]},
     "evaluators[0]: graph must look like 'package.module:attribute'"),
    ({"evaluators": [{"name": "q", "kind": "ensemble", "models": ["openai/a"]}]},
     "evaluators[0]: an ensemble needs at least two models"),
    ({"evaluators": [{"name": "q", "kind": "rubric", "model": "openai/a", "api_key": "sk-live-123"}]},
     "evaluators[0].api_key: unknown field (put secrets in environment variables, not in the file)"),
    ({"alerts": {"webhook_url": "ftp://x"}}, "alerts.webhook_url: webhook_url must start with http:// or https://"),
    ({"tenants": [{"id": "acme"}, {"id": "acme"}]}, "duplicate name(s) ['acme']"),
])
def test_invalid_configs_name_the_field_and_the_reason(patch, message):
    text = _error({**BASE, **patch})
    assert message in text
    assert "sk-live-123" not in text  # a secret put in the file is never echoed


def test_relative_data_dir_resolves_against_the_config_file(tmp_path):
    path = tmp_path / "verdict.toml"
    path.write_text('data_dir = "lake"\n[[tenants]]\nid = "acme"\n[[evaluators]]\nname = "q"\nkind = "rubric"\n'
                    'model = "openai/gpt-4o-mini"\nrubric_file = "rubrics/support.yaml"\n')
    config = load_config(path)
    assert config.data_dir == tmp_path / "lake"
    assert config.evaluators[0].rubric_file == tmp_path / "rubrics" / "support.yaml"
    assert config.schedules.drift.cron and config.judging.max_attempts == 3


def test_unreadable_or_malformed_files_are_invalid_config(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("data_dir = [unclosed")
    for path in (bad, tmp_path / "missing.toml"):
        with pytest.raises(DaemonError) as err:
            load_config(path)
        assert err.value.code == "invalid_config" and str(path) in err.value.message


def test_webhook_token_comes_from_the_named_environment_variable(monkeypatch):
    config = parse_config({**BASE, "alerts": {"webhook_url": "http://127.0.0.1:1/x", "token_env": "HOOK_TOKEN"}})
    monkeypatch.delenv("HOOK_TOKEN", raising=False)
    with pytest.raises(DaemonError) as err:
        config.alerts.token()
    assert err.value.code == "invalid_config" and "HOOK_TOKEN is not set" in err.value.message
    monkeypatch.setenv("HOOK_TOKEN", "s3cret")
    assert config.alerts.token() == "s3cret" and "s3cret" not in repr(config)


def test_the_documented_example_config_is_valid():
    import tomllib
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "daemon.md").read_text()
    example = tomllib.loads(doc.split("```toml\n", 1)[1].split("```", 1)[0])
    config = parse_config(example)
    assert [(e.kind, e.rubric, e.trajectory) for e in config.evaluators] == [
        ("rubric", None, False), ("rubric", "verdict-tool-use", True), ("ensemble", None, False), ("graph", None, False)]
    assert [(s.name, s.evaluations, s.scale) for s in config.imported_evaluations] == [
        ("support-qa", ("resolved",), "label")]
    assert config.judging.budget.max_cost_usd == 25.0 and config.alerts.token_env == "VERDICT_WEBHOOK_TOKEN"
