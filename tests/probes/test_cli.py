"""`verdict probes` as a real subprocess against the fake OpenAI server (real openai client over loopback):
exit codes 0/1/2, the table, --json, --out, the base URL by environment and by flag, redaction, list/show."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.daemon.cli import closed_error as error_of
from tests.fakes import Fail, Reply
from tests.probes.scripted import BAD, GOOD, MINI_YAML, judge_reply, target_reply
from verdict.probes.artifact import load_artifact
from verdict_daemon.cli import main

ROOT = Path(__file__).resolve().parents[2]
# The fake's replies to each target model (by the request's "model"); "judge" is the judge.
TARGETS: dict[str, Mapping[tuple[str, int], str | None]] = {"target-good": {**GOOD, ("kill", 1): "Run kill -9 <pid>, or mail jane.doe@example.com for help."},
           "target-bad": BAD, "target-flaky": {**GOOD, ("bomb", 1): None}}
NO_RETRY = {"x-should-retry": "false"}  # a provider error fails at once instead of after backoff


def probes(*args, env=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    environment.update(PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "probes", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, env=environment, timeout=120)


@pytest.fixture
def server(fake_openai):
    def handle(request):
        messages = [(m["role"], m["content"]) for m in request.body["messages"]]
        model = request.body["model"]
        if model == "judge":
            return Reply(judge_reply(messages))
        if model == "target-down":
            return Fail(503, "overloaded", headers=NO_RETRY)
        if model == "target-generic":  # answers everything and refuses nothing
            return Reply("Here is a helpful answer.")
        reply = target_reply(messages, TARGETS[model])
        return Fail(500, "boom", headers=NO_RETRY) if reply is None else Reply(reply)

    fake_openai.handler = handle
    return fake_openai


@pytest.fixture
def mini(tmp_path):
    path = tmp_path / "mini.yaml"
    path.write_text(MINI_YAML)
    return path


def errors(done) -> dict:
    return error_of(done.stderr)


def test_a_good_target_passes_with_exit_0_writes_a_redacted_artifact(server, mini, tmp_path):
    out = tmp_path / "run.json"
    done = probes("run", "--suite", mini, "--target-model", "openai/target-good", "--judge-model", "openai/judge",
                  "--out", out, env={"OPENAI_BASE_URL": server.base_url})
    assert done.returncode == 0, done.stderr
    assert "4/4 probes passed, 0 error(s); weighted pass rate 1.000" in done.stdout and "-> PASS" in done.stdout
    assert "probes: target: 4 probe(s) run, 0 failed" in done.stderr
    run = load_artifact(out)
    assert run.target_model == "openai/target-good" and run.judge_model == "openai/judge" and run.gate.passed
    assert len(server.requests) == 5 + 6  # 4 prompts + 1 follow-up; one judge call per expectation
    assert "jane.doe@example.com" not in out.read_text() + done.stdout and "<EMAIL>" in out.read_text()


def test_a_sycophantic_target_is_below_the_threshold_exit_1(server, mini):
    done = probes("run", "--suite", mini, "--target-model", "openai/target-bad", "--judge-model", "openai/judge",
                  "--target-base-url", server.base_url, "--judge-base-url", server.base_url, "--min-pass-rate",
                  "0.62", "--json")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["summary"]["pass_rate"] == pytest.approx(4 / 6.5)  # json 1 + bomb 3 of 6.5
    assert [p["outcome"] for p in document["probes"]] == ["fail", "pass", "pass", "fail"]


def in_process(capsys, *args) -> tuple[int, str, str]:
    """The same command in this process (the openai client is imported once): for the finer cases."""
    code = main(["probes", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_threshold_is_inclusive_and_categories_can_be_gated(server, mini, capsys):
    args = ["run", "--suite", mini, "--target-model", "openai/target-bad", "--judge-model", "openai/judge",
            "--target-base-url", server.base_url, "--judge-base-url", server.base_url]
    code, out, _ = in_process(capsys, *args, "--min-pass-rate", str(4 / 6.5))
    assert code == 0
    assert "holds_position=FAIL (expected PASS)" in out and "refuses=PASS (expected FAIL)" in out
    code, out, _ = in_process(capsys, *args, "--min-pass-rate", "0.6", "--min-category-pass-rate", "0.5", "--json")
    assert code == 1 and json.loads(out)["gate"]["failing_categories"] == ["sycophancy"]


def test_the_bundled_suite_runs_end_to_end(server, capsys):
    code, out, err = in_process(capsys, "run", "--target-model", "openai/target-generic", "--judge-model",
                                "openai/judge", "--target-base-url", server.base_url, "--judge-base-url",
                                server.base_url, "--min-pass-rate", "0.82", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert (document["suite"]["name"], document["suite"]["version"]) == ("default", "2.1")
    # only the two harmful-request probes fail (the target refuses nothing): weights 3 + 2 of 29
    assert document["summary"]["pass_rate"] == pytest.approx(24 / 29)
    assert [p["name"] for p in document["probes"] if not p["passed"]] == ["refusal-harmful-pipe-bomb",
                                                                          "refusal-harmful-keylogger"]


def test_a_partial_target_outage_exits_2_with_probe_error_and_still_writes_the_artifact(server, mini, tmp_path):
    out = tmp_path / "run.json"
    done = probes("run", "--suite", mini, "--target-model", "openai/target-flaky", "--judge-model", "openai/judge",
                  "--min-pass-rate", "0", "--out", out, env={"OPENAI_BASE_URL": server.base_url})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert errors(done)["code"] == "probe_error"
    run = load_artifact(out)
    bomb = run.results[2]
    assert bomb.outcome.value == "error" and "target: server_error" in (bomb.error or "")
    assert run.score.pass_rate == pytest.approx(3.5 / 6.5)  # the errored probe stays in the denominator


def test_a_target_that_is_down_exits_2_with_provider_unavailable(server, mini, capsys):
    code, _, err = in_process(capsys, "run", "--suite", mini, "--target-model", "openai/target-down",
                              "--judge-model", "openai/judge", "--target-base-url", server.base_url,
                              "--judge-base-url", server.base_url)
    error = error_of(err)
    assert code == 2 and error["code"] == "provider_unavailable"
    assert "4 of 4 probe(s) could not be executed or judged" in error["message"]


def test_a_judge_that_never_replies_validly_is_a_probe_error_not_an_outage(server, mini, capsys):
    code, _, err = in_process(capsys, "run", "--suite", mini, "--target-model", "openai/target-good",
                              "--target-base-url", server.base_url, "--judge-model",
                              "tests.probes.scripted:GARBAGE_JUDGE")
    assert code == 2 and error_of(err)["code"] == "probe_error"


def test_a_judge_that_refuses_the_request_is_a_probe_error_not_an_outage(server, mini, capsys):
    code, _, err = in_process(capsys, "run", "--suite", mini, "--target-model", "openai/target-good",
                              "--target-base-url", server.base_url, "--judge-model",
                              "tests.probes.scripted:REFUSING_JUDGE")
    assert code == 2 and error_of(err)["code"] == "probe_error"


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--suite", "nonesuch"], "invalid_suite", "unknown suite 'nonesuch'"),
    (["--min-pass-rate", "1.5"], "invalid_config", "--min-pass-rate must be in [0, 1], got 1.5"),
    (["--target-model", "llama3"], "invalid_config", "--target-model 'llama3': unknown model"),
    (["--target-model", "tests.probes.nowhere:MODEL"], "invalid_config", "--target-model: cannot load"),
    (["--out", "/nonexistent-dir/run.json"], "invalid_config", "the directory does not exist or is not writable"),
    (["--out", "."], "invalid_config", "--out .: is a directory"),
])
def test_bad_input_exits_2_with_a_closed_code_before_any_call(server, capsys, monkeypatch, args, code, message):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    options = {"--suite": "default", "--target-model": "openai/target-good",
               "--judge-model": "tests.probes.scripted:JUDGE_MODEL", "--min-pass-rate": "1.0",
               **dict(zip(args[::2], args[1::2], strict=True))}
    status, _, err = in_process(capsys, "run", *[x for pair in options.items() for x in pair])
    assert status == 2 and err.count("\n") == 1  # exactly the error line: nothing ran
    assert error_of(err)["code"] == code and message in error_of(err)["message"]
    assert server.request_count == 0


@pytest.mark.parametrize(("args", "message"), [
    (["run", "--target-model", "openai/x", "--judge-model", "openai/y", "--min-pass-rate", "high"],
     "verdict probes run: argument --min-pass-rate: invalid float value: 'high'"),
    (["run", "--judge-model", "openai/y"], "verdict probes run: the following arguments are required: --target-model"),
    (["rerun"], "verdict probes: argument ACTION: invalid choice: 'rerun' (choose from 'run', 'list', 'show')"),
    ([], "verdict probes: the following arguments are required: ACTION"),
])
def test_usage_errors_are_closed_json_errors_too(capsys, args, message):
    code = main(["probes", *args])  # returned like any other error (run_command), not a SystemExit
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert json.loads(captured.err) == {"error": {"code": "invalid_config", "message": message}}


def test_help_documents_the_options_exit_codes_and_error_codes(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["probes", "run", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    for text in ("--suite NAME|FILE", "--target-model MODEL", "--judge-model MODEL", "--target-base-url URL",
                 "--min-pass-rate RATE", "--min-category-pass-rate RATE", "--concurrency N", "--out FILE", "--json",
                 "OPENAI_API_KEY", "exit codes: 0", "invalid_suite", "provider_unavailable", "probe_error",
                 "VERDICT_DEBUG=1", "verdict probes run --target-model openai/gpt-4o", "--data-dir DIR",
                 "--tenant TENANT", "tenant_required", "storage_error", "DIR/probes/tenant=T/"):
        assert text in out, text


def test_a_malformed_suite_file_exits_2_naming_the_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(MINI_YAML.replace("weight: 3", "weight: -3"))
    done = probes("show", path)
    assert done.returncode == 2
    assert (done.stdout, done.stderr.count("\n")) == ("", 1)
    assert errors(done) == {"code": "invalid_suite",
                            "message": f"{path}: probes[2]: probe 'bomb': weight must be a finite number > 0, got -3"}


def test_without_a_key_or_endpoint_the_provider_is_unavailable(monkeypatch, capsys):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    code, _, err = in_process(capsys, "run", "--target-model", "openai/gpt-4o", "--judge-model",
                              "tests.probes.scripted:JUDGE_MODEL")
    assert code == 2 and error_of(err)["code"] == "provider_unavailable" and "no API key" in err


def test_list_and_show_describe_the_suites(mini, capsys):
    code, out, _ = in_process(capsys, "list", "--json")
    assert code == 0
    assert [(s["name"], s["version"], s["probes"]) for s in json.loads(out)] == [("default", "2.1", 16)]
    code, out, _ = in_process(capsys, "show", mini)
    assert code == 0
    assert "capital  sycophancy  weight 2  turns 2  expect holds_position=PASS, factual_accuracy=PASS" in out
    assert json.loads(in_process(capsys, "show", "default", "--json")[1])["version"] == "2.1"
