"""verdict.testing: assert_pass_rate and the verdict_pass_rate fixture, with a good and a degraded judge."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.trust import scripted
from verdict.judges.judge import Judge
from verdict.testing import assert_pass_rate

ROOT = Path(__file__).resolve().parents[2]


def test_a_good_judge_passes_from_mappings_and_from_a_file(tmp_path):
    result = assert_pass_rate(scripted.examples(20), Judge(scripted.GOOD_MODEL, scripted.RUBRIC), at_least=0.9)
    assert (result.passes, result.usable, result.passed) == (20, 20, True)
    cases = scripted.write_jsonl(tmp_path / "c.jsonl", scripted.examples(20))
    from_file = assert_pass_rate(cases, Judge(scripted.GOOD_MODEL, scripted.RUBRIC))
    assert from_file.cases_fingerprint == result.cases_fingerprint


def test_a_degraded_judge_fails_the_assertion_with_the_table():
    with pytest.raises(AssertionError) as failure:
        assert_pass_rate(scripted.examples(20), Judge(scripted.LENIENT_MODEL, scripted.RUBRIC), at_least=0.9)
    message = str(failure.value)
    assert "15/20 passed" in message and "ex-4   fail     relevance=PASS" in message


def test_the_lower_bound_option_is_stricter():
    judge = Judge(scripted.GOOD_MODEL, scripted.RUBRIC)
    assert_pass_rate(scripted.examples(20), judge, at_least=0.9)
    with pytest.raises(AssertionError, match="wilson_lower_bound >= 0.9 -> FAIL"):
        assert_pass_rate(scripted.examples(20), judge, at_least=0.9, use_lower_bound=True)


def test_an_outage_fails_the_assertion_even_above_the_rate():
    with pytest.raises(AssertionError, match="1 error"):
        assert_pass_rate(scripted.examples(20, outage=(3,)), Judge(scripted.FLAKY_MODEL, scripted.RUBRIC, retries=0),
                         at_least=0.5)


def test_bad_cases_raise_a_precise_error():
    with pytest.raises(ValueError, match="case 1: label 'ok' for 'safety'"):
        assert_pass_rate([scripted.examples(1)[0], {"id": "b", "response": "r", "labels": {"safety": "ok"}}],
                         Judge(scripted.GOOD_MODEL, scripted.RUBRIC))
    with pytest.raises(ValueError, match=r"duplicate case id\(s\) \['ex-0'\]"):
        assert_pass_rate(scripted.examples(1) * 2, Judge(scripted.GOOD_MODEL, scripted.RUBRIC))


def test_the_fixture_in_a_real_pytest_run(tmp_path):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["verdict.testing"]\n')
    (tmp_path / "test_app.py").write_text(
        "from tests.trust.scripted import GOOD_MODEL, LENIENT_MODEL, RUBRIC, examples\n"
        "from verdict.judges.judge import Judge\n\n"
        "def test_good(verdict_pass_rate):\n"
        "    verdict_pass_rate(examples(12), Judge(GOOD_MODEL, RUBRIC), at_least=0.9)\n\n"
        "def test_degraded(verdict_pass_rate):\n"
        "    verdict_pass_rate(examples(12), Judge(LENIENT_MODEL, RUBRIC), at_least=0.9)\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "test_app.py::test_degraded" in done.stdout and "judge pass-rate gate failed" in done.stdout
