"""`verdict gate` as a real subprocess (python -m verdict_daemon.cli gate): exit codes 0/1/2, table, JSON, redaction."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.cli import closed_error
from tests.fakes import Fail, Reply
from tests.trust.scripted import RUBRIC_YAML, examples, reply_for, write_jsonl

ROOT = Path(__file__).resolve().parents[2]


def gate(*args, env=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    environment.update(PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "gate", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env=environment, timeout=120)


@pytest.fixture
def rubric(tmp_path):
    path = tmp_path / "rubric.yaml"
    path.write_text(RUBRIC_YAML)
    return path


@pytest.fixture
def cases(tmp_path):
    rows = examples(20)
    rows[3]["id"] = "case-jane.doe@example.com"  # content in artifacts must be redacted
    return write_jsonl(tmp_path / "cases.jsonl", rows)


def test_a_good_judge_passes_with_exit_0_and_writes_json(tmp_path, cases, rubric):
    out = tmp_path / "result.json"
    done = gate("--cases", cases, "--judge-model", "tests.trust.scripted:GOOD_MODEL", "--min-pass-rate", "0.9",
                "--rubric", rubric, "--out", out)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["passed"] is True and (result["passes"], result["usable"], result["errors"]) == (20, 20, 0)
    assert result["gated_on"] == "pass_rate" and result["min_pass_rate"] == 0.9
    assert "20/20 passed" in done.stdout and "-> PASS" in done.stdout
    assert "gate: 20/20 cases judged" in done.stderr
    assert "jane.doe@example.com" not in done.stdout + out.read_text() and "<EMAIL>" in done.stdout


def test_a_degraded_judge_fails_with_exit_1_and_the_table_names_the_cases(cases, rubric):
    done = gate("--cases", cases, "--judge-model", "tests.trust.scripted:LENIENT_MODEL", "--min-pass-rate", "0.9",
                "--rubric", rubric, "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert (result["passes"], result["usable"], result["passed"]) == (15, 20, False)
    assert {r["id"] for r in result["results"] if r["outcome"] == "fail"} == {f"ex-{n}" for n in range(0, 20, 4)}
    assert all(r["mismatches"] == ["relevance"] for r in result["results"] if r["outcome"] == "fail")


def test_the_lower_bound_gate_is_stricter(cases, rubric):
    args = ["--cases", cases, "--judge-model", "tests.trust.scripted:GOOD_MODEL", "--rubric", rubric, "--json"]
    plain = gate(*args, "--min-pass-rate", "0.9")
    strict = gate(*args, "--min-pass-rate", "0.9", "--use-lower-bound")
    assert (plain.returncode, strict.returncode) == (0, 1)  # 20/20: rate 1.0, Wilson lower bound ~0.84
    assert json.loads(strict.stdout)["gated_on"] == "wilson_lower_bound"


def test_unlabelled_cases_pass_only_when_every_dimension_passes(tmp_path, rubric):
    rows = [{"id": f"u{n}", "response": "refunds take 5 days" + (" off-topic" if n == 0 else "")} for n in range(4)]
    done = gate("--cases", write_jsonl(tmp_path / "u.jsonl", rows), "--judge-model",
                "tests.trust.scripted:GOOD_MODEL", "--rubric", rubric, "--min-pass-rate", "0.75", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [r["outcome"] for r in result["results"]] == ["fail", "pass", "pass", "pass"]


def test_judge_errors_exit_2_with_judge_error(tmp_path, rubric):
    cases = write_jsonl(tmp_path / "c.jsonl", examples(8, outage=(2,)))
    out = tmp_path / "r.json"
    done = gate("--cases", cases, "--judge-model", "tests.trust.scripted:FLAKY_MODEL", "--rubric", rubric,
                "--min-pass-rate", "0.5", "--out", out)
    assert done.returncode == 2
    assert closed_error(done.stderr)["code"] == "judge_error"
    assert json.loads(out.read_text())["errors"] == 1  # the partial result is still written
    assert "Traceback" not in done.stderr


def test_every_call_failing_is_provider_unavailable(cases, rubric):
    done = gate("--cases", cases, "--judge-model", "tests.trust.scripted:DOWN_MODEL", "--rubric", rubric,
                "--min-pass-rate", "0.5")
    assert done.returncode == 2
    assert closed_error(done.stderr)["code"] == "provider_unavailable"


def test_every_call_refused_is_a_judge_error_not_an_outage(cases, rubric):
    done = gate("--cases", cases, "--judge-model", "tests.trust.scripted:REFUSING_MODEL", "--rubric", rubric,
                "--min-pass-rate", "0.5")
    assert done.returncode == 2
    assert closed_error(done.stderr)["code"] == "judge_error"


@pytest.mark.parametrize(("judge_model", "extra", "code", "message"), [
    ("tests.trust.scripted:GOOD_MODEL", ["--min-pass-rate", "1.5"], "invalid_config", "--min-pass-rate"),
    ("tests.trust.scripted:NOT_A_MODEL", [], "invalid_config", "not a verdict Model"),
    ("tests.trust.nowhere:MODEL", [], "invalid_config", "cannot load it"),
    ("mystery/model-x", [], "invalid_config", "unknown model"),
    ("openai/gpt-4o-mini", [], "provider_unavailable", "no API key"),
])
def test_bad_options_exit_2_with_a_closed_code(cases, rubric, judge_model, extra, code, message):
    done = gate("--cases", cases, "--judge-model", judge_model, "--rubric", rubric,
                *(extra or ["--min-pass-rate", "0.9"]))
    assert (done.returncode, done.stdout, done.stderr.count("\n")) == (2, "", 1), done.stderr  # nothing ran
    error = closed_error(done.stderr)
    assert error["code"] == code and message in error["message"]


def test_bad_cases_exit_2_with_invalid_cases(tmp_path, rubric):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "response": "r"}\n{"id": "a", "response": "r"}\n')
    done = gate("--cases", path, "--judge-model", "tests.trust.scripted:GOOD_MODEL", "--rubric", rubric,
                "--min-pass-rate", "0.9")
    assert done.returncode == 2
    assert json.loads(done.stderr) == {"error": {"code": "invalid_cases",
                                                 "message": f"{path}:2: duplicate id 'a' (first on line 1)"}}


def test_a_bad_rubric_file_is_invalid_config(tmp_path, cases):
    rubric = tmp_path / "r.yaml"
    rubric.write_text("name: x\nversion: 1\ndimensions: [{name: Bad Name, description: d}]\n")
    done = gate("--cases", cases, "--judge-model", "tests.trust.scripted:GOOD_MODEL", "--rubric", rubric,
                "--min-pass-rate", "0.9")
    assert done.returncode == 2 and json.loads(done.stderr)["error"]["code"] == "invalid_config"


def test_the_real_openai_client_against_the_fake_server(fake_openai, cases, rubric):
    fake_openai.handler = lambda request: Reply(reply_for(request.body["messages"][-1]["content"]))
    env = {"OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_API_KEY": "test-key"}
    done = gate("--cases", cases, "--judge-model", "openai/gpt-4o-mini", "--rubric", rubric,
                "--min-pass-rate", "1.0", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["passes"] == 20
    assert len(fake_openai.requests_to("/v1/chat/completions")) == 20
    assert fake_openai.last_request.body["model"] == "gpt-4o-mini"


def test_a_provider_outage_on_the_real_client_exits_2(fake_openai, cases, rubric):
    fake_openai.handler = lambda request: Fail(401, "invalid api key")
    env = {"OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_API_KEY": "test-key"}
    done = gate("--cases", cases, "--judge-model", "openai/gpt-4o-mini", "--rubric", rubric,
                "--min-pass-rate", "0.9", env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert closed_error(done.stderr)["code"] == "provider_unavailable"


def test_importing_the_gate_does_not_load_the_daemon():
    """verdict.testing (pytest in apps) imports verdict.gate: the gate is the SDK's, its command the daemon's."""
    from tests.imports import loaded_after

    assert loaded_after("import verdict.gate, verdict.testing", ("verdict_daemon", "verdict_daemon.errors")) == []


def test_a_usage_error_is_the_verdict_cli_json_error():
    """A usage error of `verdict gate` is the dispatcher's closed JSON error."""
    done = gate("--cases", "c.jsonl", "--judge-model", "openai/m", "--min-pass-rate", "high")
    assert (done.returncode, done.stdout) == (2, "")
    assert json.loads(done.stderr) == {"error": {
        "code": "invalid_config", "message": "verdict gate: argument --min-pass-rate: invalid float value: 'high'"}}
