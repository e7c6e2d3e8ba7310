"""The demo with a broken judge on the real server (issue 21 item 7): the daemon's judge is refused on
every call, so the demo must stop after its no-progress watchdog with the judge's error (the server's
reason, classified as a configuration error, not an outage) and a hint: not hang, not report
`provider_unavailable`. The real collector, daemon and app processes; only the watchdog time is shortened."""

from __future__ import annotations

import json
import re

from tests.daemon.cli import REPO
from verdict_daemon.cli import main as verdict
from verdict_demo import orchestrator
from verdict_demo.scenario import MIN_DAYS, MIN_PER_DAY

STALL_SECONDS = 20.0  # the demo's watchdog (180 s by default), shortened to keep the tier short


def test_the_demo_stops_with_the_judges_error_and_a_hint_when_the_server_refuses_the_judge(
        llama_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(orchestrator, "STALL_TIMEOUT", STALL_SECONDS)
    # The daemon process inherits these: the judge model object is importable from the repo root and
    # reaches the tier's server, which refuses a parameter it sends with every call.
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("OPENAI_BASE_URL", llama_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    monkeypatch.setenv("VERDICT_JUDGE_MODEL", "tests.realmodel.models:refused_parameter_model")

    code = verdict(["demo", "--data-dir", str(tmp_path / "demo"), "--days", str(MIN_DAYS), "--per-day",
                    str(MIN_PER_DAY)])

    stderr = capsys.readouterr().err
    assert code == 2, stderr
    envelope = json.loads(stderr.strip().splitlines()[-1])["error"]  # the one error envelope (docs/cli.md)
    assert envelope["code"] == "component_failed", envelope
    error = envelope["message"]
    assert error.startswith(f"verdict-daemon made no progress for {STALL_SECONDS:g} s (usable judgments: 0 of "), error
    last_error = re.search(r"the judge's last error: \[(\w+)\] (.*?)\. Hint: ", error)
    assert last_error, error
    assert last_error.group(1) == "model_config_error", error  # a refusal, not an outage
    assert "frequency_penalty" in last_error.group(2), error  # the server's reason reaches the operator
    assert "Hint: check the judge: VERDICT_JUDGE_MODEL" in error
    assert "Traceback" not in stderr
